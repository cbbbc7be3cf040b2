"""Chapter 10's exercise: mean-ablate one head with a forward pre-hook.

The reader writes ``my_mean_ablated_logits(model, ids, layer, head, mean)``:
the logits ``[B,T,13]`` of ``model`` on ``ids`` ``[B,T]`` with head ``head``
of layer ``layer`` handing ``mean`` (``[T,Dh]``, one vector per position, or
``[Dh]``) to its layer's output projection instead of its own output. The
way in is a forward pre-hook on ``model.blocks[layer].attention.out_proj``,
whose input ``[B,T,D]`` holds the heads side by side, head ``h`` in the
columns ``h*Dh`` to ``(h+1)*Dh``; the hook is removed before the function
returns.

``check_mean_ablation`` runs it on an untrained model of the book (made-up
vectors, a head of each layer) and, when given, on a trained model with the
head's real mean, always against ``revformer.interventions.replaced_heads``.
It recognises the typical mistakes by computing each one's logits: every head
of the layer replaced, the wrong slice of the ``[B,T,D]`` input, zeros
instead of the mean, the output of ``out_proj`` changed instead of its input,
the other layer, a hook that changes nothing, and a hook left registered.
"""
from __future__ import annotations

import contextlib

import torch

from ..data import encode
from ..interventions import head_outputs, replaced_heads, zeroed_heads
from ..model import make_model
from ..i18n import Message
from . import expect, run

_TITLE = "check_mean_ablation"
_ATOL = 1e-5


def _expect(checker, condition, good, bad):
    return expect(checker, condition, good, bad, width=72)


def _device(model) -> torch.device:
    return next(model.parameters()).device


def _inputs(rows: int, seed: int) -> torch.Tensor:
    """``[rows,14]`` teacher-forced inputs of random six-digit samples."""
    generator = torch.Generator().manual_seed(seed)
    digits = torch.randint(10, (rows, 6), generator=generator)
    return torch.tensor([encode(d)[:-1] for d in digits.tolist()])


def _hooks(model) -> dict:
    """Every module's registered forward hooks and pre-hooks, by module: what to restore."""
    return {module: (set(module._forward_pre_hooks), set(module._forward_hooks)) for module in model.modules()}


def _remove_new_hooks(model, before: dict) -> int:
    """Take off every hook registered since ``before``; how many there were."""
    removed = 0
    for module in model.modules():
        pre, post = before.get(module, (set(), set()))
        for table, kept in ((module._forward_pre_hooks, pre), (module._forward_hooks, post)):
            for key in [k for k in table if k not in kept]:
                del table[key]
                removed += 1
    return removed


@contextlib.contextmanager
def leaves_model_as_it_was(model):
    """Run a reader's function on ``model`` inside this block: afterwards every hook it registered is off and
    every weight it changed is back. The dict it yields then holds ``left`` (how many hooks it took off) and
    ``changed`` (whether a weight had changed), for the report."""
    params = [p.detach().clone() for p in model.parameters()]
    before = _hooks(model)
    found = {}
    try:
        yield found
    finally:
        found["left"] = _remove_new_hooks(model, before)
        found["changed"] = not all(torch.equal(a, b) for a, b in zip(params, model.parameters()))
        if found["changed"]:  # put the weights back, so that the model the chapter uses stays as it was
            with torch.no_grad():
                for p, saved in zip(model.parameters(), params):
                    p.copy_(saved)


def weights_changed(c, label) -> bool:
    """The report on a reader's function that changed the model's weights (``leaves_model_as_it_was`` put them back)."""
    return _expect(c, False, "", Message("{label}: your function changed the model's weights. An "
                                         "intervention changes the forward pass only (a hook); the "
                                         "weights stay as trained", label=label))


