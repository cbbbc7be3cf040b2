"""Chapter 9's exercise: greedy decoding, seven forward passes from the prompt.

The reader writes ``my_greedy_decode(model, prompts)``: ``[B,8]`` prompts in,
``[B,7]`` greedy tokens out (six digits and EOS), one full forward pass per
new token, reading the logits of the last position, feeding each new token
back, and keeping EOS once a row has emitted it.

``check_greedy_decode`` runs it first on a scripted stand-in model, built so
that each typical mistake gives its own wrong answer, then on an untrained
model of the book (and on a trained one, when given), always against
``revformer.generate.generate``.
"""
from __future__ import annotations

import torch
import torch.nn as nn

from ..data import EOS, PROMPT_LEN, SEP, SEQ_LEN, encode, format_tokens
from ..generate import generate, generate_cached, greedy
from ..model import make_model
from .. import lengths
from ..i18n import Message
from . import run

STEPS = SEQ_LEN + 1  # six digits and EOS


class _StandIn(nn.Module):
    """A scripted stand-in for a trained model, whose mistakes are chosen.

    At every position it predicts from the tokens up to that position only,
    as a causal model does:

    - prompt positions 0-6 predict SEP (a junk guess, as a real model makes
      where no answer is due);
    - answer step ``s`` (prefix of ``8 + s`` tokens) predicts the right digit
      shifted by however far the token fed at the previous step was off, so a
      model fed its own wrong digit stays wrong and one fed the true answer
      recovers; step 6 predicts EOS;
    - ``bias[b]`` adds a mistake at step 0 of row ``b``; ``early_eos[b]``
      makes row ``b`` emit EOS at that step; after an EOS it writes a digit
      again (it has not learned to stop), which is what ``keep EOS`` hides.

    Every call's input is recorded in ``seen``.
    """

    def __init__(self, bias, early_eos):
        super().__init__()
        self.bias = torch.tensor(bias)
        self.early_eos = torch.tensor(early_eos)
        self.anchor = nn.Parameter(torch.zeros(1))  # so the model has a device
        self.seen: list[torch.Tensor] = []

    def _next(self, prefix: torch.Tensor) -> torch.Tensor:
        size = prefix.size(0)
        if prefix.size(1) < PROMPT_LEN:
            return torch.full((size,), SEP)
        step = prefix.size(1) - PROMPT_LEN
        if step >= SEQ_LEN:
            return torch.full((size,), EOS)
        truth = prefix[:, 1:PROMPT_LEN - 1].flip(1)  # the six answer digits
        last = prefix[:, -1]
        if step == 0:
            token = (truth[:, 0] + self.bias) % 10
        else:
            offset = (last - truth[:, step - 1]) % 10
            token = (truth[:, step] + offset) % 10
            token = torch.where(last == EOS, torch.full_like(token, 4), token)
        return torch.where(self.early_eos == step, torch.full_like(token, EOS), token)

    def forward(self, ids, causal=None):
        ids = ids.detach().cpu().long()
        self.seen.append(ids.clone())
        logits = torch.zeros(ids.size(0), ids.size(1), 13)
        rows = torch.arange(ids.size(0))
        for position in range(ids.size(1)):
            logits[rows, position, self._next(ids[:, :position + 1])] = 5.0
        return logits.to(self.anchor.device), []


# Row 0: a perfect answer. Row 1: the first digit is off by one and, fed back,
# stays off. Row 2: EOS at step 3, then digits again unless EOS is kept.
_DIGITS = [(3, 1, 4, 2, 0, 5), (7, 7, 2, 9, 8, 6), (0, 1, 2, 3, 4, 5)]
_BIAS = [0, 1, 0]
_EARLY_EOS = [-1, -1, 3]


def _prompts(digits) -> torch.Tensor:
    return torch.tensor([encode(d)[:PROMPT_LEN] for d in digits])


@torch.no_grad()
def _decode(model, prompts, position=-1, feed_back=True, keep_eos=True, teacher=False):
    """Greedy decoding with one chosen mistake, to recognise the reader's."""
    tokens = prompts.clone()
    truth = prompts[:, 1:PROMPT_LEN - 1].flip(1)
    finished = torch.zeros(prompts.size(0), dtype=torch.bool)
    new = []
    for step in range(STEPS):
        logits, _ = model(tokens)
        token = logits[:, position].argmax(-1).cpu()
        if keep_eos:
            token = token.masked_fill(finished, EOS)
            finished |= token == EOS
        new.append(token)
        if teacher:
            fed = truth[:, step] if step < SEQ_LEN else torch.full_like(token, EOS)
        else:
            fed = token
        if feed_back:
            tokens = torch.cat([tokens, fed.unsqueeze(1)], dim=1)
    return torch.stack(new, dim=1)


def _check_output(c, out, rows: int) -> bool:
    """The shape and type every answer must have; says what is off."""
    if not isinstance(out, torch.Tensor):
        return c.expect(False, "", Message("return a torch.Tensor of token ids [B,7], got {kind}",
                                           kind=type(out).__name__))
    shape = list(out.shape)
    if out.dim() == 2 and out.size(0) == rows and out.size(1) == SEQ_LEN:
        return c.expect(False, "", Message("got shape {shape}: six tokens, but the answer has seven, six "
                                           "digits and EOS. Run the loop SEQ_LEN + 1 = 7 times: the 7th token "
                                           "is EOS, and sequence accuracy needs it", shape=shape))
    if out.dim() == 2 and out.size(0) == rows and out.size(1) == PROMPT_LEN + STEPS:
        return c.expect(False, "", Message("got shape {shape}: the prompt and the new tokens. Return only "
                                           "the seven new tokens, tokens[:, 8:]", shape=shape))
    if out.dim() != 2 or out.size(0) != rows or out.size(1) != STEPS:
        return c.expect(False, "", Message("expected shape [{rows},7] (one row a prompt, seven new tokens), "
                                           "got {shape}", rows=rows, shape=shape))
    if out.dtype.is_floating_point or out.dtype == torch.bool:
        return c.expect(False, "", Message("token ids must be integers (argmax gives torch.long), got {dtype}",
                                           dtype=out.dtype))
    return True


