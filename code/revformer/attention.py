"""Scaled dot-product attention and multi-head self-attention, written by hand.

Shapes: ``B`` batch, ``H`` heads, ``T`` positions, ``D`` model width,
``Dh = D / H`` head width. Attention weights are ``[B,H,T,T]``, indexed
``[batch, head, query, key]``: row i is what query position i reads.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn


def causal_mask(size: int, device=None) -> torch.Tensor:
    """``[T,T]`` bool, True above the diagonal: the future keys a query may not read.

    The diagonal stays False: position i already holds its own token and
    predicts the token at i+1, so reading itself leaks nothing.
    """
    return torch.ones(size, size, dtype=torch.bool, device=device).triu(diagonal=1)


def softmax_over_keys(scores: torch.Tensor) -> torch.Tensor:
    """Softmax along the last axis (the keys): each row, one query, sums to 1.

    ``exp(s - max) / sum(exp(s - max))``: subtracting the row's largest score
    changes no weight (it cancels in the fraction) but keeps every exponent at
    or below 0, so ``exp`` cannot overflow. A masked score of ``-inf`` gives
    ``exp(-inf) = 0``: weight exactly 0. Written out, it is the same function as
    ``torch.softmax(scores, dim=-1)``, up to rounding in the last digits.
    """
    shifted = scores - scores.amax(dim=-1, keepdim=True)
    exp = shifted.exp()
    return exp / exp.sum(dim=-1, keepdim=True)


def scaled_dot_product_attention(q, k, v, causal: bool = True):
    """softmax(q k^T / sqrt(Dh), over the keys) v, with the causal mask if asked.

    ``q``, ``k``, ``v``: ``[B,H,T,Dh]``. Returns the output ``[B,H,T,Dh]`` and
    the weights ``[B,H,T,T]``, whose rows sum to 1. Without the mask, ``q`` may
    hold fewer positions than ``k`` and ``v`` (chapter 20's newest query).
    """
    if (q.dim() < 2 or k.shape != v.shape or q.shape[:-2] != k.shape[:-2]
            or q.size(-1) != k.size(-1) or (causal and q.size(-2) != k.size(-2))):
        raise ValueError("q, k and v must have shape [B,H,T,Dh] (without the mask, "
                         "q may hold fewer positions), got "
                         f"{list(q.shape)}, {list(k.shape)}, {list(v.shape)}")
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # [B,H,T,T]
    if causal:
        # -inf before the softmax: exp(-inf) = 0, and the visible keys are still
        # normalised to sum to 1. Zeroing weights after the softmax would leave
        # rows that sum to less than 1.
        mask = causal_mask(scores.size(-1), scores.device)  # [T,T]
        scores = scores.masked_fill(mask, float("-inf"))
    weights = softmax_over_keys(scores)  # [B,H,T,T]
    return weights @ v, weights  # [B,H,T,Dh], [B,H,T,T]


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
            raise ValueError(f"d_model ({d_model}) must be divisible by "
                             f"num_heads ({num_heads})")
        self.d_model = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.causal = causal
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """``[B,T,D]`` -> ``[B,T,H,Dh]`` -> ``[B,H,T,Dh]``."""
        batch, length, _ = x.shape
        return x.view(batch, length, self.num_heads, self.head_dim).transpose(1, 2)

    def merge_heads(self, x: torch.Tensor) -> torch.Tensor:
        """``[B,H,T,Dh]`` -> ``[B,T,H,Dh]`` -> ``[B,T,D]``: heads side by side,
        head 0 first."""
        batch, _, length, _ = x.shape
        # transpose gives a strided view; contiguous() copies it
        # into the order view needs
        return x.transpose(1, 2).contiguous().view(batch, length, self.d_model)

    def forward(self, x: torch.Tensor, causal: bool | None = None):
        """``x`` ``[B,T,D]`` -> (output ``[B,T,D]``, weights ``[B,H,T,T]``).

        ``causal=None`` uses the module's own setting; True or False overrides
        it for this call only (chapter 11 turns the mask off this way).
        """
        if x.dim() != 3 or x.size(-1) != self.d_model:
            raise ValueError(f"x must have shape [B,T,{self.d_model}], "
                             f"got {list(x.shape)}")
        q = self.split_heads(self.q_proj(x))  # [B,H,T,Dh]
        k = self.split_heads(self.k_proj(x))  # [B,H,T,Dh]
        v = self.split_heads(self.v_proj(x))  # [B,H,T,Dh]
        use_causal = self.causal if causal is None else causal
        # [B,H,T,Dh], [B,H,T,T]
        heads, weights = scaled_dot_product_attention(q, k, v, use_causal)
        return self.out_proj(self.merge_heads(heads)), weights  # [B,T,D], [B,H,T,T]
