"""Chapter 11's exercise: the prefix-logit test.

The reader writes ``my_prefix_logit_change(model, inputs, causal=None)``:
the largest absolute change of the logits at the prefix positions 0-7 (all
13 classes, every sample) when the answer part (positions 8-13) of the
teacher-forced ``inputs`` ``[B,14]`` is changed by ``change_future_answers``,
both passes run with the mask setting ``causal``. The result is a float.

``check_prefix_logit_change`` runs it against
``revformer.analysis.prefix_logit_change`` on an untrained model of the book
with the mask on and off, on a copy of it whose last layer has no mask, on
a stand-in model whose only leak reaches position 7, and, when given, on a
trained model. It recognises the typical mistakes by
computing each one's result: the answer positions compared too (or one
position too many or too few), the ``causal`` argument not passed to the
model, probabilities compared instead of logits, the signed instead of the
absolute difference, a mean instead of the largest change, the same input
run twice, and the caller's ``inputs`` changed in place.
"""
from __future__ import annotations

import copy
import math
import numbers

import torch
import torch.nn as nn

from ..analysis import change_future_answers, prefix_logit_change
from ..data import PROMPT_LEN, encode
from ..model import make_model
from ..i18n import Message
from . import expect, run

_TITLE = "check_prefix_logit_change"


def _expect(checker, condition, good, bad):
    return expect(checker, condition, good, bad, width=72)


def _inputs(rows: int, seed: int) -> torch.Tensor:
    """``[rows,14]`` teacher-forced inputs of random six-digit samples."""
    generator = torch.Generator().manual_seed(seed)
    digits = torch.randint(10, (rows, 6), generator=generator)
    return torch.tensor([encode(d)[:-1] for d in digits.tolist()])


class _LeakAtSep(nn.Module):
    """A stand-in model whose only leak reaches position 7 (SEP), and only with the mask off.

    Its logits are 0 everywhere except at position 7, where, when ``causal``
    is False, class 0 scores the answer digit ``d`` at position 8 (a path
    from the future) and class 1 scores ``-0.1 d``; ``causal=None`` keeps its
    own setting, the mask on. On inputs whose digit at position 8 is 0, the
    largest change is a fall, so a test that stops before position 7 finds 0,
    and one that keeps the sign finds only the small rise of class 1.
    """

    def __init__(self):
        super().__init__()
        self.anchor = nn.Parameter(torch.zeros(1))  # so the model has a device

    def forward(self, ids, causal=None):
        logits = torch.zeros(ids.size(0), ids.size(1), 13, device=ids.device)
        if causal is False and ids.size(1) > PROMPT_LEN:
            digit = ids[:, PROMPT_LEN].float()  # [B]: the first answer digit, in the future of position 7
            logits[:, PROMPT_LEN - 1, 0] = digit
            logits[:, PROMPT_LEN - 1, 1] = -0.1 * digit
        return logits + 0 * self.anchor, []


def _last_digit_zero(rows: int, seed: int) -> torch.Tensor:
    """``[rows,14]`` inputs whose last prompt digit, and so the answer digit at position 8, is 0."""
    generator = torch.Generator().manual_seed(seed)
    digits = torch.randint(10, (rows, 6), generator=generator)
    digits[:, -1] = 0
    return torch.tensor([encode(d)[:-1] for d in digits.tolist()])


@torch.no_grad()
def _pair(model, inputs, causal, use_causal=True, change=True):
    """The logits ``[B,14,13]`` of ``inputs`` and of their changed copy."""
    device = next(model.parameters()).device
    run_it = (lambda x: model(x.to(device), causal=causal)[0]) if use_causal else (lambda x: model(x.to(device))[0])
    other = change_future_answers(inputs) if change else inputs
    return run_it(inputs), run_it(other)


