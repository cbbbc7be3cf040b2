"""What the trained models attend to, and what the mask changes.

Attention arrays here are NumPy ``[L,H,T,T]`` for one sample, indexed
``[layer, head, query, key]``. Query q in 7..12 predicts answer digit q-7,
which is prompt digit 12-q, stored at key 13-q: the *reversal* cell. The key
q+1 holds the answer digit that query q must predict: the *next answer*
cell, readable only when the mask is off.
"""
from __future__ import annotations

import math
from contextlib import contextmanager

import numpy as np
import torch

from .data import PROMPT_LEN, SEQ_LEN

ANSWER_QUERIES = tuple(range(PROMPT_LEN - 1, PROMPT_LEN - 1 + SEQ_LEN))  # 7..12


@contextmanager
def evaluating(model, hooks=()):
    """The model in eval mode inside the block; afterwards its own mode again, and ``hooks`` removed.

    ``hooks``: the handles that ``register_forward_hook`` and its siblings
    return, so that a probe never leaves a hook on the model.
    """
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)
        for hook in hooks:
            hook.remove()


def reversal_key(query: int) -> int:
    """The prompt position answer query ``query`` must read: 13 - query."""
    if query not in ANSWER_QUERIES:
        raise ValueError(f"query must be an answer query {ANSWER_QUERIES[0]}-{ANSWER_QUERIES[-1]}, got {query}")
    return 2 * PROMPT_LEN - 3 - query


@torch.no_grad()
def attention_maps(model, inputs: torch.Tensor, causal: bool | None = None) -> np.ndarray:
    """Teacher-forced ``inputs`` ``[14]`` (one sample) -> weights ``[L,H,14,14]``."""
    if not isinstance(inputs, torch.Tensor) or inputs.dim() != 1:
        raise ValueError(f"inputs must be one sample, a 1-D tensor [T], got {getattr(inputs, 'shape', inputs)!r}")
    with evaluating(model):
        _, weights = model(inputs.unsqueeze(0).to(next(model.parameters()).device), causal=causal)
    return torch.stack([w[0] for w in weights]).cpu().numpy()  # [L,H,T,T]


def _check_maps(weights) -> np.ndarray:
    weights = np.asarray(weights)
    if weights.ndim != 4 or weights.shape[-1] != weights.shape[-2] or weights.shape[-1] <= ANSWER_QUERIES[-1] + 1:
        raise ValueError(f"weights must be [L,H,T,T] with T >= 14, got {list(weights.shape)}")
    return weights


def reversal_weight(weights) -> np.ndarray:
    """``[L,H]``: mean over answer queries 7-12 of the weight on key 13-q."""
    w = _check_maps(weights)
    return np.mean([w[:, :, q, reversal_key(q)] for q in ANSWER_QUERIES], axis=0)


def next_answer_weight(weights) -> np.ndarray:
    """``[L,H]``: mean over answer queries 7-12 of the weight on key q+1 (the future)."""
    w = _check_maps(weights)
    return np.mean([w[:, :, q, q + 1] for q in ANSWER_QUERIES], axis=0)


def change_future_answers(inputs: torch.Tensor, seed: int = 0) -> torch.Tensor:
    """Teacher-forced inputs ``[B,14]`` with every answer digit (positions 8-13) replaced
    by a different digit, drawn from a private generator."""
    generator = torch.Generator().manual_seed(seed)
    changed = inputs.clone()
    answer = changed[:, PROMPT_LEN:]
    offsets = torch.randint(1, 10, answer.shape, generator=generator)
    changed[:, PROMPT_LEN:] = (answer + offsets) % 10
    return changed


@torch.no_grad()
def prefix_logit_change(model, inputs: torch.Tensor, causal: bool | None = None,
                        seed: int = 0) -> float:
    """Largest absolute change of the prefix logits (positions 0-7, all 13 classes)
    when the future answer digits of ``inputs`` ``[B,14]`` are changed.

    With a working causal mask this is exactly 0 on deterministic kernels (the
    CPU's): no prefix position can read the future, and both passes run the
    same shapes through the same kernels, so even the rounding is the same.
    Two *routes* to the same logits are not held to that: the prompt run alone
    against inside 14 tokens, or generation with the KV cache against
    recomputing, may differ by a few float32 steps, since other shapes can
    group a sum in another order (chapter 11 measures both, in float32 and
    float64). Without the mask the change is far from 0.
    """
    with evaluating(model):
        device = next(model.parameters()).device
        a, _ = model(inputs.to(device), causal=causal)
        b, _ = model(change_future_answers(inputs, seed).to(device), causal=causal)
    return float((a[:, :PROMPT_LEN] - b[:, :PROMPT_LEN]).abs().max())





