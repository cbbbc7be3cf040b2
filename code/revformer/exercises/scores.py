"""Chapter 4's exercise: attention weights from queries and keys, no mask.

The reader writes ``my_attention_weights(q, k)``: ``q`` and ``k`` are
``[B,H,T,Dh]``, the result is ``softmax(q k^T / sqrt(Dh))`` along the keys,
``[B,H,T,T]``. ``check_attention_weights`` runs it on a few cases, compares
it with the package's ``scaled_dot_product_attention`` and, when it differs,
names the usual mistake: no scaling, scaling by ``Dh`` instead of its square
root, the softmax over the queries, the transpose on the wrong tensor, and a
written-out softmax that skips the row's maximum (the last case has scores in
the hundreds, where ``exp`` overflows ``float32``).
"""
from __future__ import annotations

import inspect
import math
import re

import torch

from ..attention import scaled_dot_product_attention
from ..i18n import Message
from . import Checker, Unfinished, expect, not_a_tensor, run_cases

_TITLE = "check_attention_weights"
# (batch, heads, positions, head width, spread of q and k): T, Dh and H all
# differ, so a result of the wrong shape says which axis went wrong. A spread
# of 2 makes the scores large enough that every usual mistake changes the
# weights; the last case's spread of 12 gives scores in the hundreds, beyond
# exp's range in float32 (about 88.7), so only a softmax that subtracts each
# row's maximum (or torch.softmax) gets it right.
_CASES = ((2, 3, 5, 16, 2.0), (1, 4, 14, 4, 2.0), (1, 2, 6, 8, 12.0))
_EXP_LIMIT = 88.7  # math.log of float32's largest number


def _expect(checker: Checker, condition, good: str, bad: str) -> bool:
    return expect(checker, condition, good, bad, width=72)


def _reference(q, k):
    return scaled_dot_product_attention(q, k, k, causal=False)[1]  # [B,H,T,T]


def _variants(q, k):
    """Weights of the usual mistakes, with what each one means."""
    dh, t = q.size(-1), q.size(-2)
    raw = q @ k.transpose(-2, -1)  # [B,H,T,T]
    scaled = raw / math.sqrt(dh)
    # A constant written in comes first: the earlier cases, where it equals the
    # right scale, passed, so a later match means the constant, not Dh.
    return (
        *((torch.softmax(raw / root, dim=-1), meaning) for root, meaning in (
            (8.0, Message("the scores were divided by 8 = sqrt(64), the square root of the model's width "
                          "d_model; the scale belongs to one head: sqrt(Dh) = {root:g}, Dh = q.size(-1) = {dh}",
                          root=math.sqrt(dh), dh=dh)),
            (4.0, Message("the scores were divided by 4 = sqrt(16), the book's Dh written in: this q has "
                          "Dh = q.size(-1) = {dh}, so divide by sqrt(Dh) = {root:g}", root=math.sqrt(dh), dh=dh)),
        ) if not math.isclose(root, math.sqrt(dh))),
        (torch.softmax(raw, dim=-1),
         Message("the scores were not scaled: divide q k^T by sqrt(Dh) = {root:g} before the softmax",
                 root=math.sqrt(dh))),
        (torch.softmax(raw / dh, dim=-1),
         Message("the scores were divided by Dh = {dh}; divide by its square root, sqrt(Dh) = {root:g}",
                 dh=dh, root=math.sqrt(dh))),
        (torch.softmax(raw * math.sqrt(dh), dim=-1),
         Message("the scores were multiplied by sqrt(Dh) = {root:g}; divide by it instead", root=math.sqrt(dh))),
        (torch.softmax(raw / math.sqrt(t), dim=-1),
         Message("the scores were divided by sqrt(T) = sqrt({t}), the number of positions; "
                 "Dh is the last axis of q, q.size(-1) = {dh}", t=t, dh=dh)),
        (torch.softmax(scaled.transpose(-2, -1), dim=-1),
         Message("you computed k q^T: row i then belongs to key i. Rows must be queries and "
                 "columns keys: q @ k.transpose(-2, -1)")),
        (torch.softmax(scaled, dim=-2),
         Message("the softmax ran over the queries (dim -2): each column sums to 1, not each row. "
                 "Use dim=-1, the keys")),
    )


def _written_out(scores):
    """A softmax written out with exp and a sum, shifted by nothing more."""
    e = scores.exp()
    return e / e.sum(dim=-1, keepdim=True)


def _sums_to_one(weights, dim):
    return torch.allclose(weights.sum(dim), torch.ones(()), atol=1e-4)


def _shape_diagnosis(got, q) -> Message:
    b, h, t, dh = q.shape
    shape = list(got.shape)
    if shape == [b, h, dh, dh]:
        return Message("got shape {shape} = [B,H,Dh,Dh]: the transpose is on the wrong tensor "
                       "(q^T k). Use q @ k.transpose(-2, -1)", shape=shape)
    if shape == [b, h, t, dh]:
        return Message("got shape {shape} = [B,H,T,Dh], the shape of q: return the weights "
                       "[B,H,T,T], one row per query and one column per key", shape=shape)
    return Message("got shape {shape}, expected [B,H,T,T] = {expected}: transpose only the "
                   "last two axes of k, k.transpose(-2, -1)", shape=shape, expected=[b, h, t, t])


