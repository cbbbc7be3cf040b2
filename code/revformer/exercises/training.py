"""Chapter 8's exercise: one training step, the six calls in their order.

The reader writes ``my_train_step(model, optimizer, x, y)``: clear the
gradients, the logits of all 14 positions, the loss against ``y`` (whose -100
labels leave positions 7-13), ``backward()``, clip the gradient norm at 1.0
with ``error_if_nonfinite=True``, ``optimizer.step()``; it returns the batch
loss.
``check_train_step`` runs it on copies of one model, next to the package's
``train_step`` on other copies, with the same batches and optimizers of the
same settings, in three cases:

1. Adam (``make_optimizer``), three steps: the losses and the weights after
   every step must match.
2. Plain SGD, two steps: with SGD the update is the clipped gradient times
   the learning rate, so a missing or misplaced clip shows at once (Adam
   divides each gradient by its own running size and hides a rescaling).
3. A NaN in one weight: the step must raise instead of writing NaN into the
   weights.

A wrong step is named by the usual mistake it reproduces (no ``zero_grad``,
``step()`` before ``backward()``, never called, or after a ``zero_grad()`` that
emptied the gradients, clipping after the step or not at all, a
softmax before the loss, the prompt positions in the loss), found by running
each mistake on its own copy and comparing. A ``clip_grad_value_`` in place of
``clip_grad_norm_`` is named from the calls the step made, since a cap that no
gradient entry reaches leaves the same weights as no clip at all.
"""
from __future__ import annotations

import contextlib
import copy
import math

import torch
import torch.nn.functional as F

from ..data import BOS, EOS, SEP, split_inputs_labels
from ..model import make_model
from ..train import FIRST_TARGET, answer_loss, make_optimizer, train_step
from ..i18n import Message
from . import Checker, Unfinished, expect, run

TITLE = "check_train_step"
CLIP_NORM = 1.0
_BATCH = 16
_MODEL_SEED = 3
# Adam turns tiny rounding differences of near-zero gradients into updates of
# a few 1e-6; every usual
# mistake moves some weight by 7e-4 or more within three steps.
_WEIGHT_TOL = dict(rtol=1e-4, atol=5e-5)


def _batches(steps: int, seed: int) -> list:
    """``steps`` batches of ``_BATCH`` reversal samples: (inputs ``[B,14]``, labels ``[B,14]``)."""
    generator = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(steps):
        digits = torch.randint(10, (_BATCH, 6), generator=generator)
        full = torch.cat([torch.full((_BATCH, 1), BOS), digits, torch.full((_BATCH, 1), SEP),
                          digits.flip(1), torch.full((_BATCH, 1), EOS)], dim=1)  # [B,15]
        out.append(split_inputs_labels(full))
    return out


# --- the usual mistakes, each a whole step (the reference is the package's train_step) ---

def _clip(model):
    return torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP_NORM, error_if_nonfinite=True)


def _forward_loss(model, x, y):
    logits, _ = model(x)  # [B,14,13]
    return answer_loss(logits, y)


def _no_zero_grad(model, optimizer, x, y):
    loss = _forward_loss(model, x, y)
    loss.backward()
    _clip(model)
    optimizer.step()
    return loss.detach()


def _step_before_backward(model, optimizer, x, y):
    optimizer.zero_grad(set_to_none=True)
    loss = _forward_loss(model, x, y)
    optimizer.step()
    loss.backward()
    _clip(model)
    return loss.detach()


def _clip_after_step(model, optimizer, x, y):
    optimizer.zero_grad(set_to_none=True)
    loss = _forward_loss(model, x, y)
    loss.backward()
    optimizer.step()
    _clip(model)
    return loss.detach()


def _no_clip(model, optimizer, x, y):
    optimizer.zero_grad(set_to_none=True)
    loss = _forward_loss(model, x, y)
    loss.backward()
    optimizer.step()
    return loss.detach()


def _softmax_first(model, optimizer, x, y):
    optimizer.zero_grad(set_to_none=True)
    logits, _ = model(x)
    loss = answer_loss(torch.softmax(logits, dim=-1), y)
    loss.backward()
    _clip(model)
    optimizer.step()
    return loss.detach()


def _with_loss(loss_of):
    """A step that is right except for its loss, ``loss_of(model, x, y)``."""
    def step(model, optimizer, x, y):
        optimizer.zero_grad(set_to_none=True)
        loss = loss_of(model, x, y)
        loss.backward()
        _clip(model)
        optimizer.step()
        return loss.detach()
    return step


