"""Chapter 1's exercise: six digits as the 15 token ids of one sample.

The reader writes ``my_encode(digits)``: a list of six ints 0-9 in, the
list of 15 token ids ``<BOS> d0..d5 <SEP> d5..d0 <EOS>`` out.
``check_encode`` compares it with the package's ``encode`` on a few
questions and names the usual mistake: the answer not reversed, the prompt
reversed instead of the answer, a special token missing or in the wrong
place, characters instead of ints, the caller's list reversed in place.
"""
from __future__ import annotations

from numbers import Integral

import torch

from ..data import BOS, EOS, SEP, encode, format_tokens
from . import Checker, expect, run_cases

_TITLE = "check_encode"
# Distinct digits first, so that every mistake shows; then repeated digits and zeros.
_CASES = ((3, 1, 4, 2, 0, 5), (9, 0, 0, 1, 2, 7), (0, 0, 0, 0, 0, 0), (8, 6, 7, 5, 3, 9))


def _as_ids(got):
    """The reader's result as a list, or a diagnosis of why it is not a list of ids."""
    if isinstance(got, torch.Tensor):
        if got.dim() != 1:
            return None, f"returned a tensor of shape {list(got.shape)}: return one flat list of 15 ids"
        got = got.tolist()
    if got is None:
        return None, "returned None: is the `return` missing?"
    if isinstance(got, str):
        return None, (f"returned the string {got!r}: return a list of 15 ints, such as "
                      "[10, 3, 1, ...], not text")
    if not isinstance(got, (list, tuple)):
        return None, f"returned {type(got).__name__}, not a list of ints"
    values = list(got)
    if any(isinstance(v, str) for v in values):
        return None, ("the tokens are characters (" + ", ".join(repr(v) for v in values[:3])
                      + ", ...), not ints: a token id is an int, the digit 3 is 3 and <BOS> is 10. "
                      "Build the list from ints, not from text")
    if any(isinstance(v, (list, tuple)) for v in values):
        return None, ("the list holds lists: join the parts with +, [BOS] + digits + ..., "
                      "rather than putting them in one list")
    if any(isinstance(v, bool) or not isinstance(v, Integral) for v in values):
        kinds = sorted({type(v).__name__ for v in values if not isinstance(v, Integral) or isinstance(v, bool)})
        return None, f"the ids must be ints; your list holds {', '.join(kinds)}"
    return [int(v) for v in values], None


def _variants(d):
    """(ids, what went wrong) for the usual mistakes, for digits ``d``."""
    d = list(d)
    r = d[::-1]
    return (
        ([BOS] + d + [SEP] + d + [EOS],
         "the answer is not reversed: positions 8-13 repeat the question in its own order. "
         "The answer is the digits reversed, digits[::-1]"),
        ([BOS] + r + [SEP] + d + [EOS],
         "the prompt is reversed instead of the answer: positions 1-6 must hold the question as "
         "given and positions 8-13 its reverse"),
        ([BOS] + r + [SEP] + r + [EOS],
         "both halves are reversed: the question at positions 1-6 keeps its order, only the "
         "answer at 8-13 is reversed"),
        ([EOS] + d + [SEP] + r + [BOS],
         "<BOS> and <EOS> are swapped: <BOS> (10) opens the sample at position 0, <EOS> (12) "
         "closes it at position 14"),
        ([BOS] + d + [EOS] + r + [SEP],
         "<SEP> and <EOS> are swapped: <SEP> (11) sits between question and answer at "
         "position 7, <EOS> (12) ends the sample at position 14"),
        ([BOS] + d + r + [SEP] + [EOS],
         "<SEP> is after the answer: it separates the question from the answer, at position 7"),
        ([BOS] + [SEP] + d + r + [EOS],
         "<SEP> is before the question: it separates the question from the answer, at position 7"),
    )


def _missing(d, got):
    """A sample that lacks one or more special tokens: which ones."""
    d = list(d)
    r = d[::-1]
    parts = {"<BOS>": [BOS], "<SEP>": [SEP], "<EOS>": [EOS]}
    for left_out in (("<BOS>",), ("<SEP>",), ("<EOS>",), ("<BOS>", "<EOS>"),
                     ("<BOS>", "<SEP>", "<EOS>")):
        keep = {k: ([] if k in left_out else v) for k, v in parts.items()}
        if got == keep["<BOS>"] + d + keep["<SEP>"] + r + keep["<EOS>"]:
            return " and ".join(left_out)
    return None


def _check_case(checker: Checker, fn, digits, seed) -> bool:
    caller = list(digits)
    got = checker.call(fn, caller)
    expected = encode(digits)
    where = " ".join(map(str, digits))
    if caller != list(digits):
        return expect(checker, False, "", (
            f"your function changed the caller's list: it was [{', '.join(map(str, digits))}] and "
            f"is now {caller}. list.reverse() reverses the list itself; digits[::-1] makes a "
            "reversed copy and leaves the caller's digits alone"))
    ids, problem = _as_ids(got)
    if problem:
        return expect(checker, False, "", f"digits {where}: {problem}")
    if ids == expected:
        return expect(checker, True, f"digits {where} -> {format_tokens(expected)}", "")
    if len(ids) != len(expected):
        lacking = _missing(digits, ids)
        if lacking:
            return expect(checker, False, "", (
                f"digits {where}: {len(ids)} ids, and {lacking} missing: a sample is <BOS>, six "
                "digits, <SEP>, the six digits reversed, <EOS>: 1 + 6 + 1 + 6 + 1 = 15 ids"))
        return expect(checker, False, "", (
            f"digits {where}: you returned {len(ids)} ids, a sample has 15 (<BOS>, six digits, "
            f"<SEP>, six digits, <EOS>). Yours: {ids}"))
    for variant, meaning in _variants(digits):
        if ids == variant:
            return expect(checker, False, "", f"digits {where}: {meaning}")
    for position, name in ((0, "<BOS>"), (7, "<SEP>"), (14, "<EOS>")):
        if ids[position] != expected[position]:
            return expect(checker, False, "", (
                f"digits {where}: position {position} holds {ids[position]}, it must be {name}, "
                f"id {expected[position]} (BOS, SEP, EOS are 10, 11, 12)"))
    if ids[1:7] != expected[1:7]:
        return expect(checker, False, "", (
            f"digits {where}: positions 1-6 hold {ids[1:7]}, they must be the question as given, "
            f"{list(digits)}"))
    return expect(checker, False, "", (
        f"digits {where}: positions 8-13 hold {ids[8:14]}, they must be the question reversed, "
        f"{list(digits)[::-1]}"))


def check_encode(fn) -> bool:
    """Check ``fn(digits) -> list of 15 token ids`` against ``revformer.data.encode``.

    Prints one line per question and, for a wrong answer, what the symptom
    means; never raises. Returns True when every case passes.
    """
    return run_cases(_TITLE, _CASES, _check_case, fn)


__all__ = ["check_encode"]
