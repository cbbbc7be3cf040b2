"""Chapter 2's exercise: full samples cut into shifted inputs and labels.

The reader writes ``my_split_inputs_labels(full)``: full samples ``[B,15]``
in, ``(inputs, labels)`` out, both ``[B,14]``: the inputs are the first 14
tokens, the labels the last 14, and the labels of the prompt positions 0-6
are -100. ``check_split_inputs_labels`` compares it with the package's
``split_inputs_labels`` and names the usual mistake: labels not shifted,
prompt labels not ignored, one position too many or too few ignored, a
wrong fill value, inputs cut at the wrong end or left a view with gaps
(not contiguous), the caller's tensor changed in place.
"""
from __future__ import annotations

import torch

from ..data import IGNORE_INDEX, PROMPT_LEN, encode, split_inputs_labels
from .. import lengths
from ..i18n import Message
from . import Checker, Unfinished, expect, run_cases

_TITLE = "check_split_inputs_labels"
_CASES = (3, 5, 1)  # batch sizes: a fixed size shows up as a wrong shape


def _batch(size: int, seed: int) -> torch.Tensor:
    """``[size,15]`` samples of random questions (distinct digits in each, so every shift shows)."""
    generator = torch.Generator().manual_seed(100 + seed)
    rows = [encode(torch.randperm(10, generator=generator)[:6].tolist()) for _ in range(size)]
    return torch.tensor(rows)


def _ignored(labels: torch.Tensor, count: int, fill=IGNORE_INDEX) -> torch.Tensor:
    out = labels.clone()
    out[:, :count] = fill
    return out


def _label_variants(full):
    """(labels, what went wrong) for the usual mistakes of the labels alone."""
    nxt = full[:, 1:]
    same = full[:, :-1]
    first = PROMPT_LEN - 1  # 7 ignored labels
    return (
        (_ignored(same, first),
         Message("your labels are not shifted: position 7's label is <SEP>, its own input, but it should "
                 "be the first answer digit, the token at position 8. Take labels from full[:, 1:]")),
        (same.clone(),
         Message("your labels are the inputs: not shifted (position i must be labelled with the token at "
                 "i+1, full[:, 1:]) and the prompt labels are not set to -100")),
        (nxt.clone(),
         Message("the prompt labels are not ignored: positions 0-6 are labelled with the question digits "
                 "and <SEP>, which the loss would then grade. Set labels[:, :7] = -100")),
        (_ignored(nxt, first + 1),
         Message("one position too many is ignored: position 7 (<SEP>) predicts the first answer digit and "
                 "must keep its label. Ignore positions 0-6, labels[:, :7], that is PROMPT_LEN - 1 labels")),
        (_ignored(nxt, first - 1),
         Message("one position too few is ignored: position 6's label is <SEP>, a prompt token, and must "
                 "be -100 too. Ignore positions 0-6, labels[:, :7]")),
        (_ignored(nxt, first + 2),
         Message("two positions too many are ignored (0-8): PROMPT_LEN is 8 tokens, but the labels are "
                 "shifted by one, so only the first PROMPT_LEN - 1 = 7 labels belong to the prompt")),
        (_ignored(nxt, first, 0),
         Message("the ignored labels are 0, which is a real token, the digit 0: the loss would train "
                 "positions 0-6 to predict 0. Use -100, the ignore_index of F.cross_entropy")),
        (full[:, 8:].clone(),
         Message("the labels are only the seven answer tokens: keep one label per input position, [B,14], "
                 "with -100 at positions 0-6")),
    )