def judge_logits(c, label, out, want, close, mistakes, differs, right, left: int, register: str) -> bool:
    """The report on logits ``out`` against ``want``: the shape, then the values (the first of ``mistakes()``,
    pairs of logits and diagnosis, that matches names a wrong answer; else ``differs(gap)``), then the hooks
    left behind (``register``: the method that registered them)."""
    if out.shape != want.shape:
        return _expect(c, False, "", Message("expected logits of shape {want}, got {got}",
                                             want=list(want.shape), got=list(out.shape)))
    out = out.detach().to(want.device, want.dtype)
    if not close(out, want):
        wrong = next((text for logits, text in mistakes() if close(out, logits)),
                     differs((out - want).abs().max().item()))
        return _expect(c, False, "", Message("{where}: {problem}", where=label, problem=wrong))
    if left == 1:
        left_behind = Message("{label}: the logits are right, but {left} hook is still registered after your "
                              "function returned, so it runs again at every later call of the model (the checker "
                              "took it off). Keep the handle that {register} returns and call "
                              "handle.remove() in a finally: block", label=label, left=left, register=register)
    else:
        left_behind = Message("{label}: the logits are right, but {left} hooks are still registered after your "
                              "function returned, so they run again at every later call of the model (the "
                              "checker took them off). Keep the handle that {register} returns and call "
                              "handle.remove() in a finally: block", label=label, left=left, register=register)
    return _expect(c, left == 0, right, left_behind)


@torch.no_grad()
def _logits(model, ids) -> torch.Tensor:
    logits, _ = model(ids)
    return logits


@torch.no_grad()
def _with_pre_hook(model, ids, layer, change) -> torch.Tensor:
    """Logits with ``change(x)`` ``[B,T,D] -> [B,T,D]`` applied to what layer ``layer``'s out_proj reads."""
    handle = model.blocks[layer].attention.out_proj.register_forward_pre_hook(lambda m, args: (change(args[0]),))
    try:
        return _logits(model, ids)
    finally:
        handle.remove()


@torch.no_grad()
def _with_output_hook(model, ids, layer, change) -> torch.Tensor:
    """Logits with ``change(y)`` applied to what layer ``layer``'s out_proj returns."""
    handle = model.blocks[layer].attention.out_proj.register_forward_hook(lambda m, args, out: change(out))
    try:
        return _logits(model, ids)
    finally:
        handle.remove()


def _mistakes(model, ids, layer, head, mean):
    """``(logits, diagnosis)`` of each typical mistake, on this case."""
    attention = model.blocks[layer].attention
    heads, dh = attention.num_heads, attention.head_dim
    lo, hi = head * dh, (head + 1) * dh

    def columns(start, stop):
        def change(x):
            x = x.clone()
            x[..., start:stop] = mean
            return x
        return change

    def no_transpose(x):
        x = x.clone()
        x.view(x.size(0), heads, x.size(1), dh)[:, head] = mean  # [B,T,D] read as [B,H,T,Dh]: wrong
        return x

    with torch.no_grad(), zeroed_heads(model, [(layer, head)]):
        zeroed = _logits(model, ids)
    with torch.no_grad(), replaced_heads(model, {(layer, h): mean for h in range(heads)}):
        every_head = _logits(model, ids)
    found = [
        (_logits(model, ids),
         Message("the logits are the model's own: your hook changed nothing. A pre-hook must return the new "
                 "input as a tuple, (new_x,), or PyTorch keeps the old one; and it must be registered on "
                 "model.blocks[layer].attention.out_proj before the forward pass runs")),
        (every_head,
         Message("you replaced every head of layer {layer}, not only head {head}: out_proj reads [B,T,D], the "
                 "{heads} heads side by side. Change only head {head}'s columns, {lo} to {hi} "
                 "(head * Dh to (head + 1) * Dh), or heads[:, {head}] after split_heads", layer=layer,
                 head=head, heads=heads, lo=lo, hi=hi - 1)),
        (zeroed,
         Message("you handed on zeros, not the mean: that is zeroed_heads (zero ablation), which also removes "
                 "the head's average output. Put `mean` into head {head}'s columns", head=head)),
        (_with_output_hook(model, ids, layer, columns(lo, hi)),
         Message("you changed what out_proj returns, not what it reads: after the projection the heads are "
                 "mixed, and columns no longer belong to one head. Use register_forward_pre_hook, whose "
                 "args[0] is the heads' outputs side by side")),
        (_with_pre_hook(model, ids, layer, no_transpose),
         Message("you read [B,T,D] as [B,H,T,Dh] with view, without the transpose: the heads sit side by side "
                 "on the last axis, [B,T,H,Dh]. Use x.view(B, T, H, Dh)[:, :, {head}] or split_heads, which "
                 "transposes", head=head)),
    ]
    if head:
        found.append((_with_pre_hook(model, ids, layer, columns(head, head + dh)),
                      Message("you replaced columns {head} to {last}: head {head}'s output is columns "
                              "{lo} to {hi}, head * Dh to (head + 1) * Dh", head=head, last=head + dh - 1,
                              lo=lo, hi=hi - 1)))
    if len(model.blocks) > 1:
        other = 1 - layer if len(model.blocks) == 2 else (layer + 1) % len(model.blocks)
        with torch.no_grad(), replaced_heads(model, {(other, head): mean}):
            found.append((_logits(model, ids),
                          Message("you changed head {head} of layer {other}, not of layer {layer}: hook "
                                  "model.blocks[{layer}].attention.out_proj", head=head, other=other,
                                  layer=layer)))
    return found


