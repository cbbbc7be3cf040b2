"""Interventions on a trained model: take a part out, or put another output in
its place.

Every function here changes the model's own forward pass through *hooks*,
functions that PyTorch calls around a module's ``forward``, and removes them
again when its ``with`` block ends. The taught classes stay as they are.

- ``head_outputs`` and ``sublayer_outputs`` record what the parts hand on.
- ``zeroed_heads(model, [(layer, head), ...])``: those heads hand zeros to
  their layer's output projection (zero ablation, or *knockout*).
- ``replaced_heads(model, {(layer, head): value})``: a head hands ``value``
  instead, such as its mean output over a data set (*mean ablation*), or its
  output on other samples (*resample ablation*).
- ``replaced_sublayers(model, {(layer, "attention" | "ffn"): value})``: a
  whole attention or feed-forward sublayer adds ``value`` (or 0) instead.

A head's output is the slice ``[:, :, head*Dh:(head+1)*Dh]`` of what the
layer's ``out_proj`` reads, so a forward *pre*-hook on ``out_proj`` (called
with the module's inputs just before it runs; what it returns replaces them)
is the one place all head interventions go through. ``KVCache`` calls the
layers' parts directly, position by position, and is not covered: a pass
through it inside one of these blocks raises ``ValueError``.
"""
from __future__ import annotations

from contextlib import contextmanager

import torch

from .analysis import evaluating

PARTS = ("attention", "ffn")


def _device(model) -> torch.device:
    return next(model.parameters()).device


def _check_ids(ids) -> None:
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2:
        raise ValueError(f"ids must be a [B,T] tensor of token ids, "
                         f"got {getattr(ids, 'shape', ids)!r}")


@torch.no_grad()
def head_outputs(model, ids: torch.Tensor) -> list[torch.Tensor]:
    """What every head hands to its layer's output projection: one ``[B,H,T,Dh]``
    per layer.

    A forward pre-hook on each ``out_proj`` records its input, the heads side
    by side ``[B,T,D]``, which is split back into heads here.
    """
    _check_ids(ids)
    captured = []
    hooks = [block.attention.out_proj.register_forward_pre_hook(
                 lambda module, args: captured.append(args[0]))
             for block in model.blocks]
    with evaluating(model, hooks):
        model(ids.to(_device(model)))
    return [block.attention.split_heads(merged)
            for block, merged in zip(model.blocks, captured)]


@torch.no_grad()
def sublayer_outputs(model, ids: torch.Tensor) -> dict[tuple[int, str], torch.Tensor]:
    """What each sublayer adds to the stream,
    ``{(layer, "attention" | "ffn"): [B,T,D]}``.

    A forward hook (called with a module's inputs and output right after it
    runs) on each block's ``attention`` and ``ffn`` records its output.
    """
    _check_ids(ids)
    captured, hooks = {}, []
    for layer, block in enumerate(model.blocks):
        for part in PARTS:
            def keep(module, args, output, key=(layer, part)):
                captured[key] = output[0] if isinstance(output, tuple) else output
            hooks.append(getattr(block, part).register_forward_hook(keep))
    with evaluating(model, hooks):
        model(ids.to(_device(model)))
    return {key: captured[key] for key in sorted(captured)}


_OUTSIDE = ("an intervention changes the model's own forward pass, but this pass "
            "called a layer's parts directly (a KVCache does): "
            "use generate(..., kv_cache=False) inside the with block")


def _guard(model, layers) -> list:
    """Hooks that make a pass which bypasses ``TransformerBlock.forward`` (a KV
    cache) raise.

    A pre-hook and a hook on each block count whether its ``forward`` is
    running; a pre-hook on its ``norm1``, which every pass through the layer
    calls first, refuses to run outside it.
    """
    hooks = []
    for layer in sorted(set(layers)):
        block, running = model.blocks[layer], [0]

        def enter(module, args, running=running):
            running[0] += 1

        def leave(module, args, output, running=running):
            running[0] -= 1

        def check(module, args, running=running):
            if not running[0]:
                raise ValueError(_OUTSIDE)
        hooks += [block.register_forward_pre_hook(enter),
                  block.register_forward_hook(leave),
                  block.norm1.register_forward_pre_hook(check)]
    return hooks


def _positions(value: torch.Tensor, length: int, what, batch: int) -> torch.Tensor:
    """A ``[T,W]`` or ``[B,T,W]`` replacement cut to the ``length`` positions of
    this call; a ``[W]`` one as it is."""
    if value.dim() == 3 and value.size(0) != batch:
        raise ValueError(f"the [B,T,W] output for {what} has {value.size(0)} "
                         f"samples; this call has {batch}")
    if value.dim() >= 2:
        if value.size(-2) < length:
            raise ValueError(f"the output for {what} has {value.size(-2)} "
                             f"positions; this call needs {length}")
        return value[..., :length, :]
    return value


