"""Chapter 16's exercise: the exact two-sided sign-flip p-value of paired differences.

The reader writes ``my_sign_flip_p(differences)``: ``differences`` is a list or
a 1-D tensor of ``n`` paired differences, one a seed; the result is the share
of the ``2^n`` ways to give them signs whose sum is at least as far from 0 as
the observed sum, ``|sum(s * d)| >= |sum(d)|``, as ``revformer.stats.sign_flip_p``
computes it. The observed signs and their mirror (every sign flipped) always
count, so with ``n`` pairs p is never below ``2 / 2^n = 1 / 2^(n-1)``.

``check_sign_flip_p`` runs it on six fixed cases whose values are exact in
binary (every sum is exact in float32 and float64, so a tie is a real tie):
all of one sign, mixed signs, a negative sum, ties with the observed sum, a
sum of 0, and ten pairs. Then on differences such as 0.1, 0.2 and -0.3, which
binary cannot hold exactly, so that assignments whose sums tie come out a hair
apart: only a comparison with a tolerance counts them all. Then on two sets of
differences drawn afresh at each check (from ``random.SystemRandom``, which
leaves the seeds of ``random``, NumPy and torch alone), so that a table of the
fixed cases' answers fails. It recognises the usual mistakes by computing
each one's p on every case: a one-sided p, the observed sum's absolute value
left out, the absolute value of each difference taken first, the observed
assignment (or its mirror) left out, a strict inequality, the absolute values
added before the sum (p = 1 everywhere), the count instead of the share, a
denominator of ``2^(n-1)``, a doubled one-sided p, no tolerance for sums that
tie, and sign assignments drawn at random.
"""
from __future__ import annotations

import itertools
import math
import random

import torch

from ..i18n import Message
from ..stats import paired, sign_flip_p
from . import Checker, Unfinished, expect, run

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
# Not exact in binary: 20 of the 64 assignments tie with the observed sum, |sum| = 0.2, but in float64
# about half of them come out a hair below it, in whatever order the additions run (Python's sum,
# a matrix product, NumPy's pairwise sum): without a tolerance p is 42 or 44 of 64, not 54.
_NEAR_TIE = ([0.1, 0.2, -0.3, 0.1, 0.2, -0.1], "list")
_FRESH = 2  # cases drawn afresh at each check
_TIE = 1e-9  # far below the gap between the near tie's distinct sums (0.2) and far above its rounding


def _expect(checker: Checker, condition, good, bad) -> bool:
    return expect(checker, condition, good, bad, width=72)


def _sums(d):
    """The sum of every sign assignment, the observed one (all +1) first."""
    return [sum(s * x for s, x in zip(signs, d)) for signs in itertools.product((1, -1), repeat=len(d))]


def _fresh_cases():
    """Two cases drawn afresh, exact in binary: 7 to 9 multiples of 1/4, their p's distinct, above
    the floor and below 1.

    ``random.SystemRandom`` draws from the operating system (os.urandom): the seeds of ``random``,
    NumPy and torch, which the book's runs set, are neither read nor changed.
    """
    draw = random.SystemRandom()
    drawn, ps = [], []
    while len(drawn) < _FRESH:
        n = draw.randint(7, 9)  # never the length of a fixed case
        values = [draw.choice((-1, 1)) * draw.randint(1, 12) / 4 for _ in range(n)]
        p = sign_flip_p(values)
        if 2 / 2 ** n < p < 1 and p not in ps:
            drawn.append(values)
            ps.append(p)
    return [(values, kind) for values, kind in zip(drawn, ("list", "float64"))]


def _cases():
    """``(values, kind, role)`` of each case: the fixed ones, the near tie, the ones drawn afresh."""
    return ([(values, kind, "fixed") for values, kind in _CASES] + [(*_NEAR_TIE, "near tie")]
            + [(values, kind, "fresh") for values, kind in _fresh_cases()])


def _variants(d):
    """``(p, diagnosis)`` of each usual mistake on the differences ``d``."""
    n, total = len(d), 2 ** len(d)
    sums, observed = _sums(d), sum(d)
    hits = sum(abs(s) >= abs(observed) for s in sums)
    magnitudes = [abs(x) for x in d]
    each_first = sum(abs(s) >= sum(magnitudes) for s in _sums(magnitudes))
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
        (sum(abs(s) >= observed for s in sums) / total,
         Message("you compared |sum| with the observed sum itself, not with its absolute value: when "
                 "the observed sum is negative, every |sum| is at least as large and p is 1. Compare "
                 "|sum(s * d)| with |sum(d)|")),
        (each_first / total,
         Message("you took the absolute value of each difference before flipping the signs: then no "
                 "assignment's |sum| exceeds the observed sum(|d|), and p falls to its floor, 2/2^n = "
                 "{floor:g}, whatever the data. The signs of the differences are the data: flip the "
                 "differences as given, sum(s * d)", floor=2 / total)),
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


