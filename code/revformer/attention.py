"""Scaled dot-product attention and multi-head self-attention, written by hand.

Shapes: ``B`` batch, ``H`` heads, ``T`` positions, ``D`` model width,
``Dh = D / H`` head width. Attention weights are ``[B,H,T,T]``, indexed
``[batch, head, query, key]``: row i is what query position i reads.
"""
from __future__ import annotations

import math
from functools import lru_cache

import torch
import torch.nn as nn


@lru_cache(maxsize=64)
def causal_mask(size: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """``[T,T]`` bool, True above the diagonal: the future keys a query may not read.

    The diagonal stays False: position i already holds its own token and
    predicts the token at i+1, so reading itself leaks nothing. The mask is
    built once per length and device and reused (it is never written to).
    It is built outside inference mode even when first asked for during an
    evaluation, so that training can use the same tensor afterwards.
    """
    with torch.inference_mode(False):
        return torch.ones(size, size, dtype=torch.bool, device=device).triu(diagonal=1)


class _SoftmaxOverKeys(torch.autograd.Function):
    """softmax along the last axis, written out, with its backward written out too.

    Forward: ``exp(s - max) / sum(exp(s - max))``; subtracting the row's
    maximum changes nothing mathematically and keeps ``exp`` from
    overflowing. Backward: for ``y = softmax(s)`` and upstream gradient
    ``g``, ``ds = y * (g - sum(g * y))`` along the same axis.

    PyTorch's own CPU softmax is slow on rows as short as ours (14 keys);
    these few plain tensor operations do the same arithmetic in about a third
    of the time, so training and evaluation spend less time here.
    """

    @staticmethod
    def forward(ctx, scores):
        weights = (scores - scores.amax(dim=-1, keepdim=True)).exp_()
        weights = weights.div_(weights.sum(dim=-1, keepdim=True))
        ctx.save_for_backward(weights)
        return weights

    @staticmethod
    def backward(ctx, grad):
        (weights,) = ctx.saved_tensors
        return weights * (grad - (grad * weights).sum(dim=-1, keepdim=True))


def softmax_over_keys(scores: torch.Tensor) -> torch.Tensor:
    """Attention weights from scores ``[...,T,T]``: each row (a query) sums to 1 over the keys.

    Masked scores (``-inf``) get weight exactly 0, as long as a row keeps at
    least one visible key (the diagonal always is).
    """
    return _SoftmaxOverKeys.apply(scores)


def scaled_dot_product_attention(q, k, v, causal: bool = True):
    """softmax(q k^T / sqrt(Dh), over the keys) v, with the causal mask if asked.

    ``q``, ``k``, ``v``: ``[B,H,T,Dh]`` (any leading dims work). Returns the
    output ``[B,H,T,Dh]`` and the weights ``[B,H,T,T]``, whose rows sum to 1.

    ``q`` may hold fewer positions than ``k`` and ``v``: ``[B,H,Tq,Dh]`` are
    then the queries of the last ``Tq`` positions, and the weights are
    ``[B,H,Tq,T]``, the last ``Tq`` rows of the full matrix (the model uses
    this where only the last rows are read).
    """
    if (q.dim() < 2 or k.shape != v.shape or q.shape[:-2] != k.shape[:-2] or q.size(-1) != k.size(-1)
            or q.size(-2) > k.size(-2)):
        raise ValueError(
            "q, k and v must have shape [B,H,T,Dh] (q may have fewer positions T), got "
            f"{list(q.shape)}, {list(k.shape)}, {list(v.shape)}"
        )
    head_dim = q.size(-1)
    # Scaled and masked in place (div_, masked_fill_): the product is a new
    # tensor that nothing else reads, so no second [B,H,Tq,T] is allocated.
    scores = (q @ k.transpose(-2, -1)).div_(math.sqrt(head_dim))  # [B,H,Tq,T]
    if causal:
        # -inf before the softmax: exp(-inf) = 0, and the visible keys are
        # still normalised to sum to 1. Zeroing after the softmax would not be.
        length, queries = k.size(-2), q.size(-2)
        scores.masked_fill_(causal_mask(length, scores.device)[length - queries:], float("-inf"))
    weights = softmax_over_keys(scores)  # [B,H,Tq,T], along the keys
    return weights @ v, weights  # [B,H,Tq,Dh], [B,H,Tq,T]


class MultiHeadSelfAttention(nn.Module):
    """Four separate ``Linear(D,D)``: Q, K, V and the output projection.

    Each projection uses all D input features; splitting into heads only
    decides which Dh-wide slice of the projection each head compares and
    mixes. The heads' outputs are concatenated (not averaged) and mixed by
    ``out_proj``.
    """

    def __init__(self, d_model: int = 64, num_heads: int = 4, causal: bool = True):
        super().__init__()
        for name, value in (("d_model", d_model), ("num_heads", num_heads)):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if d_model % num_heads != 0:
            raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")
        self.d_model = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.causal = causal
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """``[B,T,D]`` -> ``[B,H,T,Dh]``."""
        batch, length, _ = x.shape
        return x.view(batch, length, self.num_heads, self.head_dim).transpose(1, 2)

    def merge_heads(self, x: torch.Tensor) -> torch.Tensor:
        """``[B,H,T,Dh]`` -> ``[B,T,D]``: heads side by side, head 0 first."""
        batch, _, length, _ = x.shape
        # transpose makes a strided view; reshape copies it into the order view needs
        return x.transpose(1, 2).reshape(batch, length, self.d_model)

    def forward(self, x: torch.Tensor, causal: bool | None = None, queries_from: int = 0):
        """``x`` ``[B,T,D]`` -> (output ``[B,T,D]``, weights ``[B,H,T,T]``).

        ``causal=None`` uses the module's own setting; True or False overrides
        it for this call only (chapter 11 turns the mask off this way).
        ``queries_from=p`` computes the output of positions ``p..T-1`` only
        (``[B,T-p,D]``, weights ``[B,H,T-p,T]``); keys and values still
        cover every position, so those rows are exactly the full ones.
        """
        if x.dim() != 3 or x.size(-1) != self.d_model:
            raise ValueError(f"x must have shape [B,T,{self.d_model}], got {list(x.shape)}")
        if not 0 <= queries_from < x.size(1):
            raise ValueError(f"queries_from must be a position 0-{x.size(1) - 1}, got {queries_from}")
        use_causal = self.causal if causal is None else causal
        q = self.split_heads(self.q_proj(x[:, queries_from:]))  # [B,H,T,Dh] (T-p rows)
        k = self.split_heads(self.k_proj(x))  # [B,H,T,Dh]
        v = self.split_heads(self.v_proj(x))  # [B,H,T,Dh]
        heads, weights = scaled_dot_product_attention(q, k, v, causal=use_causal)
        return self.out_proj(self.merge_heads(heads)), weights  # [B,T,D], [B,H,T,T]