def _mistakes(model, inputs, causal):
    """``(value, diagnosis)`` of each typical mistake, on this case."""
    a, b = _pair(model, inputs, causal)
    p = PROMPT_LEN
    largest = lambda d: float(d.abs().max())  # noqa: E731
    na, nb = _pair(model, inputs, causal, use_causal=False)
    return [
        (largest(a - b),
         Message("you compared all 14 positions: positions 8-13 read the changed answer digits and change "
                 "with any mask. The test compares the prefix only, positions 0-7: logits[:, :8]")),
        (largest(a[:, :p + 1] - b[:, :p + 1]),
         Message("you compared positions 0-8: position 8 holds a changed answer digit itself, so its logits "
                 "change with any mask. The prefix is positions 0-7, logits[:, :8]")),
        (largest(a[:, :p - 1] - b[:, :p - 1]),
         Message("you compared positions 0-6 only: position 7 (SEP) is part of the prefix, and it is the one "
                 "that predicts the first answer digit. Use logits[:, :8]")),
        (largest(na[:, :p] - nb[:, :p]),
         Message("you did not pass causal={causal} to the model: it ran with each layer's own setting, so "
                 "the mask you were asked to test was never switched. Call model(x, causal=causal)",
                 causal=str(causal))),
        (largest(a[:, :p].softmax(-1) - b[:, :p].softmax(-1)),
         Message("you compared probabilities (after softmax), not logits: the test measures the raw scores, "
                 "and a softmax hides a change that moves every logit of a row alike")),
        (float((a[:, :p] - b[:, :p]).max()),
         Message("you took the largest signed difference: a logit can move down as well as up. Take the "
                 "absolute value first, (a - b).abs().max()")),
        (float((a[:, :p] - b[:, :p]).abs().mean()),
         Message("you averaged the changes: the test reports the largest one, .abs().max(), since one leaking "
                 "logit is enough to show a path from the future")),
        (0.0,
         Message("your result is 0 where the future does reach the prefix: both passes read the same input. "
                 "Run the model on inputs and on change_future_answers(inputs), and compare the two")),
    ]


def _close(got: float, want: float) -> bool:
    return abs(got - want) <= 1e-6 + 1e-4 * abs(want)


def _check_case(c, fn, case) -> bool:
    name, model, inputs, causal = case
    want = prefix_logit_change(model, inputs, causal=causal)
    kept = inputs.clone()
    got = c.call(fn, model, inputs, causal)
    label = Message("{name}, causal={causal}", name=name, causal=str(causal))  # the literal, as the reader passes it
    if not torch.equal(inputs, kept):
        inputs.copy_(kept)
        return _expect(c, False, "", Message("{label}: your function changed the caller's inputs in place "
                                             "(the checker put them back). Change a copy: "
                                             "change_future_answers(inputs) returns a new tensor", label=label))
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        got = got.item()
    if isinstance(got, bool) or not isinstance(got, numbers.Real) or not math.isfinite(got):
        what = (Message("a tensor of shape {shape}", shape=list(got.shape)) if isinstance(got, torch.Tensor)
                else repr(got) if isinstance(got, numbers.Real) else Message("a {kind}", kind=type(got).__name__))
        return _expect(c, False, "", Message("{label}: return the largest change as one float, "
                                             "(a - b).abs().max().item(); got {what}", label=label, what=what))
    got = float(got)
    if _close(got, want):
        return _expect(c, True, Message("{label}: {got:.6g}, as prefix_logit_change", label=label, got=got), "")
    wrong = next((text for value, text in _mistakes(model, inputs, causal) if _close(got, value)), None)
    if wrong is None:
        return _expect(c, False, "", Message("{label}: expected {want:.6g}, got {got:.6g}", label=label,
                                             want=want, got=got))
    return _expect(c, False, "", Message("{label}: {wrong} (expected {want:.6g}, got {got:.6g})", label=label,
                                         wrong=wrong, want=want, got=got))


def _cases(model=None, inputs=None):
    untrained = make_model(seed=3).eval()
    half_masked = copy.deepcopy(untrained)
    half_masked.blocks[-1].attention.causal = False  # the last layer without its mask
    small = _inputs(16, seed=6)
    cases = [(Message("untrained model"), untrained, small, True),
             (Message("untrained model, last layer unmasked"), half_masked, small, None),
             (Message("untrained model"), untrained, small, False),
             (Message("a stand-in whose one leak reaches position 7"), _LeakAtSep(), _last_digit_zero(8, seed=7),
              False)]
    if model is not None:
        given = inputs if inputs is not None else _inputs(64, seed=8)
        cases += [(Message("trained model"), model, given, True), (Message("trained model"), model, given, False)]
    return cases


def check_prefix_logit_change(fn, model=None, inputs=None) -> bool:
    """Check the reader's ``fn(model, inputs, causal) -> float`` against ``prefix_logit_change``.

    Also on ``model`` (a trained model of the book) with ``inputs`` ``[B,14]``
    (default: 64 random samples), mask on and off. Prints a report; never
    raises on a wrong or unfinished answer. Returns True when all cases pass.
    """
    def body(c):
        for case in _cases(model, inputs):
            if not _check_case(c, fn, case):
                return

    return run(_TITLE, body, off_limits=(prefix_logit_change,))


__all__ = ["check_prefix_logit_change"]