@contextmanager
def replaced_heads(model, replacements: dict):
    """Inside the block, heads hand other outputs than their own to the output
    projection.

    ``replacements`` maps ``(layer, head)`` to the output that head hands on
    instead: ``[B,T,Dh]`` (one per sample of the call), ``[T,Dh]`` (one vector
    per position) or ``[Dh]``. Its mean over a data set gives *mean ablation*:
    it removes what the head says about this sample and keeps its average (a
    vector the head need not ever output); zeros give ``zeroed_heads``, which
    also removes that average. Its output on other samples gives *resample
    ablation*: an output the head does give, about the wrong sample.
    """
    blocks = model.blocks
    by_layer: dict[int, dict[int, torch.Tensor]] = {}
    for pair, value in replacements.items():
        if (not isinstance(pair, tuple) or len(pair) != 2
                or any(isinstance(n, bool) or not isinstance(n, int) for n in pair)):
            raise ValueError(f"heads are (layer, head) pairs of ints, got {pair!r}")
        layer, head = pair
        if not (0 <= layer < len(blocks)
                and 0 <= head < blocks[layer].attention.num_heads):
            raise ValueError(f"cannot replace head {pair}: the model has "
                             f"layers 0-{len(blocks) - 1} "
                             f"and heads 0-{blocks[0].attention.num_heads - 1}")
        value = torch.as_tensor(value)
        head_dim = blocks[layer].attention.head_dim
        if value.dim() not in (1, 2, 3) or value.size(-1) != head_dim:
            raise ValueError(f"the output of head {pair} must be [{head_dim}], "
                             f"[T,{head_dim}] or [B,T,{head_dim}], got {list(value.shape)}")
        by_layer.setdefault(layer, {})[head] = value

    def replace_for(layer):
        attention = blocks[layer].attention

        def replace(module, args):  # args[0]: the heads side by side, [B,T,D]
            # [B,H,T,Dh], a copy to change
            heads = attention.split_heads(args[0]).clone()
            for head, value in by_layer[layer].items():
                heads[:, head] = (_positions(value, heads.size(2), (layer, head),
                                             heads.size(0))
                                  .to(heads.device, heads.dtype))
            return (attention.merge_heads(heads),)
        return replace

    hooks = [blocks[layer].attention.out_proj.register_forward_pre_hook(
                 replace_for(layer))
             for layer in by_layer]
    hooks += _guard(model, by_layer)
    try:
        yield model
    finally:
        for hook in hooks:
            hook.remove()


def zeroed_heads(model, heads):
    """Inside the block, the ``(layer, head)`` pairs of ``heads`` hand zeros to their
    output projection.

    ``with zeroed_heads(model, [(0, 2)]): logits, _ = model(ids)`` is the
    model with layer 0's head 2 knocked out; outside the block it is whole.
    """
    pairs = [tuple(pair) if isinstance(pair, list) else pair for pair in heads]
    if len(set(pairs)) != len(pairs):
        raise ValueError(f"each head may be named once, got {pairs!r}")
    head_dim = model.blocks[0].attention.head_dim  # every layer has the same heads
    # replaced_heads checks each pair
    return replaced_heads(model, {pair: torch.zeros(head_dim) for pair in pairs})


def _check_sublayer(model, key) -> tuple[int, str]:
    layers = len(model.blocks)
    if (not isinstance(key, tuple) or len(key) != 2 or isinstance(key[0], bool)
            or not isinstance(key[0], int) or not 0 <= key[0] < layers
            or key[1] not in PARTS):
        raise ValueError(f"a sublayer is (layer, part) with layer 0-{layers - 1} "
                         f"and part one of {PARTS}, got {key!r}")
    return key


@contextmanager
def replaced_sublayers(model, replacements: dict):
    """Inside the block, sublayers hand the stream other outputs than their own.

    ``replacements`` maps ``(layer, "attention" | "ffn")`` to the output used
    instead: a ``[T,D]`` tensor (one vector per position, such as the
    sublayer's mean over a data set: mean ablation), a ``[D]`` vector for every
    position, or ``0`` for zero ablation (the block then adds nothing, and
    the stream passes that sublayer unchanged). A forward hook that returns a
    value makes PyTorch use that value as the module's output.
    """
    checked = {}
    for key, value in replacements.items():
        layer, part = _check_sublayer(model, key)
        value = (torch.zeros(()) if isinstance(value, (int, float)) and value == 0
                 else torch.as_tensor(value))
        width = model.blocks[layer].attention.d_model
        if (value.dim() > 2 or (value.dim() >= 1 and value.size(-1) != width)
                or (value.dim() == 0 and value != 0)):
            raise ValueError(f"the output of {key} must be 0, a [{width}] vector "
                             f"or a [T,{width}] tensor, got shape {list(value.shape)}")
        checked[(layer, part)] = value

    def hook_for(key):
        def hook(module, args, output):
            # attention returns (x, weights)
            out = output[0] if isinstance(output, tuple) else output
            value = (_positions(checked[key], out.size(1), key, out.size(0))
                     .to(out.device, out.dtype).expand_as(out))
            return (value, output[1]) if isinstance(output, tuple) else value
        layer, part = key
        return getattr(model.blocks[layer], part).register_forward_hook(hook)

    hooks = ([hook_for(key) for key in checked]
             + _guard(model, [layer for layer, _ in checked]))
    try:
        yield model
    finally:
        for hook in hooks:
            hook.remove()


__all__ = ["PARTS", "head_outputs", "replaced_heads", "replaced_sublayers",
           "sublayer_outputs", "zeroed_heads"]
