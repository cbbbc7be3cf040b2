"""Probes of a trained model: read the residual stream, take a part away, measure.

- ``logit_lens(model, ids)``: the residual stream ``[B,T,D]`` after the
  embeddings and after every sublayer, each read through the model's own final
  LayerNorm and head, as if the model stopped there: logits ``[B,T,13]``.
- ``answer_scores``: teacher-forced loss, accuracies and the *margin* of the
  right logit over the best wrong one at every supervised position.
- ``knockout_table``: every head, every layer's attention and every
  feed-forward, each taken away alone, zeroed and mean-ablated.
- ``head_writes``: what each head adds to the stream through its slice of the
  output projection, ``[B,H,T,D]`` per layer.
- ``direct_logit_attribution``: the stream at the end is a sum of parts (the
  embeddings, every head's write, every FFN's output, the biases); each
  part's direct share of the margin, read through the final LayerNorm with
  the scale of the actual stream and the head. The shares add up to the margin.

Everything here runs the model's own forward pass and changes it only through
hooks (``revformer.interventions``), which are removed again when a call returns.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .analysis import evaluating
from .data import IGNORE_INDEX, PROMPT_LEN
from .generate import generate, score
from .interventions import (PARTS, head_outputs, replaced_heads, replaced_sublayers,
                            sublayer_outputs, zeroed_heads)


@torch.no_grad()
def residual_stream(model, ids: torch.Tensor) -> dict[str, torch.Tensor]:
    """The stream ``[B,T,D]`` at every stage: ``"embeddings"``, then for each layer
    ``"after attention L"`` and ``"after block L"`` (after its feed-forward).

    Forward pre-hooks record what the first block and each ``norm2`` read (the
    embeddings; the stream after a block's attention); forward hooks record
    what each block returns.
    """
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2:
        raise ValueError(f"ids must be a [B,T] tensor of token ids, "
                         f"got {getattr(ids, 'shape', ids)!r}")
    stream, hooks = {}, []

    def read_input(name):
        def pre_hook(module, args):  # PyTorch calls it with the module's inputs
            stream[name] = args[0]
        return pre_hook

    def read_output(name):
        # called with the inputs and the output: (x, weights) for a block
        def hook(module, args, output):
            stream[name] = output[0]
        return hook

    hooks.append(model.blocks[0].register_forward_pre_hook(read_input("embeddings")))
    for layer, block in enumerate(model.blocks):
        hooks.append(block.norm2.register_forward_pre_hook(
            read_input(f"after attention {layer}")))
        hooks.append(block.register_forward_hook(read_output(f"after block {layer}")))
    with evaluating(model, hooks):
        model(ids.to(next(model.parameters()).device))
    order = ["embeddings"] + [f"after {what} {layer}"
                              for layer in range(len(model.blocks))
                              for what in ("attention", "block")]
    return {name: stream[name] for name in order}


@torch.no_grad()
def logit_lens(model, ids: torch.Tensor) -> dict[str, torch.Tensor]:
    """Every stage of ``residual_stream`` read through ``final_norm`` and
    ``lm_head``: logits ``[B,T,13]``. The last stage is the model's own output."""
    return {name: model.lm_head(model.final_norm(x))
            for name, x in residual_stream(model, ids).items()}


@dataclass(frozen=True)
class AnswerScores:
    """Teacher-forced results over the supervised positions (7-13 here)."""

    loss: float  # mean cross-entropy, as in training
    # share of answer digits (all supervised positions but the last) predicted right
    digit_accuracy: float
    # share of rows with every supervised token right, EOS included
    sequence_accuracy: float
    # [B,P]: right logit minus the largest wrong one; > 0 where the argmax is right
    margins: torch.Tensor

    @property
    def min_margin(self) -> float:
        return float(self.margins.min())


def margins(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """``[B,P,C]`` logits and ``[B,P]`` targets -> ``[B,P]``: the right logit minus
    the best wrong one."""
    if logits.dim() != 3 or targets.shape != logits.shape[:2]:
        raise ValueError(f"logits must be [B,P,C] and targets [B,P], "
                         f"got {list(logits.shape)} and {list(targets.shape)}")
    right = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    wrong = logits.scatter(-1, targets.unsqueeze(-1), float("-inf")).amax(dim=-1)
    return right - wrong


def answer_scores(logits: torch.Tensor, labels: torch.Tensor) -> AnswerScores:
    """Score logits ``[B,T,13]`` against labels ``[B,T]`` (-100 where nothing is
    graded)."""
    if logits.dim() != 3 or labels.shape != logits.shape[:2]:
        raise ValueError(f"logits must be [B,T,13] and labels [B,T], "
                         f"got {list(logits.shape)} and {list(labels.shape)}")
    graded = (labels != IGNORE_INDEX).to(logits.device)
    positions = graded[0].nonzero().flatten()
    if positions.numel() == 0 or not bool((graded == graded[0]).all()):
        raise ValueError("every row must grade the same, non-empty set of positions")
    # [B,P,13], [B,P]
    logits, targets = logits[:, positions], labels.to(logits.device)[:, positions]
    hits = logits.argmax(dim=-1) == targets
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)),
                           targets.reshape(-1)).item()
    return AnswerScores(loss, hits[:, :-1].float().mean().item(),
                        hits.all(dim=1).float().mean().item(),
                        margins(logits, targets).cpu())