def _close(a, b) -> bool:
    return a.shape == b.shape and torch.allclose(a, b, atol=_ATOL, rtol=1e-4)


def _check_case(c, fn, case) -> bool:
    name, model, ids, layer, head, mean = case
    with torch.no_grad(), replaced_heads(model, {(layer, head): mean}):
        want = _logits(model, ids)
    with leaves_model_as_it_was(model) as after:
        out = c.call(fn, model, ids.clone(), layer, head, mean.clone())
    label = Message("{name}, layer {layer} head {head}", name=name, layer=layer, head=head)
    if after["changed"]:
        return weights_changed(c, label)
    if isinstance(out, tuple):
        return _expect(c, False, "", Message("you returned a tuple: model(ids) returns (logits, weights); "
                                             "return the logits only, [B,T,13]"))
    if not isinstance(out, torch.Tensor):
        return _expect(c, False, "", Message("return the logits as a torch.Tensor [B,T,13], got {kind}",
                                             kind=type(out).__name__))
    return judge_logits(
        c, label, out, want, _close, lambda: _mistakes(model, ids, layer, head, mean),
        lambda gap: Message("the logits differ from replaced_heads' by up to {gap:.3g}", gap=gap),
        Message("{label}: the same logits as replaced_heads, and no hook left behind", label=label),
        after["left"], "register_forward_pre_hook")


def _cases(model=None, ids=None):
    untrained = make_model(seed=5).eval()
    dh = untrained.blocks[0].attention.head_dim
    generator = torch.Generator().manual_seed(10)
    small = _inputs(8, seed=3)
    cases = [
        (Message("untrained model, a made-up [T,Dh] vector"), untrained, small, 1, 2,
         torch.randn(small.size(1), dh, generator=generator)),
        (Message("untrained model, a made-up [Dh] vector"), untrained, small, 0, 3, torch.randn(dh, generator=generator)),
    ]
    if model is not None:
        device = _device(model)
        ids = (ids if ids is not None else _inputs(32, seed=4)).to(device)
        outputs = head_outputs(model, ids)  # per layer [B,H,T,Dh]
        cases.append((Message("trained model, its mean [T,Dh] over these ids"), model, ids, 0, 1,
                      outputs[0][:, 1].mean(dim=0)))  # [T,Dh]
    return cases


def check_mean_ablation(fn, model=None, ids=None) -> bool:
    """Check the reader's ``fn(model, ids, layer, head, mean) -> [B,T,13]`` against ``replaced_heads``.

    Also on ``model`` (a trained model of the book) with ``ids`` ``[B,14]``
    (default: 32 random samples), using layer 0 head 1's mean over them.
    Prints a report; never raises on a wrong or unfinished answer; removes any
    hook the reader's function leaves and restores any weight it changes.
    Returns True when all cases pass.
    """
    def body(c):
        for case in _cases(model, ids):
            if not _check_case(c, fn, case):
                return

    return run(_TITLE, body, off_limits=(replaced_heads,))

__all__ = ["check_mean_ablation"]
