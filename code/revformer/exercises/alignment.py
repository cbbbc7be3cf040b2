"""Chapter 12's exercise: the reversal weight of every layer and head.

The reader writes ``my_reversal_weight(weights)``: ``weights`` are the
attention weights ``[L,H,T,T]`` of one sample, indexed ``[layer, head, query,
key]``; the result is ``[L,H]``, each layer's and head's mean, over the answer
queries ``q = 7..12``, of the weight on the reversal key ``13 - q``.
``check_reversal_weight`` compares it with ``revformer.analysis.reversal_weight``
on made-up weights, where every cell holds its own value so that each
typical mistake gives its own wrong answer, then on the weights of a trained
model when given, and names the mistake it recognises.
"""
from __future__ import annotations

import numpy as np

from ..analysis import ANSWER_QUERIES, reversal_weight
from ..i18n import Message
from . import Checker, expect, run


def _expect(checker, condition, good, bad):
    return expect(checker, condition, good, bad, width=72)

_TITLE = "check_reversal_weight"
_SHAPES = ((2, 4), (3, 2))  # (layers, heads): the book's model, then another
_T = 14
_TOL = 1e-6


def _made_up(layers: int, heads: int, seed: int) -> np.ndarray:
    """Weights ``[L,H,14,14]`` whose rows sum to 1, with no mask: every cell differs."""
    generator = np.random.default_rng(seed)
    scores = 2.0 * generator.standard_normal((layers, heads, _T, _T))
    exp = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return exp / exp.sum(axis=-1, keepdims=True)


def _mean_over(w, queries, key_of):
    return np.mean([w[:, :, q, key_of(q) % _T] for q in queries], axis=0)


def _variants(w: np.ndarray):
    """The answers of the usual mistakes, each with what it means."""
    answers = ANSWER_QUERIES  # 7..12
    rows = Message("only queries 7-12 predict answer digits (query 7, the <SEP>, predicts the first one)")
    return (
        (_mean_over(w, answers, lambda q: 12 - q),
         Message("you read key 12-q, one position left of the reversal key: query q predicts answer digit "
                 "q-7, which is prompt digit 12-q, stored at position 13-q (the prompt starts with <BOS> "
                 "at position 0)")),
        (_mean_over(w, answers, lambda q: 14 - q),
         Message("you read key 14-q, one position right of the reversal key: query 7 must read key 6, "
                 "the last prompt digit, so the key is 13-q")),
        (_mean_over(w, answers, lambda q: q + 1),
         Message("you read key q+1, the next-answer key (the future the mask hides), not the reversal "
                 "key 13-q")),
        (_mean_over(w, range(8, 14), lambda q: 13 - q),
         Message("you read query rows 8-13, one row late: row 8 holds the first answer digit as input, "
                 "row 7 predicts it. {rows}", rows=rows)),
        (_mean_over(w, range(8, 14), lambda q: 14 - q),
         Message("you read query rows 8-13 (with keys 14-q), one row late: row 8 holds the first answer "
                 "digit as input, row 7 predicts it. {rows}", rows=rows)),
        (_mean_over(w, range(0, 13), lambda q: 13 - q),
         Message("you included the query rows of the prompt (0-6) in the mean: {rows}", rows=rows)),
        (_mean_over(w, range(1, 13), lambda q: 13 - q),
         Message("you included the query rows of the prompt (1-6) in the mean: {rows}", rows=rows)),
        (_mean_over(w, range(0, 14), lambda q: 13 - q),
         Message("you averaged over every query row 0-13: {rows}", rows=rows)),
        (w[:, :, 7:13, :].mean(axis=(-1, -2)),
         Message("you averaged over the keys instead of reading one: every row sums to 1, so the mean "
                 "over 14 keys is 1/14 whatever the model does. Read the single key 13-q of each query")),
        (w[:, :, 7:13, 1:7].mean(axis=(-1, -2)),
         Message("you averaged over the six prompt keys instead of reading the one reversal key 13-q "
                 "of each query")),
        (w[:, :, 7:13, 1:7].sum(axis=-1).mean(axis=-1),
         Message("you added the weight on all six prompt keys: that is how much each query reads the "
                 "prompt, not the reversal key. Read the single key 13-q")),
        (_mean_over(np.swapaxes(w, -1, -2), answers, lambda q: 13 - q),
         Message("you swapped the query and key axes: the weights are [layer, head, query, key], so the "
                 "reversal cell of query q is w[:, :, q, 13 - q], not w[:, :, 13 - q, q]")),
        (6 * _mean_over(w, answers, lambda q: 13 - q),
         Message("you added the six queries' weights instead of averaging them: divide by 6 (np.mean)")),
    )