@torch.no_grad()
def knockout_table(model, inputs: torch.Tensor, labels: torch.Tensor,
                   generation: bool = False) -> list[dict]:
    """Each head, each layer's attention and each feed-forward taken away alone.

    One row for the model as it is (``part`` ``"none"``), then one per part
    and way: ``ablation`` ``"zero"`` (heads: ``zeroed_heads``;
    sublayers: an output of 0) or ``"mean"`` (the part's mean output over
    ``inputs``, position by position). Rows hold ``part``, ``layer``, ``head``
    (None but for heads), ``ablation``, ``loss``, ``digit_accuracy``,
    ``sequence_accuracy`` and ``min_margin``, all teacher-forced on
    ``inputs`` ``[B,T]`` against ``labels`` ``[B,T]``. With
    ``generation=True`` each row also holds ``generated_sequence_accuracy``:
    greedy generation from the prompts ``inputs[:, :8]`` under the same hooks
    (``kv_cache=False``, which the hooks require), scored against ``labels[:, 7:]``.
    """
    if (not isinstance(inputs, torch.Tensor) or inputs.dim() != 2
            or labels.shape != inputs.shape):
        raise ValueError(f"inputs and labels must be [B,T] tensors of one shape, got "
                         f"{getattr(inputs, 'shape', inputs)!r} and "
                         f"{getattr(labels, 'shape', labels)!r}")
    device = next(model.parameters()).device
    ids = inputs.to(device)
    head_means = [o.mean(dim=0) for o in head_outputs(model, ids)]  # per layer [H,T,Dh]
    # [T,D]
    part_means = {key: o.mean(dim=0) for key, o in sublayer_outputs(model, ids).items()}
    rows = []

    def add(part, layer, head, ablation, logits):
        s = answer_scores(logits, labels)
        rows.append({"part": part, "layer": layer, "head": head, "ablation": ablation,
                     "loss": s.loss, "digit_accuracy": s.digit_accuracy,
                     "sequence_accuracy": s.sequence_accuracy,
                     "min_margin": s.min_margin})
        # still inside the caller's with block: the same part is taken out
        if generation:
            tokens = generate(model, ids[:, :PROMPT_LEN], kv_cache=False)
            rows[-1]["generated_sequence_accuracy"] = score(
                tokens, labels[:, PROMPT_LEN - 1:]).sequence_accuracy

    with evaluating(model):
        add("none", None, None, "none", model(ids)[0])
        for layer, block in enumerate(model.blocks):
            for head in range(block.attention.num_heads):
                with zeroed_heads(model, [(layer, head)]):
                    add("head", layer, head, "zero", model(ids)[0])
                with replaced_heads(model, {(layer, head): head_means[layer][head]}):
                    add("head", layer, head, "mean", model(ids)[0])
        for layer in range(len(model.blocks)):
            for part in PARTS:
                for ablation, value in (("zero", 0),
                                        ("mean", part_means[(layer, part)])):
                    with replaced_sublayers(model, {(layer, part): value}):
                        add(part, layer, None, ablation, model(ids)[0])
    return rows


@torch.no_grad()
def head_writes(model, ids: torch.Tensor) -> list[torch.Tensor]:
    """What each head adds to the stream: ``W_O^(h) o_h``, one ``[B,H,T,D]`` per layer.

    ``out_proj`` reads the heads side by side, so its weight ``[D,D]`` cut
    into ``H`` column blocks ``[D,Dh]`` gives each head's share of its output;
    the shares plus ``out_proj``'s bias are the attention's output.
    """
    return [_through_out_proj(block.attention, outs)  # outs: [B,H,T,Dh]
            for block, outs in zip(model.blocks, head_outputs(model, ids))]


def _through_out_proj(attention, per_head: torch.Tensor) -> torch.Tensor:
    """``[B,H,T,Dh]`` -> each head's share of ``out_proj``, ``W_O^(h) x_h``: ``[B,H,T,D]`` (no bias)."""
    weight = attention.out_proj.weight.view(-1, attention.num_heads, attention.head_dim)  # [D,H,Dh]
    return torch.einsum("bhtk,dhk->bhtd", per_head, weight)


