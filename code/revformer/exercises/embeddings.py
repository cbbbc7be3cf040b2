"""Chapter 3's exercise: the first block's input, token plus position embedding.

The reader writes ``my_embed(model, ids)``: token ids ``[B,T]`` in, the
vectors ``[B,T,D]`` that the model's first block reads out,
``model.token_embedding(ids) + model.position_embedding(positions)`` with
positions ``0..T-1``. ``check_embed`` runs it on a model of its own and
names the usual mistake: no positions, positions counted from 1, the ids
used as positions, the position table indexed by the batch, a length fixed
at 14, the two parts concatenated or multiplied instead of added.
"""
from __future__ import annotations

import math

import torch

from ..model import ReversalTransformer, make_model
from ..i18n import Message
from . import Checker, Unfinished, expect, not_a_tensor, run_cases

_TITLE = "check_embed"
_CASES = ((2, 14), (3, 8), (1, 15))  # (batch, positions); B != T so the axes cannot be confused
_TOL = dict(atol=1e-6, rtol=1e-5)


def _model():
    """A model of the checker's own, not the trained one: the reader's function must use its argument."""
    model = make_model(seed=12345)
    model.eval()
    return model


def _variants(model, ids):
    """(vectors, what went wrong) for the usual mistakes."""
    b, t = ids.shape
    tok = model.token_embedding(ids)  # [B,T,D]
    table = model.position_embedding.weight  # [15,D]
    pos = table[:t]  # [T,D]
    d = tok.size(-1)
    out = [
        (tok, Message("no positions were added: these are the token rows alone, so the same digit at two "
                      "positions is the same vector. Add model.position_embedding(positions)")),
        (pos.expand(b, t, d), Message("the token rows are missing: these are the position rows alone. Add "
                                      "model.token_embedding(ids)")),
        (model.position_embedding(ids), Message("the ids were used as positions: position_embedding(ids) "
                                                "looks up row 3 for the digit 3. Look up the positions "
                                                "0..T-1, torch.arange(ids.size(1))")),
        (tok + model.position_embedding(ids), Message("the ids were used as positions: the digit 3 got "
                                                      "position row 3 wherever it sits. Look up "
                                                      "torch.arange(ids.size(1)), the positions 0..T-1")),
        (tok + table[0], Message("every position got row 0 of the position table: look up one row per "
                                 "position, torch.arange(ids.size(1))")),
        (tok * pos, Message("the two parts were multiplied: the model adds them, "
                            "token_embedding(ids) + position_embedding(positions)")),
        (tok * math.sqrt(d) + pos, Message("the token rows were multiplied by sqrt(d_model), as the "
                                           "original Transformer does; this model adds them unscaled")),
    ]
    if t < table.size(0):
        out.append((tok + table[1:t + 1], Message("positions are counted from 1: the first token got row 1 "
                                                  "of the position table. Positions count from 0, "
                                                  "torch.arange(ids.size(1))")))
    if b <= table.size(0):
        out.append((tok + table[:b].unsqueeze(1), Message("the position table was indexed by the batch: "
                                                          "each sample got one position row for all its "
                                                          "tokens. Positions run along ids.size(1), the "
                                                          "second axis, not ids.size(0)")))
    return out


def _check_case(checker: Checker, fn, shape, seed) -> bool:
    b, t = shape
    model = _model()
    generator = torch.Generator().manual_seed(200 + seed)
    ids = torch.randint(13, (b, t), generator=generator)  # [B,T]
    ids[:, 0] = 10  # <BOS> first, as in the samples
    given = ids.clone()
    where = Message("ids {shape}", shape=[b, t])
    try:
        with torch.no_grad():
            got = checker.call(fn, model, given)
    except Unfinished:
        line = checker.lines[-1]
        if line.marker == "ERROR" and ("size" in line or "shape" in line):
            checker.hint(Message("here B = {b} and T = {t}. Build the positions from the length of the "
                                 "ids, torch.arange(ids.size(1)), not from the batch size or a fixed 14",
                                 b=b, t=t), width=76)
        raise
    with torch.no_grad():
        tok = model.token_embedding(ids)
        expected = tok + model.position_embedding(torch.arange(t))  # [B,T,D]
    if not torch.equal(given, ids):
        return expect(checker, False, "", Message("your function changed the caller's ids in place"))
    if not isinstance(got, torch.Tensor):
        return expect(checker, False, "", not_a_tensor(got))
    got = got.detach().to("cpu", torch.float32)
    if list(got.shape) == [b, t, 2 * expected.size(-1)]:
        return expect(checker, False, "", Message(
            "{where}: the result is [{b}, {t}, {width}]: the token and position "
            "rows were concatenated; the model adds them, keeping 64 features", where=where, b=b, t=t,
            width=2 * expected.size(-1)))
    if list(got.shape) != [b, t, expected.size(-1)]:
        return expect(checker, False, "", Message(
            "{where}: the result has shape {shape}, it must be [B,T,D] = {expected}", where=where,
            shape=list(got.shape), expected=[b, t, expected.size(-1)]))
    if torch.allclose(got, expected, **_TOL):
        return expect(checker, True, Message(
            "{where} -> [{b}, {t}, {d}], token row plus position row 0..{last}", where=where, b=b, t=t,
            d=expected.size(-1), last=t - 1), "")
    with torch.no_grad():
        variants = _variants(model, ids)
    for vectors, meaning in variants:
        if vectors.shape == got.shape and torch.allclose(got, vectors, **_TOL):
            return expect(checker, False, "", Message("{where}: {problem}", where=where, problem=meaning))
    gap = (got - expected).abs().max().item()
    return expect(checker, False, "", Message(
        "{where}: your vectors differ from model.token_embedding(ids) + "
        "model.position_embedding(positions) by up to {gap:.3g}. Does your function use its "
        "`model` argument (the checker passes a model of its own), and positions 0..T-1?", where=where, gap=gap))


def check_embed(fn) -> bool:
    """Check ``fn(model, ids [B,T]) -> [B,T,D]`` against the model's own embedding lines.

    Prints one line per case and, for a wrong answer, what the symptom
    means; never raises. Returns True when every case passes.
    """
    return run_cases(_TITLE, _CASES, _check_case, fn,
                     off_limits=(ReversalTransformer.forward,))


__all__ = ["check_embed"]
