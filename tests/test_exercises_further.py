"""The exercises of "Going further" (chapters 16, 19 and 20): the book's solution passes,
each typical mistake gets its own diagnosis, an unfinished answer is a TODO."""
import itertools
import random
import re

import numpy as np
import pytest
import torch

from revformer.attention import scaled_dot_product_attention
from revformer.exercises import sign_flip
from revformer.exercises.kv_cache import check_kv_step
from revformer.exercises.lens import check_logit_lens
from revformer.exercises.sign_flip import check_sign_flip_p
from revformer.exercises.solutions import ch16, ch19, ch20
from revformer.generate import KVCache
from revformer.model import make_model
from revformer.probes import logit_lens
from revformer.stats import sign_flip_p
from solution_helpers import as_the_books

my_sign_flip_p = as_the_books(ch16.my_sign_flip_p)
my_logit_lens = as_the_books(ch19.my_logit_lens)
my_kv_step = as_the_books(ch20.my_kv_step)


def report(check, capsys, *args, **kwargs):
    ok = check(*args, **kwargs)
    return ok, " ".join(capsys.readouterr().out.split())


def stub(*args):
    raise NotImplementedError("your code here")


@pytest.fixture(scope="module")
def model():
    """A model of the book standing in for a trained one: the checks compare with the package."""
    return make_model(seed=11).eval()


# Chapter 16: the sign-flip p-value


def flip_p(differences, one_sided=None, left_out=None, strict=False, absolute_first=False,
           count=False, denominator=None, doubled=False, observed_abs=True, each_abs=False,
           tolerance=True):
    """The exact two-sided p, right by default; each keyword switches on one typical mistake."""
    d = [float(x) for x in differences]
    if each_abs:
        d = [abs(x) for x in d]
    observed = sum(d)
    tol = 1e-12 * max(1.0, sum(abs(x) for x in d)) if tolerance else 0.0
    patterns = list(itertools.product((1, -1), repeat=len(d)))  # the observed first, its mirror last
    if left_out == "observed":
        patterns = patterns[1:]
    elif left_out == "both":
        patterns = patterns[1:-1]
    hits = 0
    for signs in patterns:
        terms = [s * x for s, x in zip(signs, d)]
        if absolute_first:
            statistic, bar = sum(abs(t) for t in terms), sum(abs(x) for x in d)
        elif one_sided == "upper":
            statistic, bar = sum(terms), observed
        elif one_sided == "observed's side":
            side = 1 if observed >= 0 else -1
            statistic, bar = side * sum(terms), abs(observed)
        else:
            statistic, bar = abs(sum(terms)), abs(observed) if observed_abs else observed
        hits += statistic > bar + tol if strict else statistic >= bar - tol
    if count:
        return hits
    total = {None: 2 ** len(d), "half": 2 ** (len(d) - 1), "the rest": len(patterns)}[denominator]
    return (2 if doubled else 1) * hits / total


def sampled_p(differences, samples=1000, seed=None):
    """Random sign assignments instead of all of them."""
    d = torch.as_tensor(differences, dtype=torch.float64)
    generator = torch.Generator().manual_seed(seed) if seed is not None else None
    signs = torch.randint(0, 2, (samples, d.numel()), generator=generator) * 2 - 1
    return ((signs * d).sum(1).abs() >= d.sum().abs()).double().mean().item()


def test_the_books_sign_flip_solution_passes(capsys):
    ok, out = report(check_sign_flip_p, capsys, my_sign_flip_p)
    assert ok and "all checks passed" in out and "WRONG" not in out
    assert "p = 0.0625, 2 of the 32 sign assignments" in out  # five of five: the floor, 1/16


def with_tensors(differences, tolerance=True):
    d = torch.as_tensor(differences, dtype=torch.float64)
    signs = torch.tensor(list(itertools.product((1.0, -1.0), repeat=d.numel())), dtype=torch.float64)
    tol = 1e-12 * max(1.0, d.abs().sum().item()) if tolerance else 0.0
    return ((signs @ d).abs() >= d.sum().abs() - tol).double().mean()  # a 0-d tensor