def _over_14(model, x, y):
    logits, _ = model(x)  # [B,14,13]
    total = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1), reduction="sum")
    return total / y.numel()  # B*14: the prompt positions counted in the mean


def _prompt_labels(model, x, y):
    logits, _ = model(x)  # [B,14,13]
    labels = torch.cat([x[:, 1:], y[:, -1:]], dim=1)  # the next token everywhere, prompt too
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1))


def _from_8(model, x, y):
    logits, _ = model(x)  # [B,14,13]
    return answer_loss(logits[:, FIRST_TARGET + 1:], y[:, FIRST_TARGET + 1:])  # positions 8-13 only


_STEP_BEFORE = Message("no weight moved: step() ran before backward(), so Adam found no gradient to "
                        "use (zero_grad(set_to_none=True) had left every .grad empty). The order is "
                        "zero_grad, forward, loss, backward, clip, step")
_NO_STEP = Message("no weight moved: optimizer.step() is never called, so the gradients backward() "
                   "wrote were never applied. The order is zero_grad, forward, loss, backward, clip, "
                   "step")
_ZERO_BETWEEN = Message("no weight moved: zero_grad() ran between backward() and step() and emptied the "
                        "gradients backward() had just written, so step() found none. Call zero_grad() "
                        "first, before the forward pass")


def _spy(model, optimizer, steps: list) -> None:
    """Record in the last list of ``steps``, in order, each zero_grad() (the optimizer's or the
    model's), each step() and each backward() (a gradient arriving in the output layer's weight)."""
    for owner in (optimizer, model):
        plain = owner.zero_grad

        def zero_grad(*args, _plain=plain, **kwargs):
            steps[-1].append("zero_grad")
            return _plain(*args, **kwargs)
        object.__setattr__(owner, "zero_grad", zero_grad)
    optimizer.register_step_pre_hook(lambda *_: steps[-1].append("step"))
    model.lm_head.weight.register_post_accumulate_grad_hook(lambda _: steps[-1].append("backward"))


@contextlib.contextmanager
def _spy_value_clip(steps: list):
    """Record in the last list of ``steps`` each call of
    ``torch.nn.utils.clip_grad_value_``.

    The chapter shows that function beside ``clip_grad_norm_``, so a reader may
    reach for it; its weights cannot name it (under its cap it changes nothing,
    which is no clip), so the call itself is recorded, for the reader's steps only.
    """
    plain = torch.nn.utils.clip_grad_value_

    def clip_grad_value_(*args, **kwargs):
        steps[-1].append("clip_value")
        return plain(*args, **kwargs)

    # the name the chapter calls, and the module that defines it
    homes = (torch.nn.utils, torch.nn.utils.clip_grad)
    for home in homes:
        home.clip_grad_value_ = clip_grad_value_
    try:
        yield
    finally:
        for home in homes:
            home.clip_grad_value_ = plain


def _no_update(calls: list) -> Message:
    """Why a step moved no weight, from the order of its calls."""
    if "step" not in calls:
        return _NO_STEP
    step = calls.index("step")
    backward = [i for i, call in enumerate(calls[:step]) if call == "backward"]
    if backward and "zero_grad" in calls[backward[-1]:step]:
        return _ZERO_BETWEEN
    return _STEP_BEFORE


_VALUE_CLIP = Message(
    "you clipped each entry, not the norm: clip_grad_value_ caps every gradient entry "
    "on its own, which changes the gradient's direction, and leaves a gradient of many "
    "small entries as it is, however large its norm. Clip the joint norm at {clip}: "
    "clip_grad_norm_(model.parameters(), {clip}, error_if_nonfinite=True)",
    clip=CLIP_NORM)
_UNCLIPPED = Message("the update used the unclipped gradient: clip_grad_norm_ is missing, or it "
                      "ran before backward() had written the gradients. Clip after backward() and "
                      "before step()")
_MISTAKES = (
    (_no_zero_grad, Message("the gradients of one step were added to the next: zero_grad() is missing. "
                            "PyTorch adds every backward() into .grad, so step 2 used the step-1 gradient "
                            "(as clipped in place) plus the step-2 gradient. Call "
                            "optimizer.zero_grad(set_to_none=True) first")),
    (_step_before_backward, _STEP_BEFORE),
    (_clip_after_step, Message("clip_grad_norm_ ran after step(): the step had already used the "
                               "unclipped gradient, and the clip only rescaled gradients nobody reads. "
                               "Clip between backward() and step()")),
    (_no_clip, _UNCLIPPED),
    (_softmax_first, Message("the loss was computed on probabilities: a softmax ran before the "
                             "cross-entropy, which applies its own log-softmax. Pass the logits "
                             "straight to answer_loss (F.cross_entropy)")),
    (_with_loss(_over_14), Message("the loss is the sum over the 7 targets divided by B x 14: the "
                                   "prompt positions were counted in the mean. The mean runs over the "
                                   "B x 7 supervised targets only (answer_loss does it)")),
    (_with_loss(_prompt_labels), Message("the loss counts the prompt positions 0-6 too, with the next "
                                         "prompt token as their label: those labels are -100 in y so "
                                         "that the loss ignores them. Use y as it is")),
    (_with_loss(_from_8), Message("the loss leaves out position 7, the <SEP> position that predicts the "
                                  "first answer digit: the supervised targets are positions 7-13, and "
                                  "answer_loss(logits, y) finds them by their labels")),
)