def _check_case(checker: Checker, fn, size, seed) -> bool:
    full = _batch(size, seed)
    given = full.clone()
    got = checker.call(fn, given)
    inputs, labels = split_inputs_labels(full)
    where = Message("full {shape}", shape=list(full.shape))
    if not torch.equal(given, full):
        return expect(checker, False, "", Message(
            "your function changed the caller's `full`: the -100s were written into the "
            "samples themselves. full[:, 1:] is a view of the same memory, not a copy; take "
            "labels = full[:, 1:].clone() before writing -100 into it"))
    if got is None:
        return expect(checker, False, "", Message("returned None: is the `return` missing?"))
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return expect(checker, False, "", Message(
            "returned {kind}: return two tensors, inputs and labels, as `return inputs, labels`",
            kind=type(got).__name__))
    got_inputs, got_labels = got
    if not all(isinstance(t, torch.Tensor) for t in got):
        return expect(checker, False, "", Message("return two tensors, inputs and labels"))
    if got_inputs.shape == labels.shape and got_labels.shape == inputs.shape and (
            torch.equal(got_labels, inputs) and torch.equal(got_inputs, labels)):
        return expect(checker, False, "", Message("inputs and labels are swapped: return inputs, labels"))
    for name, tensor in (("inputs", got_inputs), ("labels", got_labels)):
        if list(tensor.shape) != [size, 14]:
            shape = list(tensor.shape)
            if shape == [size, 15]:
                extra = Message("the 15 tokens were not cut; drop one token, the last for the inputs, the "
                                "first for the labels")
            elif tensor.dim() == 2 and tensor.size(0) != size:
                extra = Message("the batch has {size} samples; take every row, full[:, ...]", size=size)
            elif shape == [size, 7]:
                extra = Message("keep one entry per input position, 14, with -100 where ignored")
            else:
                return expect(checker, False, "", Message("{where}: {name} has shape {shape}, it must be "
                                                          "[{size}, 14]", where=where, name=name, shape=shape,
                                                          size=size))
            return expect(checker, False, "", Message("{where}: {name} has shape {shape}, it must be "
                                                      "[{size}, 14]: {extra}", where=where, name=name,
                                                      shape=shape, size=size, extra=extra))
    if got_inputs.dtype.is_floating_point or got_labels.dtype.is_floating_point:
        return expect(checker, False, "", Message(
            "the tensors hold floats: token ids and labels are integers, which the embedding "
            "and F.cross_entropy need (keep the dtype of full, or .long())"))
    if not torch.equal(got_inputs, inputs):
        if torch.equal(got_inputs, full[:, 1:]):
            return expect(checker, False, "", Message(
                "{where}: your inputs start at position 1: the inputs are the first 14 tokens, "
                "full[:, :-1], so <BOS> at position 0 is read and <EOS> at position 14 is not", where=where))
        return expect(checker, False, "", Message(
            "{where}: your inputs are not the first 14 tokens of each sample, full[:, :-1]", where=where))
    if torch.equal(got_labels, labels) and not got_inputs.is_contiguous():
        return expect(checker, False, "", Message(
            "{where}: your inputs hold the right tokens, but as a view with a gap at the end of every "
            "row (full[:, :-1] skips each row's last token, so inputs.is_contiguous() is False): "
            "view() cannot reshape such a tensor later. Call .contiguous() on it", where=where))
    if torch.equal(got_labels, labels):
        return expect(checker, True, Message(
            "{where} -> inputs and labels [{size}, 14]; labels shifted by one, -100 at positions "
            "0-6, the caller's tensor untouched", where=where, size=size), "")
    for variant, meaning in _label_variants(full):
        if variant.shape == got_labels.shape and torch.equal(got_labels, variant):
            return expect(checker, False, "", Message("{where}: {problem}", where=where, problem=meaning))
    kept = got_labels[:, PROMPT_LEN - 1:]
    if not torch.equal(kept, labels[:, PROMPT_LEN - 1:]):
        return expect(checker, False, "", Message(
            "{where}: the labels of positions 7-13 must be the tokens at 8-14, full[:, 8:] (the six "
            "answer digits and <EOS>)", where=where))
    prompt = got_labels[:, :PROMPT_LEN - 1]  # [B,7]
    wrong = (prompt != IGNORE_INDEX).any(dim=1).nonzero().flatten().tolist()
    if wrong == list(range(1, len(prompt))):
        return expect(checker, False, "", Message(
            "{where}: positions 0-6 hold -100 in sample 0 only; sample 1's are {labels}. y[0, :7] "
            "writes one row: write y[:, :7] = -100, every sample", where=where, labels=prompt[1].tolist()))
    return expect(checker, False, "", Message(
        "{where}: the labels of positions 0-6 must be -100 in every sample; sample {row}'s are "
        "{labels}", where=where, row=wrong[0], labels=prompt[wrong[0]].tolist()))


def check_split_inputs_labels(fn) -> bool:
    """Check ``fn(full [B,15]) -> (inputs [B,14], labels [B,14])`` against the package.

    Prints one line per batch and, for a wrong answer, what the symptom
    means; never raises. Returns True when every case passes.
    """
    def check_case(checker, fn, size, seed):
        try:
            return _check_case(checker, fn, size, seed)
        except Unfinished:
            if checker.lines[-1].marker == "ERROR":
                checker.hint(Message("slice every row and the token axis: full[:, :-1] and full[:, 1:]; "
                                     "the batch size is full.size(0), not a fixed number"), width=76)
            raise

    return run_cases(_TITLE, _CASES, check_case, fn,
                     off_limits=(split_inputs_labels, lengths.inputs_labels))


__all__ = ["check_split_inputs_labels"]