def test_a_tensor_answer_passes(capsys):
    assert check_sign_flip_p(with_tensors), capsys.readouterr().out


@pytest.mark.parametrize("mistake, words", [
    (dict(one_sided="upper"), "that is a one-sided p"),
    (dict(one_sided="observed's side"), "that is a one-sided p"),
    (dict(left_out="observed"), "the observed assignment was left out of the count"),
    (dict(left_out="observed", denominator="the rest"),
     "the observed assignment was left out of the count"),
    (dict(left_out="both"), "the observed assignment and its mirror (every sign flipped) were left out"),
    (dict(strict=True), "you counted |sum| > |observed| (strict)"),
    (dict(absolute_first=True), "you added the absolute values"),
    (dict(count=True), "the number of assignments, not their share"),
    (dict(denominator="half"), "you divided by 2^(n-1) = 16"),
    (dict(doubled=True, one_sided="upper"), "you doubled a one-sided p"),
    (dict(doubled=True, one_sided="observed's side"), "you doubled a one-sided p"),
    (dict(observed_abs=False),
     "expected 0.25: you compared |sum| with the observed sum itself, not with its absolute value"),
    (dict(each_abs=True), "expected 0.25: you took the absolute value of each difference before "
                          "flipping the signs: then no assignment's |sum| exceeds the observed sum(|d|), "
                          "and p falls to its floor, 2/2^n = 0.03125"),
])
def test_each_sign_flip_mistake_gets_its_diagnosis(wrong_report, mistake, words):
    assert check_sign_flip_p(lambda differences: flip_p(differences, **mistake)) is False
    assert words in wrong_report()


def test_the_new_diagnoses_name_nothing_else(wrong_report):
    """The observed sum without abs was named "you added the absolute values"; each difference's
    abs, only "16 of the 64 assignments": now each has its own diagnosis, and only it."""
    assert check_sign_flip_p(lambda d: flip_p(d, observed_abs=False)) is False
    assert "you added the absolute values" not in (out := wrong_report())
    assert "4 differences [-1, -0.75, 0.25, -1.5], a list: got p = 1, expected 0.25" in out
    assert check_sign_flip_p(lambda d: flip_p(d, each_abs=True)) is False
    assert "6 differences [1.5, -0.5, 2.25, 0.75, -1, 1.25], a float32 tensor: got p = 0.03125" in (
        out := wrong_report())
    assert "16 of the 64 assignments" not in out


def passed(out):
    """How many cases of a sign-flip report passed."""
    return len(re.findall(r"\bok (?:\d+ differences|differences drawn afresh)", out))


def test_sums_that_tie_only_up_to_rounding_need_a_tolerance(capsys, wrong_report):
    values = sign_flip._NEAR_TIE[0]
    assert sign_flip_p(values) == 54 / 64  # 20 ties with |observed sum| = 0.2 among the 54
    assert flip_p(values, tolerance=False) < sign_flip_p(values)  # rounding breaks some ties
    for without in (lambda d: flip_p(d, tolerance=False), lambda d: with_tensors(d, tolerance=False)):
        assert check_sign_flip_p(without) is False
        out = wrong_report()
        assert "6 differences [0.1, 0.2, -0.3, 0.1, 0.2, -0.1], a list: got p = " in out
        assert "expected 0.8438: you counted" in out and "of the 20 assignments whose |sum| ties" in out
        assert "Compare with a tolerance, |sum| >= |observed sum| - tol" in out
        assert passed(out) == 6  # every fixed case exact in binary passed
    ok, out = report(check_sign_flip_p, capsys, my_sign_flip_p)  # the book's solution has one
    assert ok and "6 differences [0.1, 0.2, -0.3, 0.1, 0.2, -0.1], a list: p = 0.8438, 54 of the 64" in out


