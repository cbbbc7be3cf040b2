"""Chapter 13's exercise: the row-sum check and the leak check, run on broken copies.

The reader writes two checks of a model, each ``fn(model, ids) -> bool``
(True: the model passes), with ``ids`` ``[B,14]`` teacher-forced inputs:

- ``my_rows_ok``: every attention row of every layer sums to 1, and no
  weight is NaN;
- ``my_no_leak``: the prefix-logit test, change the tokens at positions 8-13
  only, and the logits at positions 0-7 must not move.

``check_rows_ok`` and ``check_no_leak`` run the reader's check on the
package's model, which must pass, and on broken copies of it (the attention
of one or both layers replaced by a mistake of chapter 13), which must fail.
Where the reader's check passes a broken copy or rejects the package, the
checker says what that check got wrong. A copy is built from the model with
its attention modules' ``forward`` replaced; the taught classes stay as they are.
"""
from __future__ import annotations

import copy
import math
import types

import torch

from ..analysis import change_future_answers, prefix_logit_change
from ..attention import causal_mask
from ..data import PROMPT_LEN, encode
from ..model import make_model
from ..i18n import Message
from . import Checker, expect, run

# The broken copies, by the key the checks use, and as the reports name them.
_COPIES = {
    "softmax over the queries": Message("softmax over the queries"),
    "softmax over the queries, layer 1 only": Message("softmax over the queries, layer 1 only"),
    "softmax over the queries, layer 0 only": Message("softmax over the queries, layer 0 only"),
    "softmax over the queries, last head only": Message("softmax over the queries, last head only"),
    "softmax over the queries, head 1 only": Message("softmax over the queries, head 1 only"),
    "one row summing to 0.999": Message("one row summing to 0.999"),
    "mask applied after the softmax": Message("mask applied after the softmax"),
    "diagonal masked, triu(diagonal=0)": Message("diagonal masked, triu(diagonal=0)"),
    "weights rounded to bfloat16": Message("weights rounded to bfloat16"),
    "without a mask": Message("without a mask"),
    "with layer 1 unmasked": Message("with layer 1 unmasked"),
    "whose mask is shifted by one, triu(diagonal=2)": Message("whose mask is shifted by one, triu(diagonal=2)"),
    "that masks after the softmax": Message("that masks after the softmax"),
    "whose mask lets query 7 read key 8": Message("whose mask lets query 7 read key 8"),
    "whose query 7 gives key 8 a weight of 2e-4": Message("whose query 7 gives key 8 a weight of 2e-4"),
    "whose query 7 gives key 8 a weight of 1e-4": Message("whose query 7 gives key 8 a weight of 1e-4"),
    "whose layer 1 lets query 3 read key 12": Message("whose layer 1 lets query 3 read key 12"),
    "whose layer 0 lets query 3 read key 12": Message("whose layer 0 lets query 3 read key 12"),
}

_NEG = float("-inf")


def _expect(checker: Checker, condition, good: str, bad: str) -> bool:
    return expect(checker, condition, good, bad, width=72)


