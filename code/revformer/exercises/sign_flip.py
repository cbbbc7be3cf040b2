"""Chapter 16's exercise: the exact two-sided sign-flip p-value of paired differences.

The reader writes ``my_sign_flip_p(differences)``: ``differences`` is a list or
a 1-D tensor of ``n`` paired differences, one a seed; the result is the share
of the ``2^n`` ways to give them signs whose sum is at least as far from 0 as
the observed sum, ``|sum(s * d)| >= |sum(d)|``, as ``revformer.stats.sign_flip_p``
computes it. The observed signs and their mirror (every sign flipped) always
count, so with ``n`` pairs p is never below ``2 / 2^n = 1 / 2^(n-1)``.

``check_sign_flip_p`` runs it on differences whose values are exact in binary
(every sum is exact in float32 and float64, so a tie is a real tie): all of
one sign, mixed signs, a negative sum, ties with the observed sum, a sum of 0,
and ten pairs. It recognises the usual mistakes by computing each one's p on
every case: a one-sided p, the observed assignment (or its mirror) left out,
a strict inequality, the absolute values added before the sum (p = 1
everywhere), the count instead of the share, a denominator of ``2^(n-1)``, a
doubled one-sided p, and sign assignments drawn at random.
"""
from __future__ import annotations

import itertools
import math

import torch

from ..i18n import Message
from ..stats import paired, sign_flip_p
from . import Checker, expect, run

_TITLE = "check_sign_flip_p"
_TOL = 1e-9

# Values exact in binary (multiples of 1/8): every sum of them, in any order and in
# float32 as in float64, is exact, so assignments that tie really tie.
_CASES = (
    ([0.75, 1.25, 0.5, 2.0, 0.25], "list"),            # all positive: the floor, 2 of 32
    ([1.5, -0.5, 2.25, 0.75, -1.0, 1.25], "float32"),  # mixed signs
    ([-1.0, -0.75, 0.25, -1.5], "list"),               # a negative observed sum
    ([1.0, 1.0, -1.0, 0.5], "float64"),                # other assignments tie with the observed
    ([1.0, -0.5, -0.5, 0.25, -0.25], "list"),          # a sum of 0: every assignment counts
    ([0.5, -1.25, 2.0, 0.375, -0.75, 1.5, 0.125, -0.5, 1.0, 0.625], "float32"),  # ten pairs
)


def _expect(checker: Checker, condition, good, bad) -> bool:
    return expect(checker, condition, good, bad, width=72)


def _sums(d):
    """The sum of every sign assignment, the observed one (all +1) first."""
    return [sum(s * x for s, x in zip(signs, d)) for signs in itertools.product((1, -1), repeat=len(d))]