def fixed_answers():
    """The p of every case that is the same at each check: what a table of answers can hold."""
    return {tuple(values): sign_flip_p(values) for values, _ in (*sign_flip._CASES, sign_flip._NEAR_TIE)}


def test_a_table_of_the_fixed_cases_answers_fails(wrong_report):
    table = fixed_answers()

    def looked_up(differences):
        return table.get(tuple(float(x) for x in differences), 0.3)  # never k / 2^n, n <= 9

    assert check_sign_flip_p(looked_up) is False
    out = wrong_report()
    assert passed(out) == 7 and "drawn afresh for this check: got p = 0.3" in out
    assert "your function gave the right p on the 7 fixed cases" in out
    assert "does it look p up in a table of the fixed cases' answers?" in out

    def no_default(differences):
        return table.get(tuple(float(x) for x in differences))

    assert check_sign_flip_p(no_default) is False
    out = wrong_report()
    assert "drawn afresh for this check: returned NoneType, not a number: your function gave" in out
    assert "is the `return` missing?" not in out


def test_the_second_fresh_case_counts_the_fixed_cases_alone(wrong_report):
    fixed = fixed_answers()
    fresh = []

    def wrong_on_the_second(differences):
        key = tuple(float(x) for x in differences)
        if key not in fixed and key not in fresh:
            fresh.append(key)
        return 0.3 if fresh[1:] and key == fresh[1] else flip_p(differences)  # never k / 2^n

    assert check_sign_flip_p(wrong_on_the_second) is False
    out = wrong_report()
    assert passed(out) == 8 and "float64 tensor, drawn afresh for this check: got p = 0.3" in out
    assert "your function gave the right p on the 7 fixed cases" in out


def test_a_table_that_raises_gets_a_hint(capsys):
    table = fixed_answers()
    ok, out = report(check_sign_flip_p, capsys, lambda d: table[tuple(float(x) for x in d)])
    assert not ok and "ERROR KeyError" in out
    assert "HINT your function gave the right p on the 7 fixed cases" in out


def test_the_fresh_cases_change_and_leave_the_seeds_alone(capsys):
    states = (random.getstate(), np.random.get_state()[1].copy(), torch.get_rng_state())
    seen = []

    def recording(differences):
        seen.append(tuple(float(x) for x in differences))
        return flip_p(differences)

    assert check_sign_flip_p(recording) and check_sign_flip_p(recording), capsys.readouterr().out
    assert random.getstate() == states[0] and (np.random.get_state()[1] == states[1]).all()
    assert torch.equal(torch.get_rng_state(), states[2])
    fresh = [d for d in dict.fromkeys(seen) if d not in fixed_answers()]
    assert len(fresh) == 4 and all(7 <= len(d) <= 9 for d in fresh)  # two per check, none repeated
    assert all(2 / 2 ** len(d) < sign_flip_p(d) < 1 for d in fresh)


def test_random_assignments_are_named(wrong_report):
    assert check_sign_flip_p(sampled_p) is False
    assert "two calls on the same differences gave" in (out := wrong_report())
    assert "you drew sign assignments at random" in out
    assert check_sign_flip_p(lambda d: sampled_p(d, seed=0)) is False  # the same p each time
    assert "not a whole number of assignments out of 2^n = 32" in wrong_report()


def test_the_package_and_the_solution_are_refused(wrong_report):
    assert check_sign_flip_p(lambda d: sign_flip_p(list(d))) is False
    assert "revformer.stats.sign_flip_p" in (out := wrong_report()) and "the package's own answer" in out
    assert check_sign_flip_p(ch16.my_sign_flip_p) is False
    assert "the book's solution to this exercise" in wrong_report()


def test_sign_flip_returning_nothing_or_changing_the_input(wrong_report):
    def no_return(differences):
        flip_p(differences)

    assert check_sign_flip_p(no_return) is False
    assert "is the `return` missing?" in wrong_report()

    def sorts(differences):
        differences.sort()
        return flip_p(differences)

    assert check_sign_flip_p(sorts) is False
    assert "changed in place" in wrong_report()