def _scores(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # [B,H,T,T]


def _softmax_over_queries(q, k, v):
    t = q.size(-2)
    weights = torch.softmax(_scores(q, k).masked_fill(causal_mask(t, q.device), _NEG), dim=-2)
    return weights @ v, weights


def _mask_after_softmax(q, k, v):
    t = q.size(-2)
    weights = torch.softmax(_scores(q, k), dim=-1).masked_fill(causal_mask(t, q.device), 0.0)
    return weights @ v, weights


def _weights(q, k, blocked=None):
    """``[B,H,T,T]``: softmax over the keys of the scores, the ``blocked`` keys (default: the causal
    mask's) at -inf."""
    blocked = causal_mask(q.size(-2), q.device) if blocked is None else blocked
    return torch.softmax(_scores(q, k).masked_fill(blocked, _NEG), dim=-1)


def _masked_from(diagonal: int):
    def attention(q, k, v):
        t = q.size(-2)
        weights = _weights(q, k, torch.ones(t, t, dtype=torch.bool, device=q.device).triu(diagonal=diagonal))
        return weights @ v, weights
    return attention


def _rounded(q, k, v):
    """Right weights rounded to bfloat16: each row sums to 1 only within a few 1e-3."""
    weights = _weights(q, k).to(torch.bfloat16).float()
    return weights @ v, weights


def _seven_reads_eight(q, k, v):
    """The causal mask with one hole: query 7 (<SEP>) may read key 8, the first answer digit."""
    blocked = causal_mask(q.size(-2), q.device).clone()
    blocked[7, 8] = False
    weights = _weights(q, k, blocked)
    return weights @ v, weights


def _head_over_queries(head: int):
    """Right weights in every head but ``head``, which normalises over the queries."""
    def attention(q, k, v):
        weights = _weights(q, k).clone()
        weights[:, head] = _softmax_over_queries(q, k, v)[1][:, head]
        return weights @ v, weights
    return attention


def _one_row_off(q, k, v):
    """Right weights but for one row, query 5 of the last head in sample 0, which sums to 0.999: the
    mean error over the [B,H,T] rows is about 1e-6, the largest 1e-3."""
    weights = _weights(q, k).clone()
    weights[0, -1, 5] *= 0.999
    return weights @ v, weights


def _three_reads_twelve(q, k, v):
    """The causal mask with one hole far from position 7: query 3 may read key 12. In layer 1
    only position 3 moves, which a check of position 7 alone misses; in layer 0 only a change
    of token 12 shows, which a check that changes only some future tokens misses."""
    blocked = causal_mask(q.size(-2), q.device).clone()
    blocked[3, 12] = False
    weights = _weights(q, k, blocked)
    return weights @ v, weights


def _small_leak(q, k, v, weight: float = 2e-4):
    """Right weights but for one small leak: query 7 gives key 8 ``weight``. Its prefix logits move
    by about 1e-4 at one position, and by a few 1e-6 on average: a leak a mean does not see."""
    weights = _weights(q, k).clone()   # softmax keeps its output for a backward pass
    weights[..., 7, :] *= 1 - weight
    weights[..., 7, 8] = weight
    return weights @ v, weights


def _no_mask(q, k, v):
    weights = torch.softmax(_scores(q, k), dim=-1)
    return weights @ v, weights


def broken_copy(model, attention_fn, layers=None):
    """A copy of ``model`` whose attention in ``layers`` (default: all) runs ``attention_fn(q, k, v)``.

    ``attention_fn`` returns ``(output [B,H,T,Dh], weights [B,H,T,T])``, as
    ``scaled_dot_product_attention`` does; the copy's own projections, head
    split and merge stay. The replaced ``forward`` is bound to each copied
    module, so a ``copy.deepcopy`` of the copy runs its own parameters.
    """
    def forward(module, x, causal=None):
        q, k, v = (module.split_heads(p(x)) for p in (module.q_proj, module.k_proj, module.v_proj))
        heads, weights = attention_fn(q, k, v)  # [B,H,T,Dh], [B,H,T,T]
        return module.out_proj(module.merge_heads(heads)), weights  # [B,T,D], [B,H,T,T]

    broken = copy.deepcopy(model)
    for index, block in enumerate(broken.blocks):
        if layers is None or index in layers:
            block.attention.forward = types.MethodType(forward, block.attention)
    return broken


class _Recorder:
    """Records the ids of every forward pass of a model."""

    def __init__(self, model):
        self.seen: list[torch.Tensor] = []
        self.handle = model.register_forward_pre_hook(self._keep)

    def _keep(self, module, args):
        self.seen.append(args[0].detach().cpu().clone())

    def remove(self):
        self.handle.remove()


def _ids(rows: int = 16) -> torch.Tensor:
    generator = torch.Generator().manual_seed(13)
    digits = torch.randint(10, (rows, 6), generator=generator).tolist()
    return torch.tensor([encode(d)[:-1] for d in digits])  # [B,14]


def _verdict(checker: Checker, fn, model, ids):
    """The reader's verdict on ``model`` (True, False) and the inputs it ran."""
    recorder = _Recorder(model)
    try:
        got = checker.call(fn, model, ids.clone())
    finally:
        recorder.remove()
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        got = bool(got.item())
    if not isinstance(got, bool):
        _expect(checker, False, "", Message("return True or False, got NoneType: is the `return` missing?")
                if got is None else Message("return True or False, got {kind}", kind=type(got).__name__))
        return None, recorder.seen
    return got, recorder.seen


def _min_row_sum(model, ids) -> float:
    with torch.no_grad():
        _, weights = model(ids)
    return min(float(w.sum(-1).min()) for w in weights)


def _leak_size(model, ids, mean: bool = False, probabilities: bool = False) -> float:
    """How far the prefix logits (or probabilities) move when the future changes: the largest change,
    or the mean."""
    with torch.no_grad():
        a, _ = model(ids)
        b, _ = model(change_future_answers(ids))
    if probabilities:
        a, b = a.softmax(dim=-1), b.softmax(dim=-1)
    change = (a[:, :PROMPT_LEN] - b[:, :PROMPT_LEN]).abs()
    return float(change.mean() if mean else change.max())


def _row_error(model, ids) -> float:
    with torch.no_grad():
        _, weights = model(ids)
    return max(float((w.sum(-1) - 1).abs().max()) for w in weights)


def _base(model):
    if model is None:
        return make_model(seed=7).eval()
    return copy.deepcopy(model).cpu().eval()


def check_rows_ok(fn, model=None) -> bool:
    """Check the reader's row-sum check ``fn(model, ids) -> bool``.

    It must pass the package's model (``model``, default an untrained one)
    and fail the broken copies: softmax over the queries, the mask applied
    after the softmax, the diagonal masked (NaN), copies broken in layer 1
    only, in layer 0 only, in the last head only and in head 1 only, one row
    off by 1e-3 (which a mean of the errors lets through), and weights rounded
    to bfloat16 (rows off by about 2e-3, which a loose tolerance lets through).
    Prints what a check that gets one wrong missed; never raises. Returns True
    when every case passes.
    """

    def body(checker: Checker):
        base, ids = _base(model), _ids()
        copies = {
            "softmax over the queries": broken_copy(base, _softmax_over_queries),
            "softmax over the queries, layer 1 only": broken_copy(base, _softmax_over_queries, layers=[1]),
            "softmax over the queries, layer 0 only": broken_copy(base, _softmax_over_queries, layers=[0]),
            "softmax over the queries, last head only": broken_copy(base, _head_over_queries(-1)),
            "one row summing to 0.999": broken_copy(base, _one_row_off),
            "mask applied after the softmax": broken_copy(base, _mask_after_softmax),
            "diagonal masked, triu(diagonal=0)": broken_copy(base, _masked_from(0)),
            "weights rounded to bfloat16": broken_copy(base, _rounded),
        }
        if base.blocks[0].attention.num_heads > 2:  # a head that is neither the first nor the last
            copies["softmax over the queries, head 1 only"] = broken_copy(base, _head_over_queries(1))
        package, _ = _verdict(checker, fn, base, ids)
        if package is None:
            return
        verdicts = {}
        for name, broken in copies.items():
            verdicts[name], _ = _verdict(checker, fn, broken, ids)
            if verdicts[name] is None:
                return
        missed = [name for name, passed in verdicts.items() if passed]
        if not package:
            if verdicts["softmax over the queries"]:
                why = Message("you summed over the queries (dim=-2): a row is one query, so sum over the keys, "
                              "w.sum(dim=-1)")
            else:
                why = Message("its rows sum to 1 only within rounding (a few 1e-7 in float32): compare with a "
                              "tolerance, (w.sum(-1) - 1).abs().max() < 1e-5, not with == 1")
            _expect(checker, False, "", Message("the package's model failed your check: {why}", why=why))
        else:
            _expect(checker, True, Message("the package's model passes"), "")
        for name, passed in verdicts.items():
            if not passed:
                _expect(checker, True, Message("fails the copy with the {name}", name=_COPIES[name]), "")
                continue
            if name == "softmax over the queries":
                why = Message("its columns sum to 1, its rows do not: you summed over the queries (dim=-2), "
                              "or averaged the row sums, whose mean is 1 here too; check every row's own sum, "
                              "w.sum(dim=-1), by its largest error")
            elif name.endswith("layer 0 only"):
                why = Message("layer 1 is right and layer 0 is not: the model returns one [B,H,T,T] per layer; "
                              "check every layer, not only the last")
            elif name.endswith("last head only"):
                why = Message("the other heads are right and the last is not: check the rows of every head, "
                              "w.sum(dim=-1) over the whole [B,H,T], not one head")
            elif name.endswith("head 1 only"):
                why = Message("the other heads are right and head 1 is not: check the rows of every head, "
                              "w.sum(dim=-1) over the whole [B,H,T], not one head")
            elif name.startswith("one row"):
                why = Message("one row is off by 1e-3 and the others are right, so the mean error is about "
                              "1e-6: compare the largest error, (s - 1).abs().max(), not the mean; or, if you "
                              "did, your tolerance is too loose (1e-5 or less)")
            elif name.endswith("layer 1 only"):
                why = Message("layer 0 is right and layer 1 is not: the model returns one [B,H,T,T] per layer; "
                              "check every layer, not weights[0]")
            elif name == "weights rounded to bfloat16":
                why = Message("its rows sum to 1 only within {error:.1e}, and float32 rounding moves a row "
                              "sum by a few 1e-7: your tolerance is too loose; use 1e-5 or less",
                              error=_row_error(copies[name], ids))
            elif name.startswith("mask applied"):
                low = _min_row_sum(copies[name], ids)
                why = Message("its future weights are 0 but rows sum to as little as {low:.2f}: check the sum "
                              "of each row, not that the future is 0, with a tolerance near 1e-5", low=low)
            else:
                why = Message("row 0 is all NaN, and every comparison with NaN is False, so a test such as "
                              "`((s - 1).abs() > tol).any()` finds nothing: add `torch.isnan(w).any()`, or "
                              "require `(s - 1).abs().max() < tol`, which NaN fails")
            _expect(checker, False, "", Message("passed the copy with the {name}: {why}", name=_COPIES[name], why=why))
        if package and not missed:
            _expect(checker, True, Message("a copy whose mask leaks (rows still sum to 1) is the leak "
                                           "check's job, not this one's"), "")

    return run("check_rows_ok", body)


def check_no_leak(fn, model=None) -> bool:
    """Check the reader's leak check ``fn(model, ids) -> bool`` (the prefix-logit test).

    It must pass the package's model (``model``, default an untrained one)
    and fail broken copies that let the future in: no mask, layer 1
    unmasked, the mask shifted by one (``triu(diagonal=2)``, query i reads
    i+1), the mask applied after the softmax, a mask that lets query 7 read
    key 8 (only position 7 moves), one whose query 7 gives key 8 a weight of
    2e-4 (a leak of about 1e-4 at one position, which a mean or a loose
    tolerance lets through), one with a weight of 1e-4 (whose probabilities
    move by less than 1e-5), and one whose layer 1, or layer 0, lets query 3
    read key 12 (only position 3 moves; only a change of token 12 shows).
    Prints what a check that gets one wrong missed; never raises. Returns True when every case passes.
    """

    def body(checker: Checker):
        base, ids = _base(model), _ids()
        copies = {
            "without a mask": broken_copy(base, _no_mask),
            "with layer 1 unmasked": broken_copy(base, _no_mask, layers=[1]),
            "whose mask is shifted by one, triu(diagonal=2)": broken_copy(base, _masked_from(2)),
            "that masks after the softmax": broken_copy(base, _mask_after_softmax),
            "whose mask lets query 7 read key 8": broken_copy(base, _seven_reads_eight),
            "whose query 7 gives key 8 a weight of 2e-4": broken_copy(base, _small_leak),
            "whose query 7 gives key 8 a weight of 1e-4": broken_copy(
                base, lambda q, k, v: _small_leak(q, k, v, weight=1e-4)),
            "whose layer 1 lets query 3 read key 12": broken_copy(base, _three_reads_twelve, layers=[1]),
            "whose layer 0 lets query 3 read key 12": broken_copy(base, _three_reads_twelve, layers=[0]),
        }
        package, seen = _verdict(checker, fn, base, ids)
        if package is None:
            return
        inputs = [s for s in seen if s.shape == seen[0].shape] if seen else []  # a batch of any size
        changed = sorted({int(p) for s in inputs for p in (s != inputs[0]).any(dim=0).nonzero().flatten()})
        if len(inputs) < 2 or not changed:
            _expect(checker, False, "", Message("your check ran the model on one input only (or twice on the "
                                                "same one): run it on the inputs and on a copy whose tokens at "
                                                "positions 8-13 are changed, e.g. "
                                                "revformer.analysis.change_future_answers(ids), and compare"))
            return
        early = [p for p in changed if p < PROMPT_LEN]
        if early:
            _expect(checker, False, "", Message("your second input differs at position(s) {early}, at or "
                                                "before position 7: a change there may move the prefix "
                                                "legitimately. Change only positions 8-13, the future", early=early))
            return
        if not package:
            _expect(checker, False, "", Message("the package's model failed your check, though you changed "
                                                "only positions 8-13: compare only the prefix logits, "
                                                "logits[:, :8] (positions 8-13 read the changed tokens and must "
                                                "move), with a tolerance of 1e-5 or less"))
            return
        _expect(checker, True, Message("the package's model passes (you changed positions {first}-{last} only)",
                                       first=changed[0], last=changed[-1]), "")
        verdicts = {}
        for name, broken in copies.items():
            verdicts[name], _ = _verdict(checker, fn, broken, ids)
            if verdicts[name] is None:
                return
        future = list(range(PROMPT_LEN, ids.size(1)))  # 8-13
        if any(verdicts.values()) and changed != future:
            _expect(checker, False, "", Message("you changed only position(s) {changed} of the future 8-13: "
                                                "a leak that reads another future token does not show. "
                                                "Change every one of them, as change_future_answers(ids) "
                                                "does", changed=changed))
            return
        if all(verdicts.values()):
            _expect(checker, False, "", Message("your check passes every copy that leaks, even the one without "
                                                "a mask, whose prefix logits move by {size:.2g}: compare the "
                                                "prefix logits of the two runs, logits[:, :8], and return False "
                                                "when they differ by more than 1e-5",
                                                size=_leak_size(copies['without a mask'], ids)))
            return
        for name, passed in verdicts.items():
            if not passed:
                _expect(checker, True, Message("fails the copy {name}", name=_COPIES[name]), "")
                continue
            size = _leak_size(copies[name], ids)
            loose = Message("its prefix logits move by {size:.2g}: the right value is exactly 0 on a CPU, "
                            "so a tolerance must be 1e-5 or less", size=size)
            seven = Message("only position 7 moves, by {size:.2g}: compare all eight prefix positions "
                            "0-7, logits[:, :8] (position 7, <SEP>, predicts the first answer digit and "
                            "must not read it)", size=size)
            if name.startswith("whose mask is shifted"):
                why = Message("only positions 6 and 7 move, since query i reads i+1: compare all eight prefix "
                              "positions, logits[:, :8]")
                smaller = _leak_size(copies["with layer 1 unmasked"], ids)
                if verdicts["with layer 1 unmasked"] or smaller >= size:
                    why = Message("only positions 6 and 7 move, since query i reads i+1: compare all eight "
                                  "prefix positions, logits[:, :8]; or, if you did, {loose}", loose=loose)
            elif name == "whose mask lets query 7 read key 8" or (
                    name.startswith("whose query 7 gives") and verdicts["whose mask lets query 7 read key 8"]):
                why = seven   # the same positions missed, the small leak as the large one
            elif name == "whose layer 1 lets query 3 read key 12":
                why = Message("only position 3 moves, by {size:.2g}: compare all eight prefix positions "
                              "0-7, logits[:, :8]; or, if you did, {loose}", size=size, loose=loose)
            elif name == "whose layer 0 lets query 3 read key 12":
                why = Message("the leak comes from token 12 alone: change every future position 8-13 "
                              "(change_future_answers does), not some of them; or, if you did, {loose}",
                              loose=loose)
            elif name.endswith("1e-4"):
                why = Message("its prefix logits move by {size:.1e}, but the probabilities after a softmax by "
                              "{probs:.1e}, below a tolerance of 1e-5: compare the logits, not the "
                              "probabilities; or, if you did, use a tolerance of 1e-5 or less", size=size,
                              probs=_leak_size(copies[name], ids, probabilities=True))
            elif name.startswith("whose query 7 gives"):
                why = Message("its prefix logits move by up to {size:.1e} but by {mean:.1e} on average: "
                              "compare the largest change, (a - b).abs().max(), not the mean; or, if you "
                              "did, {loose}", size=size, mean=_leak_size(copies[name], ids, mean=True),
                              loose=loose)
            elif name.startswith("that masks"):
                why = Message("its future weights are exactly 0, yet the future reaches the past through the "
                              "softmax's denominator: if you checked the weights, compare the prefix logits "
                              "instead; if you compared logits, {loose}", loose=loose)
            else:
                why = loose
            _expect(checker, False, "", Message("passed the copy {name}: {why}", name=_COPIES[name], why=why))

    return run("check_no_leak", body, off_limits=(prefix_logit_change,))


__all__ = ["broken_copy", "check_no_leak", "check_rows_ok"]