def _diagnose(model, prompts, out, expected) -> Message:
    """Name the mistake whose output the reader's answer reproduces."""
    lengths = sorted({ids.size(1) for ids in model.seen})
    if lengths == [PROMPT_LEN]:
        return Message("every forward pass got the same 8-token prompt, so every step predicts the same "
                       "token: append each new token to the input before the next pass "
                       "(tokens = torch.cat([tokens, next_token[:, None]], dim=1))")
    truth = prompts[:, 1:PROMPT_LEN - 1].flip(1)
    own_first = expected[1, 0]
    # Row 1 of the stand-in gets its first digit wrong: a pass that reads the
    # right digit there was fed the answer, not the model's own token.
    read_truth = any(ids.size(0) > 1 and ids.size(1) > PROMPT_LEN
                     and ids[1, PROMPT_LEN] == truth[1, 0] != own_first for ids in model.seen)
    if read_truth or torch.equal(out, _decode(model, prompts, teacher=True)):
        return Message("the input was fed the true answer (teacher forcing), not the model's own tokens: "
                       "row 1 wrote {own} first, but the next pass read the right digit "
                       "{truth}. At test time the answer is not known: feed back what the model "
                       "generated", own=int(own_first), truth=int(truth[1, 0]))
    mistakes = [
        (dict(position=0), Message("you read logits[:, 0], the prediction of position 0 (BOS); the "
                                   "prediction of the next token is at the last position, logits[:, -1]")),
        (dict(position=-2), Message("you read logits[:, -2], one position too early: it predicts the token "
                                    "you just appended. Read the last position, logits[:, -1]")),
        (dict(position=PROMPT_LEN - 1), Message("you always read position 7 (SEP), which predicts only the "
                                                "first answer digit, so every step repeats it. Read the last "
                                                "position, logits[:, -1], which moves as the input grows")),
        (dict(keep_eos=False), Message("after a row emits EOS it must keep emitting EOS; your rows write "
                                       "digits again after EOS (row 2). Keep a `finished` flag per row and "
                                       "fill EOS where it is set")),
    ]
    for options, message in mistakes:
        if torch.equal(out, _decode(model, prompts, **options)):
            return message
    row = next(i for i in range(out.size(0)) if not torch.equal(out[i], expected[i]))
    step = next(i for i in range(STEPS) if out[row, i] != expected[row, i])
    return Message("row {row} differs from step {step} on: expected {expected}, got {got}", row=row,
                   step=step, expected=format_tokens(expected[row]), got=format_tokens(out[row]))


def check_greedy_decode(fn, model=None, prompts=None) -> bool:
    """Check the reader's ``fn(model, prompts) -> [B,7]`` against ``generate``.

    Optionally also on ``model`` (a trained model of the book) with
    ``prompts`` ``[B,8]`` (default: 16 seeded random prompts). Prints a report;
    never raises on a wrong or unfinished answer. Returns True when all pass.
    """

    def body(c):
        stand_in = _StandIn(_BIAS, _EARLY_EOS)
        scripted = _prompts(_DIGITS)
        expected = generate(stand_in, scripted)
        stand_in.seen.clear()
        out = c.call(fn, stand_in, scripted.clone())
        calls = len(stand_in.seen)
        if _check_output(c, out, scripted.size(0)):
            out = out.detach().cpu().long()
            right = torch.equal(out, expected)
            c.expect(right, Message("scripted stand-in (a wrong digit fed back, an early EOS): "
                                    "all {rows} rows equal revformer.generate.generate", rows=out.size(0)),
                     "" if right else _diagnose(stand_in, scripted, out, expected))
            c.expect(calls == STEPS, Message("seven forward passes, one per new token"),
                     Message("{calls} forward pass: greedy decoding makes exactly seven, one per new token",
                             calls=calls) if calls == 1 else
                     Message("{calls} forward passes: greedy decoding makes exactly seven, one per new token",
                             calls=calls))

        generator = torch.Generator().manual_seed(9)
        random_prompts = _prompts(torch.randint(10, (8, SEQ_LEN), generator=generator).tolist())
        cases = [(Message("an untrained model"), make_model(seed=7).eval(), random_prompts)]
        if model is not None:
            given = prompts if prompts is not None else _prompts(
                torch.randint(10, (16, SEQ_LEN), generator=generator).tolist())
            cases.append((Message("the trained model"), model, given))
        for name, real_model, real_prompts in cases:
            device = next(real_model.parameters()).device
            want = generate(real_model, real_prompts.to(device)).cpu()
            got = c.call(fn, real_model, real_prompts.to(device).clone())
            if _check_output(c, got, real_prompts.size(0)):
                got = got.detach().cpu().long()
                same = int((got == want).all(dim=1).sum())
                c.expect(same == got.size(0),
                         Message("{name}: all {rows} rows equal revformer.generate.generate", name=name,
                                 rows=got.size(0)),
                         Message("{name}: {differ} of {rows} rows differ from revformer.generate.generate",
                                 name=name, differ=got.size(0) - same, rows=got.size(0)))

    return run("check_greedy_decode", body,
               off_limits=(generate, greedy, generate_cached, lengths.generate_any))


__all__ = ["check_greedy_decode"]
