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
from .. import lengths
from ..i18n import Message
from . import Checker, expect, run_cases

_TITLE = "check_encode"
# Distinct digits first, so that every mistake shows; then repeated digits and zeros.
_CASES = ((3, 1, 4, 2, 0, 5), (9, 0, 0, 1, 2, 7), (0, 0, 0, 0, 0, 0), (8, 6, 7, 5, 3, 9))


def _as_ids(got):
    """The reader's result as a list, or a diagnosis of why it is not a list of ids."""
    if isinstance(got, torch.Tensor):
        if got.dim() != 1:
            return None, Message("returned a tensor of shape {shape}: return one flat list of 15 ids",
                                 shape=list(got.shape))
        got = got.tolist()
    if got is None:
        return None, Message("returned None: is the `return` missing?")
    if isinstance(got, str):
        return None, Message("returned the string {text}: return a list of 15 ints, such as "
                             "[10, 3, 1, ...], not text", text=repr(got))
    if not isinstance(got, (list, tuple)):
        return None, Message("returned {kind}, not a list of ints", kind=type(got).__name__)
    values = list(got)
    if any(isinstance(v, str) for v in values):
        return None, Message("the tokens are characters ({first}, ...), not ints: a token id is an int, "
                             "the digit 3 is 3 and <BOS> is 10. Build the list from ints, not from text",
                             first=", ".join(repr(v) for v in values[:3]))
    if any(isinstance(v, (list, tuple)) for v in values):
        return None, Message("the list holds lists: join the parts with +, [BOS] + digits + ..., "
                             "rather than putting them in one list")
    if any(isinstance(v, bool) or not isinstance(v, Integral) for v in values):
        kinds = sorted({type(v).__name__ for v in values if not isinstance(v, Integral) or isinstance(v, bool)})
        return None, Message("the ids must be ints; your list holds {kinds}", kinds=", ".join(kinds))
    return [int(v) for v in values], None


def _variants(d):
    """(ids, what went wrong) for the usual mistakes, for digits ``d``."""
    d = list(d)
    r = d[::-1]
    return (
        ([BOS] + d + [SEP] + d + [EOS],
         Message("the answer is not reversed: positions 8-13 repeat the question in its own order. "
                 "The answer is the digits reversed, digits[::-1]")),
        ([BOS] + r + [SEP] + d + [EOS],
         Message("the prompt is reversed instead of the answer: positions 1-6 must hold the question as "
                 "given and positions 8-13 its reverse")),
        ([BOS] + r + [SEP] + r + [EOS],
         Message("both halves are reversed: the question at positions 1-6 keeps its order, only the "
                 "answer at 8-13 is reversed")),
        ([EOS] + d + [SEP] + r + [BOS],
         Message("<BOS> and <EOS> are swapped: <BOS> (10) opens the sample at position 0, <EOS> (12) "
                 "closes it at position 14")),
        ([BOS] + d + [EOS] + r + [SEP],
         Message("<SEP> and <EOS> are swapped: <SEP> (11) sits between question and answer at "
                 "position 7, <EOS> (12) ends the sample at position 14")),
        ([BOS] + d + r + [SEP] + [EOS],
         Message("<SEP> is after the answer: it separates the question from the answer, at position 7")),
        ([BOS] + [SEP] + d + r + [EOS],
         Message("<SEP> is before the question: it separates the question from the answer, at position 7")),
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
            return left_out
    return None


def _joined(names) -> Message | str:
    """``<BOS>``, ``<BOS> and <EOS>``, ``<BOS> and <SEP> and <EOS>``: the tokens left out."""
    if len(names) == 1:
        return names[0]
    if len(names) == 2:
        return Message("{first} and {second}", first=names[0], second=names[1])
    return Message("{first} and {second} and {third}", first=names[0], second=names[1], third=names[2])


def _check_case(checker: Checker, fn, digits, seed) -> bool:
    caller = list(digits)
    got = checker.call(fn, caller)
    expected = encode(digits)
    where = " ".join(map(str, digits))
    if caller != list(digits):
        return expect(checker, False, "", Message(
            "your function changed the caller's list: it was {before} and is now {after}. list.reverse() "
            "reverses the list itself; digits[::-1] makes a reversed copy and leaves the caller's digits "
            "alone", before=f"[{', '.join(map(str, digits))}]", after=caller))
    ids, problem = _as_ids(got)
    if problem:
        return expect(checker, False, "", Message("digits {where}: {problem}", where=where, problem=problem))
    if ids == expected:
        return expect(checker, True, Message("digits {where} -> {tokens}", where=where,
                                             tokens=format_tokens(expected)), "")
    if len(ids) != len(expected):
        lacking = _missing(digits, ids)
        if lacking:
            return expect(checker, False, "", Message(
                "digits {where}: {count} ids, and {lacking} missing: a sample is <BOS>, six "
                "digits, <SEP>, the six digits reversed, <EOS>: 1 + 6 + 1 + 6 + 1 = 15 ids",
                where=where, count=len(ids), lacking=_joined(lacking)))
        return expect(checker, False, "", Message(
            "digits {where}: you returned {count} ids, a sample has 15 (<BOS>, six digits, "
            "<SEP>, six digits, <EOS>). Yours: {ids}", where=where, count=len(ids), ids=ids))
    for variant, meaning in _variants(digits):
        if ids == variant:
            return expect(checker, False, "", Message("digits {where}: {problem}", where=where, problem=meaning))
    for position, name in ((0, "<BOS>"), (7, "<SEP>"), (14, "<EOS>")):
        if ids[position] != expected[position]:
            return expect(checker, False, "", Message(
                "digits {where}: position {position} holds {got}, it must be {name}, "
                "id {want} (BOS, SEP, EOS are 10, 11, 12)", where=where, position=position,
                got=ids[position], name=name, want=expected[position]))
    if ids[1:7] != expected[1:7]:
        return expect(checker, False, "", Message(
            "digits {where}: positions 1-6 hold {got}, they must be the question as given, {want}",
            where=where, got=ids[1:7], want=list(digits)))
    return expect(checker, False, "", Message(
        "digits {where}: positions 8-13 hold {got}, they must be the question reversed, {want}",
        where=where, got=ids[8:14], want=list(digits)[::-1]))


def check_encode(fn) -> bool:
    """Check ``fn(digits) -> list of 15 token ids`` against ``revformer.data.encode``.

    Prints one line per question and, for a wrong answer, what the symptom
    means; never raises. Returns True when every case passes.
    """
    return run_cases(_TITLE, _CASES, _check_case, fn, off_limits=(encode, lengths.sample))


__all__ = ["check_encode"]