def _as_array(got):
    if hasattr(got, "detach"):  # a torch tensor
        got = got.detach().cpu().numpy()
    return np.asarray(got, dtype=float)


def _shape_problem(got: np.ndarray, layers: int, heads: int):
    shape = list(got.shape)
    if shape == [layers, heads]:
        return None
    if shape == [heads, layers]:
        return Message("got shape {shape}: return [L,H] = [{layers},{heads}], one row per layer",
                       shape=shape, layers=layers, heads=heads)
    if shape == [layers]:
        return Message("got shape {shape}: you averaged over the heads too; return one value per layer "
                       "and head", shape=shape)
    if shape == [heads]:
        return Message("got shape {shape}: you averaged over the layers; return one value per layer and "
                       "head", shape=shape)
    if shape == []:
        return Message("got one number: you averaged over the layers and heads; return [L,H]")
    if shape == [layers, heads, len(ANSWER_QUERIES)]:
        return Message("got shape {shape}: one value per answer query; average them over the six queries "
                       "to get [L,H]", shape=shape)
    return Message("expected shape [L,H] = [{layers},{heads}], got {shape}", layers=layers, heads=heads,
                   shape=shape)


def _check(checker: Checker, fn, weights: np.ndarray, where: str) -> bool:
    layers, heads = weights.shape[:2]
    given = weights.copy()
    got = checker.call(fn, given)
    if got is None:
        return _expect(checker, False, "", Message("{where}: returned None: is the `return` missing?",
                                                   where=where))
    if not np.array_equal(given, weights):
        return _expect(checker, False, "", Message("{where}: the weights were changed in place; read them "
                                                   "only", where=where))
    try:
        got = _as_array(got)
    except (TypeError, ValueError):
        return _expect(checker, False, "", Message("{where}: return an array [L,H] of numbers, got {kind}",
                                                   where=where, kind=type(got).__name__))
    want = reversal_weight(weights)
    if list(got.shape) == [heads]:
        for layer in range(layers):
            if np.allclose(got, want[layer], atol=_TOL, rtol=0):
                return _expect(checker, False, "", Message(
                    "{where}: got shape {shape}, the heads of layer {layer} alone (w[{layer}]): return "
                    "every layer, [L,H] = [{layers},{heads}]", where=where, shape=[heads], layer=layer,
                    layers=layers, heads=heads))
    problem = _shape_problem(got, layers, heads)
    if problem:
        return _expect(checker, False, "", Message("{where}: {problem}", where=where, problem=problem))
    if np.allclose(got, want, atol=_TOL, rtol=0):
        return _expect(checker, True, Message("{where}: equals revformer.analysis.reversal_weight",
                                              where=where), "")
    for answer, meaning in _variants(weights):
        if np.allclose(got, answer, atol=_TOL, rtol=0):
            return _expect(checker, False, "", Message("{where}: {problem}", where=where, problem=meaning))
    gap = float(np.abs(got - want).max())
    return _expect(checker, False, "", Message("{where}: differs from revformer.analysis.reversal_weight by "
                                               "up to {gap:.3g}: mean over queries q = 7..12 of "
                                               "w[layer, head, q, 13 - q]", where=where, gap=gap))


def check_reversal_weight(fn, weights=None) -> bool:
    """Check ``fn(weights [L,H,T,T]) -> [L,H]`` against ``revformer.analysis.reversal_weight``.

    First on made-up weights (every cell its own value, two model shapes),
    then on ``weights``, one sample's weights of a trained model, when given.
    Prints one line per case and, for a wrong answer, what the symptom means;
    never raises. Returns True when every case passes.
    """

    def body(checker: Checker):
        cases = [(_made_up(layers, heads, seed), Message("made-up weights [{layers},{heads},14,14]",
                                                         layers=layers, heads=heads))
                 for seed, (layers, heads) in enumerate(_SHAPES)]
        if weights is not None:
            w = _as_array(weights)
            cases.append((w, Message("the trained model's weights {shape}", shape=list(w.shape))))
        for w, where in cases:
            if not _check(checker, fn, w, where):
                return

    return run(_TITLE, body, off_limits=(reversal_weight,))


__all__ = ["check_reversal_weight"]