def _looked_up(values, want, fixed: int) -> Message:
    """The diagnosis of a wrong answer on a case drawn afresh, after every fixed case passed."""
    total = 2 ** len(values)
    return Message("your function gave the right p on the {fixed} fixed cases, which are the same at "
                   "every check, but not on these differences, drawn afresh: does it look p up in a table "
                   "of the fixed cases' answers? Compute p from the differences it is given: here {hits} of "
                   "the {total} assignments have |sum| >= |observed sum| = {observed:g}", fixed=fixed,
                   hits=round(want * total), total=total, observed=abs(sum(values)))


def _no_tolerance(values, p: float, want: float):
    """The diagnosis of a p that misses some of the near tie's tied assignments, or None."""
    total = 2 ** len(values)
    counted = p * total
    if not _close(counted, round(counted)):
        return None
    observed = abs(sum(values))
    beyond = sum(abs(s) > observed + _TIE for s in _sums(values))
    ties = round(want * total) - beyond
    if not beyond <= round(counted) < beyond + ties:
        return None
    return Message("you counted {counted} of the {ties} assignments whose |sum| ties with |observed sum| "
                   "= {observed:g}: 0.1, 0.2 and 0.3 are not exact in binary (0.1 + 0.2 != 0.3), so sums "
                   "that tie can differ in the last bit, by the order of the additions. Compare with a "
                   "tolerance, |sum| >= |observed sum| - tol, with tol = 1e-12 * max(1, sum(|d|)), the "
                   "sums in float64", counted=round(counted) - beyond, ties=ties, observed=observed)


def _diagnose(got: dict, index: int, want: float, cases) -> Message:
    """Name the mistake whose p matches the reader's on every case it answered (else on this case).

    A case drawn afresh fails only after every fixed case passed: the p's were looked up. The near
    tie fails a function that compares without a tolerance; it takes no part in matching the
    mistakes on the other cases, whose p it could give otherwise by the order of the additions.
    """
    values, _, role = cases[index]
    n, total, p = len(values), 2 ** len(values), got[index]
    if role == "fresh":
        return Message("got p = {got:.4g}, expected {want:.4g}: {problem}", got=p, want=want,
                       problem=_looked_up(values, want, sum(role != "fresh" for *_, role in cases)))
    if role == "near tie":
        found = _no_tolerance(values, p, want)
        if found is not None:
            return Message("got p = {got:.4g}, expected {want:.4g}: {problem}", got=p, want=want,
                           problem=found)
    compared = [i for i in got if got[i] is not None and (i == index or cases[i][2] != "near tie")]
    table = {i: _variants(cases[i][0]) for i in compared}
    found = None
    for k, (_, meaning) in enumerate(table[index]):
        if all(_close(got[i], table[i][k][0]) for i in compared):
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

    ``differences``: a list or a 1-D tensor of paired differences. Six fixed
    cases exact in binary, one whose sums tie only up to rounding (0.1, 0.2,
    -0.3, ...) and two drawn afresh at each check, each run twice (the exact
    test gives the same p every time). Prints one line per case and, for a
    wrong answer, what the symptom means; never raises. Returns True when
    every case passes.
    """

    def body(checker: Checker):
        got = {}
        cases = _cases()
        fixed = len(cases) - _FRESH
        for index, (values, kind, role) in enumerate(cases):
            where = _where(values, kind)
            if role == "fresh":
                where = Message("{case}, drawn afresh for this check", case=where)
            want = sign_flip_p(values)
            given = _input(values, kind)
            try:
                first = checker.call(fn, given)
                second = checker.call(fn, _input(values, kind))
            except Unfinished:
                if role == "fresh" and checker.lines and checker.lines[-1].marker == "ERROR":
                    checker.hint(_looked_up(values, want, fixed), width=72)
                raise
            unchanged = given == values if kind == "list" else torch.equal(given, _input(values, kind))
            if not unchanged:
                return _expect(checker, False, "", Message("{where}: the differences were changed in place: "
                                                           "read them only", where=where))
            p, again = _as_number(first), _as_number(second)
            if p is None and role == "fresh":
                return _expect(checker, False, "", Message(
                    "{where}: returned {kind}, not a number: {problem}", where=where,
                    kind=type(first).__name__, problem=_looked_up(values, want, fixed)))
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
            total = 2 ** len(values)
            got[index] = p
            if not _close(p, want):
                for later in range(index + 1, len(cases)):  # the later cases tell similar mistakes apart
                    got[later] = _quietly(checker, fn, *cases[later][:2])
                return _expect(checker, False, "", Message("{where}: {problem}", where=where,
                                                           problem=_diagnose(got, index, want, cases)))
            if role == "fresh":  # the same line at every check: a page that runs it prints the same output
                _expect(checker, True, Message("differences drawn afresh for this check: p as the exact test "
                                               "gives it"), "")
                continue
            _expect(checker, True, Message("{where}: p = {p:.4g}, {hits} of the {total} sign assignments",
                                           where=where, p=p, hits=round(p * total), total=total), "")

    return run(_TITLE, body, off_limits=(sign_flip_p, paired))


__all__ = ["check_sign_flip_p"]