def _variants(d):
    """``(p, diagnosis)`` of each usual mistake on the differences ``d``."""
    n, total = len(d), 2 ** len(d)
    sums, observed = _sums(d), sum(d)
    hits = sum(abs(s) >= abs(observed) for s in sums)
    upper = sum(s >= observed for s in sums)
    lower = sum(s <= observed for s in sums)
    same_way = sum(s * (1 if observed >= 0 else -1) >= abs(observed) for s in sums)
    strict = sum(abs(s) > abs(observed) for s in sums)
    one_sided = Message("that is a one-sided p, the share of assignments whose sum lies at least as far "
                        "as the observed one in one direction. The test is two-sided: count every "
                        "assignment with |sum| >= |observed sum|, which takes in the mirror of each "
                        "(every sign flipped)")
    left_out = Message("the observed assignment was left out of the count. It is one of the 2^n, and it "
                       "ties with itself, so it always counts (and so does its mirror, every sign "
                       "flipped): with n = {n} pairs p is never below 2/2^n = {floor:g}, and never 0",
                       n=n, floor=2 / total)
    return (
        (1.0, Message("you added the absolute values (or averaged them), which no sign flip changes, so "
                      "every assignment ties with the observed one and p is always 1. Take the absolute "
                      "value after adding: |sum(s * d)|, compared with |sum(d)|")),
        (float(hits), Message("that is the number of assignments, not their share: divide by 2^n = "
                              "{total}", total=total)),
        (upper / total, one_sided),
        (lower / total, one_sided),
        (same_way / total, one_sided),
        ((hits - 1) / total, left_out),
        ((hits - 1) / (total - 1), left_out),
        (strict / total,
         Message("you counted |sum| > |observed| (strict): count |sum| >= |observed|. The observed "
                 "assignment and its mirror tie with the observed sum and always count, and so does "
                 "every other assignment that ties; with > p can even be 0")),
        ((hits - 2) / total,
         Message("the observed assignment and its mirror (every sign flipped) were left out of the "
                 "count: both are among the 2^n and tie with the observed sum, so both count. With "
                 "n = {n} pairs p is never below 2/2^n = {floor:g}, and never 0", n=n, floor=2 / total)),
        (hits / (total // 2),
         Message("you divided by 2^(n-1) = {half}: there are 2^n = {total} assignments of {n} signs, "
                 "and the mirrors are among them", half=total // 2, total=total, n=n)),
        (2 * upper / total,
         Message("you doubled a one-sided p: that counts the assignments on one side twice and misses "
                 "the other side's (when the observed sum is 0 or negative, p can exceed 1). Count "
                 "|sum| >= |observed sum| over all 2^n assignments")),
        (2 * same_way / total,
         Message("you doubled a one-sided p: where the observed sum is 0, that counts every assignment "
                 "with sum 0 twice and p can exceed 1. Count |sum| >= |observed sum| over all 2^n "
                 "assignments")),
    )


def _as_number(got):
    """The reader's p as a float, or None when it is not one number."""
    if isinstance(got, bool) or got is None:
        return None
    if isinstance(got, torch.Tensor):
        return float(got.detach().cpu().item()) if got.numel() == 1 else None
    try:
        return float(got)
    except (TypeError, ValueError):
        return None


def _input(values, kind):
    if kind == "list":
        return list(values)
    return torch.tensor(values, dtype=getattr(torch, kind))


def _where(values, kind) -> Message:
    shown = "[" + ", ".join(f"{v:g}" for v in values) + "]"
    if kind == "list":
        return Message("{n} differences {values}, a list", n=len(values), values=shown)
    return Message("{n} differences {values}, a {dtype} tensor", n=len(values), values=shown, dtype=kind)


def _quietly(checker: Checker, fn, values, kind):
    """The reader's p on a later case, for the diagnosis only: None if it fails or is no number."""
    try:
        return _as_number(checker._watched(fn, _input(values, kind)))
    except Exception:
        return None


def _close(a, b) -> bool:
    return a is not None and b is not None and math.isclose(a, b, rel_tol=0, abs_tol=_TOL)


def _diagnose(got: dict, index: int, want: float) -> Message:
    """Name the mistake whose p matches the reader's on every case it answered (else on this case)."""
    values, _ = _CASES[index]
    n, total, p = len(values), 2 ** len(values), got[index]
    table = {i: _variants(_CASES[i][0]) for i in got}
    found = None
    for k, (_, meaning) in enumerate(table[index]):
        if all(_close(got[i], table[i][k][0]) for i in got if got[i] is not None):
            found = meaning
            break
    if found is None:
        found = next((meaning for value, meaning in table[index] if _close(p, value)), None)
    if found is not None:
        return Message("got p = {got:.4g}, expected {want:.4g}: {problem}", got=p, want=want, problem=found)
    if not 0.0 <= p <= 1.0 or math.isnan(p):
        return Message("got p = {got:.4g}, which is not a share between 0 and 1: count the assignments "
                       "with |sum| >= |observed sum| and divide by 2^n = {total}", got=p, total=total)
    if not _close(p * total, round(p * total)):
        return Message("got p = {got:.6g}, which is not a whole number of assignments out of 2^n = "
                       "{total}: did you draw sign assignments at random (with a fixed seed)? Enumerate "
                       "all 2^n of them, itertools.product((1, -1), repeat=n)", got=p, total=total)
    return Message("got p = {got:.4g}, expected {want:.4g}: {hits} of the {total} assignments have |sum| "
                   ">= |observed sum| = {observed:g}", got=p, want=want, hits=round(want * total),
                   total=total, observed=abs(sum(values)))


def check_sign_flip_p(fn) -> bool:
    """Check ``fn(differences) -> p`` against ``revformer.stats.sign_flip_p``.

    ``differences``: a list or a 1-D tensor of paired differences. Six cases,
    each run twice (the exact test gives the same p every time). Prints one
    line per case and, for a wrong answer, what the symptom means; never
    raises. Returns True when every case passes.
    """

    def body(checker: Checker):
        got = {}
        for index, (values, kind) in enumerate(_CASES):
            where = _where(values, kind)
            given = _input(values, kind)
            first = checker.call(fn, given)
            second = checker.call(fn, _input(values, kind))
            unchanged = given == values if kind == "list" else torch.equal(given, _input(values, kind))
            if not unchanged:
                return _expect(checker, False, "", Message("{where}: the differences were changed in place: "
                                                           "read them only", where=where))
            p, again = _as_number(first), _as_number(second)
            if p is None:
                why = (Message("{where}: returned None, not a number: is the `return` missing?", where=where)
                       if first is None else
                       Message("{where}: returned {kind}, not one number: return p as a float", where=where,
                               kind=type(first).__name__))
                return _expect(checker, False, "", why)
            if not (_close(p, again) or math.isnan(p) and again is not None and math.isnan(again)):
                return _expect(checker, False, "", Message(
                    "{where}: two calls on the same differences gave p = {first:.4g} and {second:.4g}: you "
                    "drew sign assignments at random. The exact test enumerates all 2^n of them "
                    "(itertools.product((1, -1), repeat=n)), so it gives the same p every time",
                    where=where, first=p, second=again))
            want = sign_flip_p(values)
            total = 2 ** len(values)
            got[index] = p
            if not _close(p, want):
                for later in range(index + 1, len(_CASES)):  # the later cases tell similar mistakes apart
                    got[later] = _quietly(checker, fn, *_CASES[later])
                return _expect(checker, False, "", Message("{where}: {problem}", where=where,
                                                           problem=_diagnose(got, index, want)))
            _expect(checker, True, Message("{where}: p = {p:.4g}, {hits} of the {total} sign assignments",
                                           where=where, p=p, hits=round(p * total), total=total), "")

    return run(_TITLE, body, off_limits=(sign_flip_p, paired))


__all__ = ["check_sign_flip_p"]