def test_unfinished_sign_flip_is_todo(capsys):
    ok, out = report(check_sign_flip_p, capsys, stub)
    assert not ok and "TODO" in out and "WRONG" not in out


# Chapter 19: the logit lens after block 0


def lens(model, ids, where="block", layer=0, pre=False, norm="final", then=None, leave=False,
         whole_output=False, head=True):
    """The lens after block 0 with a hook, right by default; each keyword switches on one mistake."""
    kept = {}
    module = {"block": model.blocks[layer], "attention": model.blocks[layer].attention,
              "ffn": model.blocks[layer].ffn, "norm2": model.blocks[layer].norm2}[where]
    if pre or where == "norm2":
        handle = module.register_forward_pre_hook(lambda m, args: kept.update(x=args[0]))
    else:
        handle = module.register_forward_hook(
            lambda m, args, out: kept.update(x=out if whole_output or where == "ffn" else out[0]))
    try:
        with torch.no_grad():
            model(ids)
    finally:
        if not leave:
            handle.remove()
    x = kept["x"]
    with torch.no_grad():
        if not head:
            return x
        normed = {"final": model.final_norm, "none": lambda v: v,
                  "block 1": model.blocks[1].norm1,
                  "fresh": lambda v: torch.nn.functional.layer_norm(v, v.shape[-1:])}[norm](x)
        logits = model.lm_head(normed)
    return then(logits) if then else logits


def test_the_books_lens_solution_passes(capsys, model):
    ok, out = report(check_logit_lens, capsys, my_logit_lens, model, torch.randint(10, (6, 14)))
    assert ok and "all checks passed" in out and "WRONG" not in out
    assert "the trained model, 6 sequences: the same logits as logit_lens" in out
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in model.modules())


@pytest.mark.parametrize("mistake, words", [
    (dict(norm="none"), "the final LayerNorm was skipped"),
    (dict(norm="block 1"), "you normalised with block 1's norm1"),
    (dict(norm="fresh"), "you normalised with a fresh LayerNorm"),
    (dict(layer=1), "you read the stream after the last block: these are the model's own logits"),
    (dict(where="attention"), "you read the output of block 0's attention"),
    (dict(where="ffn"), "you read the output of block 0's FFN"),
    (dict(where="norm2"), "you read the stream after block 0's attention, before its FFN"),
    (dict(pre=True), "you read what block 0 reads (the embeddings), not what it returns"),
    (dict(then=lambda z: torch.softmax(z, dim=-1)), "these are probabilities"),
    (dict(then=lambda z: torch.log_softmax(z, dim=-1)), "these are log-probabilities"),
    (dict(head=False), "the stream itself [B,T,D]"),
    (dict(leave=True), "1 hook is still registered after your function returned"),
])
def test_each_lens_mistake_gets_its_diagnosis(wrong_report, mistake, words):
    assert check_logit_lens(lambda m, ids: lens(m, ids, **mistake)) is False
    assert words in wrong_report()


def test_the_full_model_is_named_too(wrong_report):
    def whole_model(model, ids):
        with torch.no_grad():
            return model(ids)[0]

    assert check_logit_lens(whole_model) is False
    assert "the stream after the last block" in wrong_report()


def test_a_left_hook_is_taken_off(wrong_report, model):
    ids = torch.randint(10, (4, 14))
    assert check_logit_lens(lambda m, i: lens(m, i, leave=True), model, ids) is False
    assert "still registered" in wrong_report()
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in model.modules())


def test_the_whole_block_output_crashes_with_a_hint(capsys):
    ok, out = report(check_logit_lens, capsys, lambda m, ids: lens(m, ids, whole_output=True))
    assert not ok and "ERROR" in out and "the stream is output[0]" in out


