"""Chapter 6's exercise: split a ``[B,T,D]`` tensor into heads and merge it back.

The reader writes ``my_split_heads(x, num_heads)``, ``[B,T,D] -> [B,H,T,Dh]``,
and ``my_merge_heads(x)``, ``[B,H,T,Dh] -> [B,T,D]`` with the heads side by
side, head 0 first. ``check_split_merge`` feeds both a tensor whose every
number says where it came from (``1000*b + 100*t + d``: sample ``b``,
position ``t``, feature ``d``), so a wrong answer can be read off: a reshape
without the transpose mixes positions, the transpose followed by ``view``
raises, averaged heads lose three quarters of the features, and a merge that
does not undo the split puts features at the wrong positions.
"""
from __future__ import annotations

import torch

from ..attention import MultiHeadSelfAttention
from ..i18n import Message
from . import Checker, Line, Unfinished, run

TITLE = "check_split_merge"
# (batch, positions, width, heads): T, H and Dh all differ in each case, so a
# result of the wrong shape says which axis went wrong. The last case has one
# head, where the split is a reshape; it checks that nothing is fixed at 4.
_CASES = ((2, 5, 64, 4), (1, 3, 48, 8), (2, 5, 64, 1))

_VIEW_ERROR = "view size is not compatible"
_VIEW_HINT = Message("transpose(1, 2) does not move any number: it returns a view of the same "
                     "memory with two strides swapped, so the positions of one head are no longer "
                     "next to each other. view() never copies and needs that order, hence the error. "
                     "Call .contiguous() before .view(...), or use .reshape(...), which copies when "
                     "it has to")
_SHAPE_HINT = Message("read B, T and D (or B, H, T and Dh) from x.shape and use num_heads; "
                      "a fixed 4, 16 or 64 breaks for other sizes")


def _coded(batch: int, length: int, width: int) -> torch.Tensor:
    """``[B,T,D]`` whose entry ``[b,t,d]`` is ``1000*b + 100*t + d``: each number names its source."""
    b = torch.arange(batch).view(-1, 1, 1)
    t = torch.arange(length).view(1, -1, 1)
    d = torch.arange(width).view(1, 1, -1)
    return (1000 * b + 100 * t + d).float()


