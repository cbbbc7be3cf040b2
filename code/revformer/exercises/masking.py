"""Chapter 5's exercise: causal attention weights from raw scores.

The reader writes ``my_masked_weights(scores)``: ``scores`` are the raw
``[B,H,T,T]`` scores ``q k^T / sqrt(Dh)``; the result is the weights with the
causal mask, ``softmax`` along the keys after the future keys (``j > i``)
were set to ``-inf``. ``check_masked_weights`` compares it with the package
and names the usual mistake: the mask applied after the softmax, the
diagonal masked too, the wrong triangle masked, no mask at all.
"""
from __future__ import annotations

import torch

from ..attention import causal_mask, scaled_dot_product_attention
from ..i18n import Message
from . import Checker, Unfinished, expect, not_a_tensor, run_cases

_TITLE = "check_masked_weights"
_CASES = ((2, 3, 5), (1, 4, 14))  # (batch, heads, positions)
_TOL = dict(atol=1e-5, rtol=1e-4)


def _expect(checker: Checker, condition, good: str, bad: str) -> bool:
    return expect(checker, condition, good, bad, width=72)


def _reference(scores):
    future = causal_mask(scores.size(-1))  # [T,T], True above the diagonal
    return torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)


def _variants(scores):
    """Weights of the usual mistakes, with what each one means."""
    t = scores.size(-1)
    future = causal_mask(t)
    with_diagonal = torch.ones(t, t, dtype=torch.bool).triu(0)
    past = torch.ones(t, t, dtype=torch.bool).tril(-1)
    inf = float("-inf")
    plain = torch.softmax(scores, dim=-1)
    diagonal_too = Message("the diagonal was masked too: a query may read its own position (key i for "
                           "query i), so mask only j > i, triu(diagonal=1). With the diagonal masked, "
                           "query 0 has no key left to read")
    after = Message("the future weights are 0 but the rows no longer sum to 1: the mask was applied "
                    "after the softmax. Fill the future scores with -inf before the softmax")
    after_inf = Message("the future weights are -inf and the rows no longer sum to 1: the mask was "
                        "applied after the softmax. Fill the future scores with -inf before the softmax")
    return (
        (plain.masked_fill(future, 0.0), after),
        (plain.masked_fill(future, inf), after_inf),
        (torch.softmax(scores.masked_fill(with_diagonal, inf), dim=-1), diagonal_too),
        (torch.softmax(scores.masked_fill(with_diagonal, -1e9), dim=-1), diagonal_too),
        (torch.softmax(scores.masked_fill(past, inf), dim=-1),
         Message("the future keys got weight and the past none: the lower triangle was masked instead "
                 "of the upper one. The mask must be True above the diagonal, triu(diagonal=1)")),
        (torch.softmax(scores.masked_fill(torch.ones(t, t, dtype=torch.bool).tril(0), inf), dim=-1),
         Message("the future keys got weight and the past none, and the last row has no key left (NaN): "
                 "the lower triangle, tril(), was masked instead of the upper one. The mask must be True "
                 "above the diagonal, triu(diagonal=1)")),
        (torch.softmax(scores.masked_fill(torch.ones(t, t, dtype=torch.bool).tril(1), inf), dim=-1),
         Message("the future keys got weight and the past none, and the last two rows have no key left "
                 "(NaN): the lower triangle, tril(diagonal=1), was masked instead of the upper one. The "
                 "mask must be True above the diagonal, triu(diagonal=1)")),
        (plain,
         Message("the future keys got weight: no mask was applied. Fill the scores above the diagonal "
                 "with -inf before the softmax")),
        (torch.softmax(scores.masked_fill(future, 0.0), dim=-1),
         Message("the future keys got weight: the masked scores were set to 0, an ordinary score. "
                 "Set them to -inf so that exp(-inf) = 0")),
        (scores.masked_fill(future, inf),
         Message("the softmax is missing: these are still scores, -inf above the diagonal. Apply "
                 "torch.softmax(..., dim=-1) after the mask")),
        (torch.softmax(scores.masked_fill(future, inf), dim=-2),
         Message("the softmax ran over the queries (dim -2): the columns sum to 1, not the rows. "
                 "Use dim=-1, the keys")),
    )


def _check_case(checker: Checker, fn, shape, seed) -> bool:
    generator = torch.Generator().manual_seed(seed)
    b, h, t = shape
    scores = 1.5 * torch.randn(b, h, t, t, generator=generator)  # [B,H,T,T]
    scores_in = scores.clone()
    try:
        got = checker.call(fn, scores_in)
    except Unfinished:
        if checker.lines[-1].marker == "ERROR":
            checker.hint(Message("if the mask has a fixed size, build it from the scores' own length, "
                                 "scores.size(-1) (here {t}), not a fixed 14", t=t), width=72)
        raise
    where = Message("scores {shape}", shape=[b, h, t, t])
    if not isinstance(got, torch.Tensor):
        return _expect(checker, False, "", not_a_tensor(got))
    if not torch.equal(scores_in, scores):
        return _expect(checker, False, "", Message("the scores were changed in place (masked_fill_ with an "
                                                   "underscore): use masked_fill, which returns a new tensor"))
    if not _expect(checker, list(got.shape) == [b, h, t, t],
                   Message("{where} -> weights of the same shape", where=where),
                   Message("{where}: got shape {shape}; return one weight per score", where=where,
                           shape=list(got.shape))):
        return False
    got = got.detach().to("cpu", torch.float32)
    expected = _reference(scores)
    if torch.allclose(got, expected, **_TOL):
        return _expect(checker, True, Message("the future gets 0, the past and the diagonal keep "
                                              "weight, rows sum to 1"), "")
    for weights, meaning in _variants(scores):
        if torch.allclose(got, weights, equal_nan=True, **_TOL):
            return _expect(checker, False, "", Message("{where}: {problem}", where=where, problem=meaning))
    if not torch.isfinite(got).all():
        return _expect(checker, False, "", Message("{where}: some weights are NaN or infinite: is the "
                                                   "softmax missing after the mask, or does a row have no "
                                                   "key left?", where=where))
    future = causal_mask(t)
    if got[..., future].abs().max() > 1e-6:
        return _expect(checker, False, "", Message("{where}: the future keys (j > i) got weight: the mask "
                                                   "must cover every score above the diagonal", where=where))
    if not torch.allclose(got.sum(-1), torch.ones(()), atol=1e-4):
        return _expect(checker, False, "", Message("{where}: the rows do not sum to 1: mask with -inf "
                                                   "first, then softmax along the keys (dim=-1)", where=where))
    gap = (got - expected).abs().max().item()
    return _expect(checker, False, "", Message("{where}: the rows sum to 1 and the future is 0, but the "
                                               "weights differ from the reference by up to {gap:.3g}: "
                                               "were the scores changed before masking?", where=where, gap=gap))


def check_masked_weights(fn) -> bool:
    """Check ``fn(scores [B,H,T,T]) -> causal attention weights [B,H,T,T]``.

    Prints one line per check and, for a wrong answer, what the symptom
    means; never raises. Returns True when every case passes.
    """
    return run_cases(_TITLE, _CASES, _check_case, fn,
                     off_limits=(causal_mask, scaled_dot_product_attention,
                                 torch.nn.Transformer.generate_square_subsequent_mask))


__all__ = ["check_masked_weights"]