def test_the_lens_of_the_package_is_refused(wrong_report):
    assert check_logit_lens(lambda m, ids: logit_lens(m, ids)["after block 0"]) is False
    assert "revformer.probes.logit_lens" in (out := wrong_report()) and "the package's own answer" in out


def test_unfinished_lens_is_todo(capsys):
    ok, out = report(check_logit_lens, capsys, stub)
    assert not ok and "TODO" in out and "WRONG" not in out


# Chapter 20: one step with a KV cache


def kv_step(model, token, keys, values, position=None, extend=True, read_twice=False,
            store_twice=False, mask=None, use_cache=True, final_norm=True, prepend=False,
            every_row=False, package_mask=False, residual=True, scale="Dh", norm2=True,
            read_old=False):
    """One cached step, right by default; each keyword switches on one typical mistake."""
    start = keys[0].size(2)
    at = start if position is None else position
    keys, values = list(keys), list(values)
    with torch.no_grad():
        x = model.token_embedding(token) + model.position_embedding(torch.tensor([at]))
        for layer, block in enumerate(model.blocks):
            attention = block.attention
            h = block.norm1(x)
            q, k, v = (attention.split_heads(p(h)) for p in
                       (attention.q_proj, attention.k_proj, attention.v_proj))
            pair = [[keys[layer], k], [values[layer], v]]
            if prepend:
                pair = [p[::-1] for p in pair]
            read_k, read_v = torch.cat(pair[0], dim=2), torch.cat(pair[1], dim=2)
            if read_old:  # attend over the old cache, then append
                read_k, read_v, keys[layer], values[layer] = keys[layer], values[layer], read_k, read_v
            elif extend:
                keys[layer], values[layer] = read_k, read_v
            if store_twice:
                keys[layer] = torch.cat([read_k, k], dim=2)
                values[layer] = torch.cat([read_v, v], dim=2)
            if read_twice:
                read_k, read_v = torch.cat([read_k, k], dim=2), torch.cat([read_v, v], dim=2)
            if not use_cache:
                read_k, read_v = k, v
            if package_mask:
                heads, _ = scaled_dot_product_attention(q, read_k, read_v, causal=True)
            else:
                width = attention.head_dim if scale == "Dh" else attention.d_model
                scores = q @ read_k.transpose(-2, -1) / width ** 0.5
                t = read_k.size(2)
                if mask == "as for query 0":  # the first row of a [T+1,T+1] mask
                    hidden = torch.ones(1, t, dtype=torch.bool).triu(1)
                elif mask == "diagonal too":
                    hidden = torch.ones(t, t, dtype=torch.bool).triu(0)[-1:]
                elif mask == "every key":
                    hidden = torch.ones(1, t, dtype=torch.bool)
                else:
                    hidden = torch.zeros(1, t, dtype=torch.bool)
                heads = torch.softmax(scores.masked_fill(hidden, float("-inf")), dim=-1) @ read_v
            attended = attention.out_proj(attention.merge_heads(heads))
            x = x + attended if residual else attended
            x = x + block.ffn(block.norm2(x) if norm2 else x)
        rows = x if every_row else x[:, -1]
        logits = model.lm_head(model.final_norm(rows) if final_norm else rows)
    return logits, keys, values


def test_the_books_kv_solution_passes(capsys, model):
    ok, out = report(check_kv_step, capsys, my_kv_step, model)
    assert ok and "all checks passed" in out and "WRONG" not in out
    assert "the trained model, 32 sequences, 13 positions cached: the logits of position 13" in out