SCORE_PARTS = ("token", "position", "bias")  # the three parts of a layer-0 query or key


@torch.no_grad()
def score_terms(model, ids: torch.Tensor, layer: int = 0, head: int = 0) -> dict[str, torch.Tensor]:
    """A layer-0 head's scaled scores ``[T,T]`` on one sample ``ids`` ``[T]``, split into nine terms.

    Layer 0 reads ``LN(x)`` with ``x = tok + pos`` (``block.norm1``). LayerNorm
    subtracts each position's mean, divides by its standard deviation ``sigma``
    and applies the learned ``gamma`` and ``beta``. The mean is linear, and once
    ``sigma`` is taken from the actual ``x`` the division is a fixed factor per
    position, so the normalised input splits exactly into three parts::

        LN(x) = gamma*(tok - mean(tok))/sigma + gamma*(pos - mean(pos))/sigma + beta

    The projections are linear too, so each query is a token part, a position
    part and a bias part (``beta W_Q + b_Q``), and each key likewise; their dot
    product is a sum of nine terms, named ``"query part·key part"``:
    ``"token·position"`` holds the queries' token parts against the keys'
    position parts. The nine ``[T,T]`` terms add up to the model's own scaled
    scores. ``sigma`` still comes from token and position together: a position
    part is the position row scaled by this sample's ``1/sigma``.

    Only layer 0: layer 1 reads the residual stream, which already holds layer
    0's output, not ``tok + pos``.
    """
    blocks = len(model.blocks)
    if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < blocks:
        raise ValueError(f"layer must be a layer of the model, 0-{blocks - 1}, got {layer!r}")
    if layer != 0:
        raise ValueError(f"layer {layer} reads the residual stream, which holds the earlier blocks' "
                         "output, not tok + pos: only layer 0's scores split into token, position "
                         "and bias terms")
    if model.config.score_multiplier != 1:
        raise ValueError(f"the model scales its scores by {model.config.score_multiplier} "
                         "(chapter 17's control); the split reads the book's scores, "
                         "q.k / sqrt(Dh): use a model with score_multiplier=1")
    attn = model.blocks[0].attention
    if isinstance(head, bool) or not isinstance(head, int) or not 0 <= head < attn.num_heads:
        raise ValueError(f"head must be 0-{attn.num_heads - 1}, got {head!r}")
    longest = model.config.max_positions
    if not isinstance(ids, torch.Tensor) or ids.dim() != 1 or not 0 < ids.numel() <= longest:
        raise ValueError(f"ids must be one sample, a 1-D tensor [T] with 1 <= T <= {longest}, "
                         f"got {getattr(ids, 'shape', ids)!r}")
    device = next(model.parameters()).device
    ids = ids.to(device)
    norm = model.blocks[0].norm1
    tok = model.token_embedding(ids)  # [T,D]
    pos = model.position_embedding(torch.arange(ids.numel(), device=device))  # [T,D]
    x = tok + pos  # [T,D]: what norm1 reads
    sigma = (x.var(dim=-1, unbiased=False, keepdim=True) + norm.eps).sqrt()  # [T,1]
    gamma, beta = norm.weight, norm.bias  # [D], [D]
    parts = {"token": gamma * (tok - tok.mean(dim=-1, keepdim=True)) / sigma,  # [T,D]
             "position": gamma * (pos - pos.mean(dim=-1, keepdim=True)) / sigma,  # [T,D]
             "bias": beta.expand_as(x)}  # [T,D]: the same beta at every position
    rows = slice(head * attn.head_dim, (head + 1) * attn.head_dim)  # this head's slice

    def split(linear):  # {part: [T,Dh]}: each part through W; b joins the bias part
        W = linear.weight[rows].T  # [D,Dh], the formula's layout
        out = {name: part @ W for name, part in parts.items()}  # each [T,Dh]
        out["bias"] = out["bias"] + linear.bias[rows]  # [T,Dh]: beta W + b
        return out

    queries, keys = split(attn.q_proj), split(attn.k_proj)  # {part: [T,Dh]}
    return {f"{q}·{k}": queries[q] @ keys[k].T / math.sqrt(attn.head_dim)  # [T,T]
            for q in SCORE_PARTS for k in SCORE_PARTS}