@torch.no_grad()
def value_readout(model, ids: torch.Tensor, layer: int = 0) -> torch.Tensor:
    """What each head of ``layer`` would write from each position it reads, read straight to the logits:
    ``[B,H,T,13]``, its logits for the position's value (the head's OV path).

    For a key position ``k`` and head ``h`` it is the write ``W_O^(h) v_h(k)`` that the head makes
    where all its weight falls on ``k``, through the final LayerNorm (its ``gamma``, after taking
    the write's mean; the scale ``sigma`` is one positive number per query and changes no row's
    order) and the output layer ``lm_head`` without its bias. Direct path only: what the write
    changes in later layers is not counted.
    """
    if not (isinstance(layer, int) and 0 <= layer < len(model.blocks)):
        raise ValueError(f"layer must be 0 to {len(model.blocks) - 1}, got {layer!r}")
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2:
        raise ValueError(f"ids must be a [B,T] tensor, got {getattr(ids, 'shape', ids)!r}")
    attention = model.blocks[layer].attention
    values = []
    hook = attention.v_proj.register_forward_hook(lambda module, args, out: values.append(out))
    with evaluating(model, [hook]):
        model(ids.to(next(model.parameters()).device))
    writes = _through_out_proj(attention, attention.split_heads(values[0]))  # [B,H,T,D]
    centred = writes - writes.mean(dim=-1, keepdim=True)
    return (centred * model.final_norm.weight) @ model.lm_head.weight.T  # [B,H,T,13]


@torch.no_grad()
def direct_logit_attribution(model, ids: torch.Tensor, labels: torch.Tensor,
                             minus_mean: bool = False) -> dict[tuple, torch.Tensor]:
    """Each part's direct share of the margin at every graded position:
    ``{part: [B,P]}``.

    The stream at the end, ``x`` ``[B,T,D]``, is a sum of parts: the
    embeddings, each head's write (``head_writes``), each attention's
    ``out_proj`` bias and each FFN's output. The final LayerNorm is
    ``gamma * (x - mean(x)) / sigma(x) + beta``; with ``sigma`` the scale of
    the actual ``x``, held fixed (the usual choice), it is linear in the parts.
    A part ``c`` then moves the margin by
    ``(W_U[y] - W_U[r]) . (gamma * (c - mean(c)) / sigma)``,
    with ``y`` the right token and ``r`` its strongest rival in the model's
    own logits. Keys: ``("embeddings", None, None)``, ``("head", layer, head)``,
    ``("bias", layer, None)`` (``out_proj``'s), ``("ffn", layer, None)`` and
    ``("final", None, None)`` (``beta`` and the head's bias). The shares add
    up to ``margins`` of the model's logits. Direct means through the
    residual path only: what a part changes in later layers is not counted.

    With ``minus_mean=True`` each head's write loses its mean over the batch
    (position by position) first: the share of what mean ablation takes away.
    Those head shares no longer add up to the margin.
    """
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2 or labels.shape != ids.shape:
        raise ValueError(f"ids and labels must be [B,T] tensors of one shape, got "
                         f"{getattr(ids, 'shape', ids)!r} and "
                         f"{getattr(labels, 'shape', labels)!r}")
    device = next(model.parameters()).device
    ids = ids.to(device)
    # the graded positions [P]
    graded = (labels != IGNORE_INDEX)[0].nonzero().flatten().to(device)
    targets = labels.to(device)[:, graded]  # [B,P]
    stream = residual_stream(model, ids)
    x = stream[f"after block {len(model.blocks) - 1}"][:, graded]  # [B,P,D]
    norm, head = model.final_norm, model.lm_head
    sigma = (x.var(dim=-1, unbiased=False, keepdim=True) + norm.eps).sqrt()  # [B,P,1]
    logits = head(norm(x))  # [B,P,13]
    # [B,P]
    rival = logits.scatter(-1, targets.unsqueeze(-1), float("-inf")).argmax(dim=-1)
    direction = head.weight[targets] - head.weight[rival]  # [B,P,D]: W_U[y] - W_U[r]

    def share(c):  # [B,P,D] -> [B,P]
        return (direction * norm.weight * (c - c.mean(dim=-1, keepdim=True))
                / sigma).sum(dim=-1)

    parts = {("embeddings", None, None): share(stream["embeddings"][:, graded])}
    ffn_out = sublayer_outputs(model, ids)
    for layer, writes in enumerate(head_writes(model, ids)):
        for h in range(writes.size(1)):
            write = (writes[:, h] - writes[:, h].mean(dim=0) if minus_mean
                     else writes[:, h])  # [B,T,D]
            parts[("head", layer, h)] = share(write[:, graded])
        bias = model.blocks[layer].attention.out_proj.bias
        parts[("bias", layer, None)] = share(bias.expand_as(x))
        parts[("ffn", layer, None)] = share(ffn_out[(layer, "ffn")][:, graded])
    parts[("final", None, None)] = ((direction * norm.bias).sum(dim=-1)
                                    + head.bias[targets] - head.bias[rival])
    return parts


__all__ = ["AnswerScores", "answer_scores", "direct_logit_attribution", "head_writes",
           "value_readout",
           "knockout_table", "logit_lens", "margins", "residual_stream"]