@pytest.mark.parametrize("mistake, words", [
    (dict(extend=False), "the cache was not extended: layer 0's keys still hold 8 positions"),
    (dict(read_twice=True), "the new position's key and value were read twice"),
    (dict(store_twice=True), "the new position's keys were appended twice"),
    (dict(position=0), "the position embedding of position 0"),
    (dict(position=7), "the position embedding of position 7, one too early"),
    (dict(position=9), "the position embedding of position 9, one too far"),
    (dict(mask="as for query 0"), "the new query read key 0 alone"),
    (dict(mask="diagonal too"), "the new query did not read its own key and value"),
    (dict(read_old=True), "it read the cache before they were appended"),
    (dict(mask="every key"), "some logits are NaN: the mask hid every key"),
    (dict(use_cache=False), "the new query read only its own key and value: the cache was not used"),
    (dict(final_norm=False), "the final LayerNorm was skipped"),
    (dict(prepend=True), "the new position's keys were put first"),
    (dict(every_row=True), "one row for each position this step computed"),
    (dict(residual=False), "the residual addition around the attention is missing"),
    (dict(scale="D"), "the scores were divided by sqrt(D) = 8, the model's width: divide by "
                      "sqrt(Dh) = 4, the width of one head (attention.head_dim = 16)"),
    (dict(norm2=False), "the FFN read the stream without block.norm2"),
])
def test_each_kv_mistake_gets_its_diagnosis(wrong_report, mistake, words):
    assert check_kv_step(lambda *args: kv_step(*args, **mistake)) is False
    assert words in wrong_report()


@pytest.mark.parametrize("mistake", [dict(residual=False), dict(scale="D"), dict(norm2=False)])
def test_the_new_kv_diagnoses_replace_the_bare_gap(wrong_report, model, mistake):
    """Each of these was only "the logits differ from the full forward pass by up to ..."."""
    assert check_kv_step(lambda *args: kv_step(*args, **mistake), model) is False
    out = wrong_report()
    assert "differ from the full forward pass" not in out
    assert "an untrained model with large random weights, 8 positions cached: " in out


def test_every_positions_logits_or_the_logits_alone_are_named(wrong_report):
    def every_position(model, token, keys, values):
        logits, keys, values = kv_step(model, token, keys, values)
        return logits.unsqueeze(1).expand(-1, keys[0].size(2), -1), keys, values

    assert check_kv_step(every_position) is False
    assert "one row for every position: a step returns the new position's alone" in wrong_report()
    assert check_kv_step(lambda *args: kv_step(*args)[0]) is False
    assert "you returned only a tensor: return three things" in wrong_report()


def test_the_mask_of_the_package_crashes_with_a_hint(capsys):
    ok, out = report(check_kv_step, capsys, lambda *args: kv_step(*args, package_mask=True))
    assert not ok and "ERROR ValueError" in out
    assert "so there is nothing to mask" in out and "causal=False" in out


def test_the_cache_of_the_package_is_refused(wrong_report):
    def by_the_package(model, token, keys, values):
        cache = KVCache(model)
        cache.keys, cache.values, cache.length = list(keys), list(values), keys[0].size(2)
        tokens = torch.zeros(token.size(0), cache.length + 1, dtype=torch.long)
        tokens[:, -1:] = token
        return cache.next_logits(tokens), cache.keys, cache.values

    assert check_kv_step(by_the_package) is False
    assert "revformer.generate.KVCache.next_logits" in (out := wrong_report())
    assert "the package's own answer" in out
    assert check_kv_step(ch20.my_kv_step) is False
    assert "the book's solution to this exercise" in wrong_report()


def test_unfinished_kv_step_is_todo(capsys):
    ok, out = report(check_kv_step, capsys, stub)
    assert not ok and "TODO" in out and "WRONG" not in out


def test_a_model_without_the_mask_is_refused():
    with pytest.raises(ValueError, match="causal mask"):
        check_kv_step(my_kv_step, make_model(seed=11, causal=False))


def test_a_right_answer_prints_the_same_report_at_every_check(capsys):
    """The page runs the book's solution through the checker: its output must not change from build to build,
    although two of the cases are drawn afresh each time."""
    reports = []
    for _ in range(2):
        assert check_sign_flip_p(flip_p) is True
        reports.append(capsys.readouterr().out)
    assert reports[0] == reports[1] and reports[0].count("drawn afresh") == 2