def _error_hint(fn) -> Message:
    """The likelier of the two shape errors, read from the reader's source when it can be read."""
    try:
        source = re.sub(r"#.*", "", inspect.getsource(fn))  # the code, not its comments
    except (OSError, TypeError):
        source = ""
    if re.search(r"\.T\b", source):
        pass
    elif re.search(r"\.a?max\((?![^)]*keepdim)[^)]*\)", source):
        return Message("a row's maximum taken without keepdim=True is [B,H,T]: it lines up with the "
                       "wrong axes of the [B,H,T,T] scores. Use scores.amax(dim=-1, keepdim=True), "
                       "[B,H,T,1]")
    elif re.search(r"\.sum\((?![^)]*keepdim)[^)]*\)", source):
        return Message("a row's sum taken without keepdim=True is [B,H,T]: it lines up with the wrong "
                       "axes of the [B,H,T,T] weights. Use .sum(dim=-1, keepdim=True), [B,H,T,1]")
    return Message("q and k are [B,H,T,Dh]: transpose only their last two axes, "
                   "k.transpose(-2, -1) (k.T reverses all four)")


def _check_case(checker: Checker, fn, case, seed) -> bool:
    *shape, spread = case
    generator = torch.Generator().manual_seed(seed)
    q, k = (spread * torch.randn(*shape, generator=generator) for _ in range(2))
    q_in, k_in = q.clone(), k.clone()
    try:
        got = checker.call(fn, q_in, k_in)
    except Unfinished:
        if checker.lines[-1].marker == "ERROR":
            checker.hint(_error_hint(fn), width=72)
        raise
    b, h, t, dh = shape
    where = Message("q, k {shape}", shape=list(shape))
    if not isinstance(got, torch.Tensor):
        return _expect(checker, False, "", not_a_tensor(got))
    if not (torch.equal(q_in, q) and torch.equal(k_in, k)):
        return _expect(checker, False, "", Message("q or k was changed in place (an operation ending in _, "
                                                   "or /=): compute new tensors instead"))
    if not _expect(checker, list(got.shape) == [b, h, t, t],
                   Message("{where} -> weights {shape}, [B,H,T,T]", where=where, shape=[b, h, t, t]),
                   Message("{where} = [B,H,T,Dh]: {problem}", where=where, problem=_shape_diagnosis(got, q))):
        return False
    got = got.detach().to("cpu", torch.float32)
    expected = _reference(q, k)
    if torch.allclose(got, expected, atol=1e-5, rtol=1e-4):
        return _expect(checker, True, Message("rows sum to 1, equal to softmax(q k^T / sqrt({dh})) "
                                              "along the keys", dh=dh), "")
    for weights, meaning in _variants(q, k):
        if torch.allclose(got, weights, atol=1e-5, rtol=1e-4):
            return _expect(checker, False, "", Message("{where}: {problem}", where=where, problem=meaning))
    if not torch.isfinite(got).all():
        scores = q @ k.transpose(-2, -1) / math.sqrt(dh)  # [B,H,T,T]
        largest = scores.abs().max().item()
        for shift in (scores.amax(), scores.amax(dim=(-2, -1), keepdim=True)):
            if torch.allclose(got, _written_out(scores - shift), atol=1e-5, rtol=1e-4, equal_nan=True):
                return _expect(checker, False, "", Message(
                    "{where}: some weights are NaN. You subtracted one maximum for the whole score "
                    "matrix, not each row's own: in a row whose scores all lie far below it, exp "
                    "underflows to 0 for every key, and 0 / 0 = NaN. Subtract "
                    "scores.amax(dim=-1, keepdim=True), each row's maximum", where=where))
        if largest > _EXP_LIMIT:
            return _expect(checker, False, "", Message(
                "{where}: some weights are NaN. The scores of this case reach {largest:.0f}, and "
                "exp of a score above {limit} overflows float32 to inf (inf / inf = NaN): "
                "subtract each row's maximum before exp, scores - scores.amax(dim=-1, keepdim=True), "
                "as softmax_over_keys does, or call torch.softmax", where=where, largest=largest, limit=_EXP_LIMIT))
        return _expect(checker, False, "", Message("{where}: some weights are NaN or infinite", where=where))
    if not _sums_to_one(got, -1):
        sums = {0: Message("the batch"), 1: Message("the heads"), -2: Message("the queries")}
        for dim, name in sums.items():
            if _sums_to_one(got, dim):
                return _expect(checker, False, "", Message(
                    "{where}: the weights sum to 1 over {name} (dim {dim}), not along each row: use "
                    "softmax(..., dim=-1), the keys", where=where, name=name, dim=dim))
        return _expect(checker, False, "", Message("{where}: the rows do not sum to 1: is the softmax missing, "
                                                   "or over the wrong axis? It must run along the keys, dim=-1",
                                                   where=where))
    gap = (got - expected).abs().max().item()
    return _expect(checker, False, "", Message("{where}: each row sums to 1, but the weights differ from "
                                               "softmax(q k^T / sqrt({dh})) by up to {gap:.3g}", where=where,
                                               dh=dh, gap=gap))


def check_attention_weights(fn) -> bool:
    """Check ``fn(q, k) -> softmax(q k^T / sqrt(Dh), dim=-1)`` on ``[B,H,T,Dh]`` inputs.

    Prints one line per check and, for a wrong answer, what the symptom
    means; never raises. Returns True when every case passes.
    """
    return run_cases(_TITLE, _CASES, _check_case, fn,
                     off_limits=(scaled_dot_product_attention,))


__all__ = ["check_attention_weights"]
