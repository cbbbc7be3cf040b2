"""Chapter 13's checkers: the right checks pass, and a check that misses a broken copy is told why."""
import pytest
import torch

from revformer.analysis import change_future_answers
from revformer.attention import causal_mask
from revformer.exercises.attention_checks import broken_copy, check_no_leak, check_rows_ok
from revformer.exercises.solutions.ch13 import my_no_leak, my_rows_ok
from solution_helpers import as_the_books

my_no_leak, my_rows_ok = as_the_books(my_no_leak), as_the_books(my_rows_ok)
from revformer.model import make_model


def rows_ok(model, ids, dim=-1, layers=None, exact=False, nan_blind=False, future_only=False, tol=1e-5,
            head0=False, mean=False, last_head=False, mean_error=False):
    """The row-sum check, right by default; each keyword switches on one typical mistake."""
    with torch.no_grad():
        _, weights = model(ids)
    weights = weights[:1] if layers == "first" else weights[-1:] if layers == "last" else weights
    for w in weights:
        w = w[:, :1] if head0 else w[:, -1:] if last_head else w
        if mean:
            if not bool((w.sum(dim=dim).mean() - 1).abs() < tol):
                return False
            continue
        if future_only:
            if w[..., causal_mask(w.size(-1))].abs().max() != 0:
                return False
            continue
        error = (w.sum(dim=dim) - 1).abs()
        if exact:
            if not bool((w.sum(dim=dim) == 1).all()):
                return False
        elif mean_error:
            if not bool(error.mean() < tol):
                return False
        elif nan_blind:
            if bool((error > tol).any()):
                return False
        elif not bool(error.max() < tol):
            return False
    return True


def no_leak(model, ids, positions=8, tol=1e-5, change="future", weights_only=False, mean=False,
            only_seven=False, probabilities=False, first_only=False):
    """The prefix-logit test, right by default; each keyword switches on one typical mistake."""
    ids = ids[:1] if first_only else ids
    changed = ids.clone()
    if change == "thirteen":
        changed[:, 13] = (changed[:, 13] + 1) % 10
    if change == "future":
        changed = change_future_answers(ids)
    elif change == "prompt":
        changed[:, 3] = (changed[:, 3] + 1) % 10
    elif change == "eight":
        changed[:, 8] = (changed[:, 8] + 1) % 10
    with torch.no_grad():
        a, wa = model(ids)
        b, _ = model(changed)
    if probabilities:
        a, b = a.softmax(dim=-1), b.softmax(dim=-1)
    if weights_only:
        return all(bool(w[..., causal_mask(w.size(-1))].abs().max() == 0) for w in wa)
    change = (a[:, 7:8] - b[:, 7:8]).abs() if only_seven else (a[:, :positions] - b[:, :positions]).abs()
    return bool((change.mean() if mean else change.max()) <= tol)


def run(checker, fn, capsys, **kwargs):
    ok = checker(fn, **kwargs)
    return ok, " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("checker, fn", [(check_rows_ok, my_rows_ok), (check_rows_ok, rows_ok),
                                         (check_no_leak, my_no_leak), (check_no_leak, no_leak)])
def test_right_checks_pass(capsys, checker, fn):
    ok, out = run(checker, fn, capsys)
    assert ok and "all checks passed" in out and "WRONG" not in out


def test_right_checks_pass_on_another_model(capsys):
    model = make_model(seed=3, num_heads=1)
    assert run(check_rows_ok, my_rows_ok, capsys, model=model)[0]
    assert run(check_no_leak, my_no_leak, capsys, model=model)[0]


@pytest.mark.parametrize("mistake, words", [
    (dict(dim=-2), "you summed over the queries (dim=-2)"),
    (dict(layers="first"), "check every layer, not weights[0]"),
    (dict(exact=True), "not with == 1"),
    (dict(nan_blind=True), "every comparison with NaN is False"),
    (dict(future_only=True), "check the sum of each row, not that the future is 0"),
    # the teacher's review: a tolerance of 0.1 passed every copy, each off by 0.93 or more
    (dict(tol=0.1), "your tolerance is too loose"),
    # the teacher's review: the last layer only, one head only and a mean of the row sums passed
    (dict(layers="last"), "check every layer, not only the last"),
    (dict(head0=True), "check the rows of every head"),
    (dict(mean=True), "or averaged the row sums"),
    # the review of s46: the last head only, and the mean of each row's error, passed
    (dict(last_head=True), "head 1 is not: check the rows of every head"),
    (dict(mean_error=True), "compare the largest error, (s - 1).abs().max(), not the mean"),
])
def test_rows_check_mistakes(capsys, mistake, words):
    ok, out = run(check_rows_ok, lambda m, i: rows_ok(m, i, **mistake), capsys)
    assert not ok and "WRONG" in out and words in out, out


@pytest.mark.parametrize("mistake, words", [
    (dict(positions=14), "compare only the prefix logits, logits[:, :8]"),
    (dict(positions=6), "only positions 6 and 7 move"),
    (dict(tol=1e-1), "a tolerance must be 1e-5 or less"),
    (dict(change="none"), "on one input only"),
    (dict(change="prompt"), "at or before position 7"),
    (dict(weights_only=True), "the future reaches the past through the softmax's denominator"),
    (dict(tol=10.0), "passes every copy that leaks"),
    # the teacher's review: positions 0-6 and a mean passed, as no copy leaked at position 7 alone or a little
    (dict(positions=7), "only position 7 moves"),
    (dict(mean=True), "not the mean"),
    # the teacher's review: position 7 alone, or a change of position 8 alone, passed
    (dict(only_seven=True), "only position 3 moves"),
    (dict(change="eight"), "you changed only position(s) [8] of the future 8-13"),
    # the review of s46: probabilities passed; a change of position 13 alone was blamed on the positions compared
    (dict(probabilities=True), "compare the logits, not the probabilities"),
    (dict(change="thirteen"), "you changed only position(s) [13] of the future 8-13"),
])
def test_leak_check_mistakes(capsys, mistake, words):
    ok, out = run(check_no_leak, lambda m, i: no_leak(m, i, **mistake), capsys)
    assert not ok and "WRONG" in out and words in out, out


def test_a_check_of_one_sample_is_not_called_one_input(capsys):
    # the review of s46: the recorder kept only inputs of the checker's batch size
    ok, out = run(check_no_leak, lambda m, i: no_leak(m, i, first_only=True), capsys)
    assert ok and "one input only" not in out, out


def test_few_positions_is_not_blamed_on_the_tolerance(capsys):
    ok, out = run(check_no_leak, lambda m, i: no_leak(m, i, positions=6), capsys)
    assert not ok and "tolerance" not in out


def test_broken_copies_leave_the_model_alone():
    model = make_model(seed=5)
    ids = torch.randint(10, (2, 14))
    before, _ = model(ids)
    broken = broken_copy(model, lambda q, k, v: (v, torch.ones(*q.shape[:-1], q.size(-2))))
    after, _ = model(ids)
    assert torch.equal(before, after) and not torch.equal(broken(ids)[0], before)


def test_unfinished_and_wrong_type_do_not_raise(capsys):
    def my_rows_ok(model, ids):
        raise NotImplementedError("your code here")

    for checker in (check_rows_ok, check_no_leak):
        ok, out = run(checker, my_rows_ok, capsys)
        assert not ok and "TODO" in out
        ok, out = run(checker, lambda m, i: None, capsys)
        assert not ok and "return True or False" in out