def _name(value: float) -> Message:
    value = int(value)
    return Message("feature {feature} of position {position}", feature=value % 100,
                   position=(value % 1000) // 100)


def _reference_split(x: torch.Tensor, heads: int) -> torch.Tensor:
    b, t, d = x.shape
    return x.view(b, t, heads, d // heads).transpose(1, 2)  # [B,H,T,Dh]


def _reference_merge(x: torch.Tensor) -> torch.Tensor:
    b, h, t, dh = x.shape
    return x.transpose(1, 2).reshape(b, t, h * dh)  # [B,T,D]


def _first_difference(got: torch.Tensor, expected: torch.Tensor) -> tuple:
    index = tuple(int(i) for i in (got != expected).nonzero()[0])
    return index, got[index].item(), expected[index].item()


def _attempt(checker: Checker, fn, *args):
    """``checker.call``, with a hint when the reader's ``view`` or a fixed size raised."""
    try:
        return checker.call(fn, *args)
    except Unfinished:
        last = checker.lines[-1]
        if last.marker == "TODO" and hasattr(fn, "__name__"):
            checker.lines[-1] = Line("TODO", Message("{name} still raises NotImplementedError: fill it in.",
                                                     name=fn.__name__))
        elif _VIEW_ERROR in last:
            checker.hint(_VIEW_HINT)
        elif last.marker == "ERROR":
            checker.hint(_SHAPE_HINT)
        raise


def _fail(checker: Checker, message: Message) -> bool:
    return checker.expect(False, "", message)


def _is_tensor(checker: Checker, got, what: str) -> bool:
    if isinstance(got, torch.Tensor):
        return True
    if got is None:
        return _fail(checker, Message("{what} returned {kind}, not a tensor: is the `return` missing?",
                                      what=what, kind=type(got).__name__))
    return _fail(checker, Message("{what} returned {kind}, not a tensor", what=what, kind=type(got).__name__))


def _check_split(checker: Checker, split_fn, case) -> bool:
    b, t, d, h = case
    dh = d // h
    x = _coded(b, t, d)
    where = (Message("split of [B,T,D] {shape} into {h} heads", shape=[b, t, d], h=h) if h > 1
             else Message("split of [B,T,D] {shape} into {h} head", shape=[b, t, d], h=h))
    got = _attempt(checker, split_fn, x.clone(), h)
    if not _is_tensor(checker, got, "split"):
        return False
    shape = list(got.shape)
    if shape == [b, t, h, dh] and h > 1:
        return _fail(checker, Message("{where}: got [B,T,H,Dh] = {shape}, the transpose is missing. "
                                      "Move the heads before the positions, .transpose(1, 2), so that "
                                      "each head holds one [T,Dh] matrix for q @ k^T", where=where, shape=shape))
    if shape != [b, h, t, dh]:
        if h != 4:
            return _fail(checker, Message("{where}: expected [B,H,T,Dh] = {expected}, got {shape} (use "
                                          "num_heads, not a fixed 4)", where=where, expected=[b, h, t, dh],
                                          shape=shape))
        return _fail(checker, Message("{where}: expected [B,H,T,Dh] = {expected}, got {shape}", where=where,
                                      expected=[b, h, t, dh], shape=shape))
    got = got.detach().float()
    expected = _reference_split(x, h)
    if torch.equal(got, expected):
        return checker.expect(True, Message("{where}: {shape}, head h holds features {dh}h to {dh}h+{last}",
                                            where=where, shape=shape, dh=dh, last=dh - 1), "")
    if torch.equal(got, x.reshape(b, h, t, dh)):
        return _fail(checker, Message(
            "{where}: the shape is right but positions are mixed: x was reshaped straight to "
            "[B,H,T,Dh], which cuts the numbers in memory order. Your head 0, position 1 starts "
            "with {name}, not feature 0 of position 1. Reshape to [B,T,H,Dh] "
            "first, then transpose(1, 2)", where=where, name=_name(got[0, 0, 1, 0])))
    if torch.equal(got, x.view(b, t, dh, h).permute(0, 3, 1, 2)):
        return _fail(checker, Message(
            "{where}: the features are dealt out in turn (head 0 gets features 0, {h}, {h2}, ...): "
            "x was viewed as [B,T,Dh,H]. Each head takes one block of {dh} neighbouring "
            "features: view as [B,T,H,Dh], head 0 is features 0-{last}", where=where, h=h, h2=2 * h, dh=dh,
            last=dh - 1))
    index, have, want = _first_difference(got, expected)
    return _fail(checker, Message("{where}: at [b,h,t,i] = {index} you have {have}; it should be {want}",
                                  where=where, index=list(index), have=_name(have), want=_name(want)))


def _check_merge(checker: Checker, merge_fn, case) -> bool:
    b, t, d, h = case
    dh = d // h
    x = _coded(b, t, d)
    heads = _reference_split(x, h).contiguous()  # [B,H,T,Dh], laid out as weights @ v makes it
    where = Message("merge of [B,H,T,Dh] {shape}", shape=[b, h, t, dh])
    got = _attempt(checker, merge_fn, heads.clone())
    if not _is_tensor(checker, got, "merge"):
        return False
    shape = list(got.shape)
    got = got.detach().float()
    if shape == [b, t, dh] and h > 1:
        if torch.allclose(got, heads.mean(1)):
            how = Message("you averaged the heads (mean over dim 1)")
        elif torch.allclose(got, heads.sum(1)):
            how = Message("you summed the heads (sum over dim 1)")
        else:
            how = Message("you combined the heads into one")
        return _fail(checker, Message(
            "{where}: got {shape}, {dh} features a position instead of {d}: {how}. The {h} "
            "heads' outputs become one {dh}-wide vector and nothing says which head said what; "
            "concatenate them side by side into [B,T,{d}] so that out_proj can weigh each head "
            "with its own columns", where=where, shape=shape, dh=dh, d=d, how=how, h=h))
    if shape == [b, t, h, dh] and h > 1:
        return _fail(checker, Message("{where}: got [B,T,H,Dh] = {shape}: after the transpose, "
                                      "reshape to [B,T,{d}] to put the heads side by side", where=where,
                                      shape=shape, d=d))
    if shape != [b, t, d]:
        return _fail(checker, Message("{where}: expected [B,T,D] = {expected}, got {shape}", where=where,
                                      expected=[b, t, d], shape=shape))
    if torch.equal(got, x):
        return checker.expect(True, Message("{where}: {shape}, undoes the split exactly", where=where,
                                            shape=shape), "")
    if torch.equal(got, heads.reshape(b, t, d)):
        return _fail(checker, Message(
            "{where}: the shape is right but merge does not undo split: [B,H,T,Dh] was reshaped "
            "straight to [B,T,D], so your position 1 starts with {name}, "
            "not feature 0 of position 1. Transpose back to [B,T,H,Dh] first, then reshape", where=where,
            name=_name(got[0, 1, 0])))
    if torch.equal(got, heads.permute(0, 2, 3, 1).reshape(b, t, d)):
        return _fail(checker, Message(
            "{where}: the heads' features are interleaved (feature 1 of your output is feature 0 "
            "of head 1): the heads were moved last, [B,T,Dh,H]. Use [B,T,H,Dh] before the "
            "reshape, so that head 0 fills features 0-{last}", where=where, last=dh - 1))
    index, have, want = _first_difference(got, x)
    return _fail(checker, Message("{where}: at [b,t,d] = {index} you have {have}; it should be {want}: "
                                  "merge must undo split", where=where, index=list(index), have=_name(have),
                                  want=_name(want)))


def check_split_merge(split_fn, merge_fn) -> bool:
    """Check ``split_fn(x [B,T,D], num_heads) -> [B,H,T,Dh]`` and ``merge_fn(x [B,H,T,Dh]) -> [B,T,D]``.

    The two are checked separately (merge gets the package's split, a
    transposed view), then together: ``merge(split(x))`` must give ``x``.
    Prints one line per check and, for a wrong answer, what the symptom
    means; never raises. Returns True when every case passes.
    """
    def body(checker):
        for part, fn in ((_check_split, split_fn), (_check_merge, merge_fn)):
            try:
                for case in _CASES:
                    if not part(checker, fn, case):
                        break
            except Unfinished:
                pass
        if checker.passed:
            x = _coded(2, 5, 64)
            back = checker.call(merge_fn, checker.call(split_fn, x.clone(), 4))
            checker.expect(torch.equal(back.detach().float(), x), Message("merge(split(x)) gives x back"),
                           Message("merge(split(x)) does not give x back"))

    return run(TITLE, body, off_limits=(MultiHeadSelfAttention.split_heads,
                                        MultiHeadSelfAttention.merge_heads))


__all__ = ["check_split_merge"]