def _params(model):
    return [p.detach().clone() for p in model.parameters()]


def _grads(model):
    return [None if p.grad is None else p.grad.detach().clone() for p in model.parameters()]


def _close(a, b, tol) -> bool:
    return all(torch.allclose(u, v, **tol) for u, v in zip(a, b))


def _same_grads(a, b) -> bool:
    return all((u is None) == (v is None) and (u is None or torch.allclose(u, v, **_WEIGHT_TOL))
               for u, v in zip(a, b))


def _trajectory(step, model, make_opt, batches):
    """Run ``step`` on a copy of ``model``: per step (loss, weights), and the final gradients."""
    model = copy.deepcopy(model)
    optimizer = make_opt(model)
    record = []
    for x, y in batches:
        loss = step(model, optimizer, x, y)
        record.append((float(loss), _params(model)))
    return record, _grads(model)


def _matches(reader, other) -> bool:
    (mine, _), (theirs, _) = reader, other
    return all(math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-7) and _close(p, q, _WEIGHT_TOL)
               for (a, p), (b, q) in zip(mine, theirs))


def _reference_step(model, optimizer, x, y):
    return train_step(model, optimizer, x, y, CLIP_NORM)


def _as_number(checker: Checker, got, where: str):
    """The reader's returned loss as a float, or None after recording what is wrong."""
    if got is None:
        expect(checker, False, "", Message("{where}: your step returned None: return the batch loss "
                                           "(loss.detach() or loss.item())", where=where))
        return None
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        return float(got.detach())
    if isinstance(got, (int, float)) and not isinstance(got, bool):
        return float(got)
    expect(checker, False, "", Message("{where}: your step returned {kind}, not one number: return the "
                                       "batch loss", where=where, kind=type(got).__name__
                                       + (str(list(got.shape)) if isinstance(got, torch.Tensor) else "")))
    return None


def _run_reader(checker: Checker, fn, model, make_opt, batches, where: str):
    """The reader's trajectory, as ``_trajectory``, and the calls of each step (``_spy``); None once
    something is recorded as wrong."""
    model = copy.deepcopy(model)
    optimizer = make_opt(model)
    record, calls = [], []   # calls: one list per step (_spy)
    _spy(model, optimizer, calls)
    for x, y in batches:
        calls.append([])
        try:
            with _spy_value_clip(calls):
                got = checker.call(fn, model, optimizer, x.clone(), y.clone())
        except Unfinished:
            line = checker.lines[-1]
            if "batch_size" in line or "shape" in line:
                checker.hint(Message("model(x) gives logits [B,14,13], to pair with all of y [B,14]: "
                                     "answer_loss skips the -100 labels of positions 0-6"), width=76)
            raise
        loss = _as_number(checker, got, where)
        if loss is None:
            return None
        record.append((loss, _params(model)))
    return record, _grads(model), calls


