"""Chapter 7's exercise: the model's parameter count, worked out by hand.

The reader writes ``my_parameter_count(vocab_size, max_positions, d_model,
d_ff, num_layers)``, the number of trainable values of the model with those
sizes. ``check_parameter_count`` builds ``ReversalTransformer(ModelConfig(...))``
for several sizes, counts its parameters with ``count_parameters`` and
compares. A wrong count is explained by the parts it lacks (or has twice):
the reader's error is the same formula of the sizes in every configuration,
so the checker looks for the usual omissions whose sizes add up to it in all
of them: the biases, the LayerNorms (two per block and the final one), the
position table, the head's bias, the blocks after the first.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations
from numbers import Real

from ..config import ModelConfig
from ..model import ReversalTransformer, count_parameters
from ..i18n import Message
from . import Checker, run

TITLE = "check_parameter_count"
_ARGS = ("vocab_size", "max_positions", "d_model", "d_ff", "num_layers")
# The book's model first; then sizes chosen so that no two of them are equal
# and d_ff is never 2 x d_model, so a number fixed at 64 or 128 shows.
_CASES = (
    (13, 15, 64, 128, 2),
    (13, 15, 64, 128, 1),
    (13, 15, 32, 96, 2),
    (20, 30, 48, 80, 3),
    (7, 9, 16, 40, 4),
)


@lru_cache(maxsize=None)
def _model_count(case) -> int:
    """``count_parameters`` of a freshly built model with these sizes (heads do not matter)."""
    config = ModelConfig(**dict(zip(_ARGS, case)), num_heads=4)
    return count_parameters(ReversalTransformer(config))


def _block(d, f):
    return 4 * (d * d + d) + (d * f + f) + (f * d + d) + 2 * (2 * d)


@dataclass(frozen=True)
class _Mistake:
    """A usual miscount: what it leaves out (or adds), the parts it touches, its error in values."""

    what: Message  # what the reader did, as a gerund phrase
    parts: frozenset
    error: object  # (V, P, D, F, L) -> reader's count minus the right count


def _m(what, parts, error):
    return _Mistake(what, frozenset(parts.split()), error)


_MISTAKES = (
    _m(Message("leaving out the position table, max_positions x d_model: every position has its "
               "own learned vector"), "pos", lambda v, p, d, f, l: -p * d),
    _m(Message("leaving out one row of the position table: it has max_positions rows (15), one "
               "more than the 14 input positions"), "pos", lambda v, p, d, f, l: -d),
    _m(Message("leaving out the token table, vocab_size x d_model"), "tok", lambda v, p, d, f, l: -v * d),
    _m(Message("leaving out the head's bias, vocab_size values: the head is nn.Linear(d_model, "
               "vocab_size), with a bias"), "head_b", lambda v, p, d, f, l: -v),
    _m(Message("leaving out the head's weight, d_model x vocab_size: this model does not share it "
               "with the token table"), "head_w", lambda v, p, d, f, l: -d * v),
    _m(Message("leaving out the final LayerNorm before the head, 2 x d_model"), "ln_final",
       lambda v, p, d, f, l: -2 * d),
    _m(Message("leaving out the two LayerNorms of each block, 2 x 2 x d_model a block"), "ln_block",
       lambda v, p, d, f, l: -4 * d * l),
    _m(Message("leaving out one of the two LayerNorms of each block (one before the attention, one "
               "before the FFN), 2 x d_model a block"), "ln_block", lambda v, p, d, f, l: -2 * d * l),
    _m(Message("leaving out every LayerNorm: two a block and the final one, 2 x d_model each"),
               "ln_block ln_final", lambda v, p, d, f, l: -(4 * l + 2) * d),
    _m(Message("leaving out the LayerNorm biases: each LayerNorm has a weight and a bias of d_model "
               "values"), "ln_block ln_final", lambda v, p, d, f, l: -(2 * l + 1) * d),
    _m(Message("leaving out the biases of the four attention projections, 4 x d_model a block"),
               "attn_b", lambda v, p, d, f, l: -4 * d * l),
    _m(Message("leaving out the attention's output projection, d_model x d_model + d_model a block"),
               "attn_b out_w", lambda v, p, d, f, l: -(d * d + d) * l),
    _m(Message("leaving out the two FFN biases, d_ff + d_model a block"), "ffn_b",
       lambda v, p, d, f, l: -(f + d) * l),
    _m(Message("leaving out the biases of the Linear layers in the blocks (attention and FFN)"),
               "attn_b ffn_b", lambda v, p, d, f, l: -(5 * d + f) * l),
    _m(Message("leaving out every Linear layer's bias: attention, FFN and the head"),
               "attn_b ffn_b head_b", lambda v, p, d, f, l: -(5 * d + f) * l - v),
    _m(Message("leaving out every block but one: one block's count must be multiplied by num_layers"),
               "blocks", lambda v, p, d, f, l: -(l - 1) * _block(d, f)),
    _m(Message("adding a bias to each embedding table (a count too high): nn.Embedding is a plain "
               "table, with no bias"), "emb_b", lambda v, p, d, f, l: 2 * d),
)


def _reference(v, p, d, f, l) -> int:
    """The count by hand, part by part (the tests check it against the models)."""
    embeddings = v * d + p * d
    final_norm = 2 * d
    head = d * v + v
    return embeddings + l * _block(d, f) + final_norm + head


def _describe(case) -> Message:
    v, p, d, f, l = case
    if l > 1:
        return Message("vocab {v}, positions {p}, d_model {d}, d_ff {f}, {l} layers", v=v, p=p, d=d, f=f, l=l)
    return Message("vocab {v}, positions {p}, d_model {d}, d_ff {f}, {l} layer", v=v, p=p, d=d, f=f, l=l)


def _explain(errors) -> Message | None:
    """The usual mistakes, alone or two together, whose errors match in every configuration."""
    def matches(mistakes):
        return all(sum(m.error(*case) for m in mistakes) == error for case, error in errors)

    for size in (1, 2):
        found = [group for group in combinations(_MISTAKES, size)
                 if size == 1 or not group[0].parts & group[1].parts]
        found = [group for group in found if matches(group)]
        if found:
            readings = [group[0].what if len(group) == 1 else
                        Message("{first}, and {second}", first=group[0].what, second=group[1].what)
                        for group in found[:3]]
            if len(readings) == 1:
                return Message("the differences match, in every configuration, {reading}", reading=readings[0])
            either = readings[0]
            for reading in readings[1:]:
                either = Message("{first}; or {second}", first=either, second=reading)
            return Message("the differences match, in every configuration, any of these (they cost the "
                           "same): {readings}", readings=either)
    return None


def _fixed_size(counts) -> Message | None:
    """A size used as a fixed number instead of the argument."""
    default = _CASES[0]
    for i, name in enumerate(_ARGS):
        fixed = [case[:i] + (default[i],) + case[i + 1:] for case, _ in counts]
        if all(_reference(*case) == got for case, (_, got) in zip(fixed, counts)):
            return Message("your counts are those of {name} = {size} in every configuration: "
                           "use the argument {name}, not a fixed {size}", name=name, size=default[i])
    twice = [case[:3] + (2 * case[2],) + case[4:] for case, _ in counts]
    if all(_reference(*case) == got for case, (_, got) in zip(twice, counts)):
        return Message("your counts assume d_ff = 2 x d_model: use the argument d_ff")
    return None


def check_parameter_count(fn) -> bool:
    """Check ``fn(vocab_size, max_positions, d_model, d_ff, num_layers) -> int``.

    Compares with ``count_parameters`` of the model built with those sizes,
    for the book's model and four others. Prints one line per configuration
    and, for a wrong count, the parts it most likely left out; never raises.
    Returns True when every count is right.
    """
    def body(checker: Checker):
        counts = []  # (case, reader's count)
        for case in _CASES:
            got = checker.call(fn, *case)
            if isinstance(got, bool) or not isinstance(got, Real) or not math.isfinite(got):
                checker.expect(False, "", Message("returned None, not a number: is the `return` missing?")
                               if got is None else Message("returned {got}, not a number", got=repr(got)))
                return
            counts.append((case, got))
        errors = []
        for case, got in counts:
            right = _model_count(case)
            error = got - right
            fields = dict(case=_describe(case), got=got, right=right, error=abs(error))
            wrong = (Message("{case}: you counted {got:,}, the model has {right:,} (short by {error:,})", **fields)
                     if error < 0 else
                     Message("{case}: you counted {got:,}, the model has {right:,} (over by {error:,})", **fields))
            checker.expect(error == 0, Message("{case}: {right:,}", case=_describe(case), right=right), wrong)
            errors.append((case, error))
        if checker.passed:
            return
        reason = _explain(errors) if errors[0][1] != 0 else None
        reason = reason or _fixed_size(counts)
        if reason is None:
            reason = Message("break the count into parts and compare each: token table V x D, position "
                             "table P x D; a block: attention 4 x (D x D + D), FFN (D x Dff + Dff) + "
                             "(Dff x D + D), two LayerNorms 2 x 2D; the final LayerNorm 2D; the head "
                             "D x V + V")
        checker.hint(reason)

    return run(TITLE, body, off_limits=(count_parameters, ReversalTransformer.__init__))


__all__ = ["check_parameter_count"]