def _diagnose(checker: Checker, fn_record, model, make_opt, batches, where: str, reference,
              calls) -> None:
    """Name the usual mistake the reader's step reproduces, or describe the symptom."""
    value_clip = any("clip_value" in step for step in calls)
    for mistake, meaning in _MISTAKES:
        if value_clip and mistake is _no_clip:
            # a clip_grad_value_ whose cap no entry reached: it clipped, the wrong thing
            continue
        other = _trajectory(mistake, model, make_opt, batches)
        if _matches(fn_record, other):
            if meaning is _STEP_BEFORE:  # no weight moved: the order of the calls says why
                meaning = _no_update(calls[0])
            if mistake is _no_clip and _same_grads(fn_record[1], reference[1]):
                continue  # the weights of a missing clip, the gradients of a late one
            if mistake is _clip_after_step and not _same_grads(fn_record[1], other[1]):
                continue
            expect(checker, False, "", Message("{where}: {problem}", where=where, problem=meaning))
            return
    if value_clip:
        expect(checker, False, "",
               Message("{where}: {problem}", where=where, problem=_VALUE_CLIP))
        return
    (mine, _), (theirs, _) = fn_record, reference
    start = _params(model)
    for number, ((a, p), (b, q)) in enumerate(zip(mine, theirs), start=1):
        if not math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-7):
            expect(checker, False, "", Message(
                "{where}, step {number}: your loss is {a:.6f}, train_step's {b:.6f}. The loss is "
                "answer_loss(logits, y) with logits = model(x)[0]: the mean cross-entropy "
                "over the labelled positions 7-13", where=where, number=number, a=a, b=b))
            return
        if _close(p, start, dict(rtol=0.0, atol=0.0)):
            expect(checker, False, "", Message("{where}, step {number}: {problem}", where=where,
                                               number=number, problem=_no_update(calls[number - 1])))
            return
        if not _close(p, q, _WEIGHT_TOL):
            gap = max((u - v).abs().max().item() for u, v in zip(p, q))
            expect(checker, False, "", Message(
                "{where}, step {number}: the loss is right but the weights differ from train_step's "
                "by up to {gap:.2g}: check the order zero_grad, forward, loss, backward, clip at "
                "{clip}, step, and that each is called once", where=where, number=number, gap=gap,
                clip=CLIP_NORM))
            return
        start = p
    expect(checker, False, "", Message("{where}: the steps differ from train_step's", where=where))


def _check_optimizer_case(checker: Checker, fn, model, make_opt, batches, where, good) -> bool:
    reference = _trajectory(_reference_step, model, make_opt, batches)
    got = _run_reader(checker, fn, model, make_opt, batches, where)
    if got is None:
        return False
    record, grads, calls = got
    if _matches((record, grads), reference):
        return expect(checker, True, good, "")
    _diagnose(checker, (record, grads), model, make_opt, batches, where, reference, calls)
    return False


def _check_nan(checker: Checker, fn, model, make_opt, batches) -> bool:
    model = copy.deepcopy(model)
    with torch.no_grad():
        model.lm_head.weight[0, 0] = float("nan")
    optimizer = make_opt(model)
    x, y = batches[0]
    where = Message("a NaN in one weight")
    try:
        fn(model, optimizer, x.clone(), y.clone())
    except NotImplementedError:
        return checker.call(fn, model, optimizer, x, y)  # records the TODO line
    except RuntimeError as error:
        if "non-finite" in str(error):
            return expect(checker, True, Message("{where}: your step raises ({error}...) instead of writing "
                                                 "NaN into every weight", where=where, error=str(error)[:40]), "")
        expect(checker, False, "", Message("{where}: RuntimeError {error}", where=where, error=str(error)[:120]))
        return False
    except Exception as error:  # the reader's bug, reported rather than raised
        expect(checker, False, "", Message("{where}: {kind}: {error}", where=where, kind=type(error).__name__,
                                           error=str(error)[:120]))
        return False
    spread = sum(int(torch.isnan(p).sum()) for p in model.parameters())
    return expect(checker, False, "", Message(
        "{where}: your step did not stop, and {spread:,} weights are now NaN: pass "
        "error_if_nonfinite=True to clip_grad_norm_, so that a NaN or inf gradient raises at once",
        where=where, spread=spread))


def check_train_step(fn) -> bool:
    """Check ``fn(model, optimizer, x, y) -> loss``, one training step, against ``train_step``.

    Prints one line per case and, for a wrong step, the usual mistake it
    reproduces; never raises. Returns True when every case passes.
    """
    model = make_model(seed=_MODEL_SEED)
    batches = _batches(3, seed=0)

    def adam(m):
        return make_optimizer(m, 3e-3)

    def sgd(m):
        return torch.optim.SGD(m.parameters(), lr=0.05)

    def body(checker: Checker):
        if not _check_optimizer_case(
                checker, fn, model, adam, batches, Message("Adam, 3 steps"),
                Message("Adam, 3 steps of {batch} samples: the losses and the weights after each step "
                        "are train_step's", batch=_BATCH)):
            return
        if not _check_optimizer_case(
                checker, fn, model, sgd, batches[:2], Message("plain SGD, 2 steps"),
                Message("plain SGD, 2 steps: each update is the gradient clipped to norm 1, as in "
                        "train_step")):
            return
        _check_nan(checker, fn, model, adam, batches)

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a model this small runs fastest on one thread
    try:
        return run(TITLE, body, off_limits=(train_step,))
    finally:
        torch.set_num_threads(threads)


__all__ = ["check_train_step", "CLIP_NORM"]
