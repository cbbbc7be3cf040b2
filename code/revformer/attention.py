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


@lru_cache(maxsize=64)
def causal_bias(size: int, device: torch.device | str = "cpu",
                dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """``causal_mask`` as numbers to add: ``[T,T]``, -inf where masked, 0 elsewhere.

    ``scores + causal_bias(T)`` equals ``scores.masked_fill(causal_mask(T), -inf)``
    exactly (``s + 0 = s``), and an addition broadcast over ``[B,H]`` is
    several times quicker on the CPU than ``masked_fill`` with a broadcast
    boolean mask. Built once per length, device and dtype, like the mask.
    """
    with torch.inference_mode(False):
        return torch.zeros(size, size, dtype=dtype, device=device).masked_fill_(
            causal_mask(size, device), float("-inf"))


LOG2_E = 1.0 / math.log(2.0)  # e^x = 2^(x log2 e)


def _exp_shifted(scores: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    """``exp(scores - shift)`` as ``2^((scores - shift) log2 e)``, in a new tensor.

    PyTorch's CPU ``exp`` takes a slow path for every ``-inf`` (each masked
    score), where ``exp2`` does not: about six times quicker here.
    """
    return (scores - shift).mul_(LOG2_E).exp2_()


def _row_softmax(scores: torch.Tensor) -> torch.Tensor:
    """The textbook form: each row shifted by its own maximum."""
    weights = _exp_shifted(scores, scores.amax(dim=-1, keepdim=True))
    return weights.div_(weights.sum(dim=-1, keepdim=True))


class _SoftmaxOverKeys(torch.autograd.Function):
    """softmax along the last axis, written out, with its backward written out too.

    Forward: ``exp(s - c) / sum(exp(s - c))`` along a row gives the same
    weights for any constant ``c`` of that row. The textbook takes the row's
    largest score, so that no exponent is above 0 and ``exp`` cannot
    overflow. On the CPU a maximum over every 14 numbers is slow, so ``c``
    is the query's score for its own key (the diagonal, never masked): one
    strided read instead. The row then holds ``exp(0) = 1``, so its sum is
    at least 1 and cannot underflow; should a score lie so far above its
    diagonal that a term or the sum overflows, that row is redone with its
    own maximum. Each row reads only its own scores, so a query's weights
    stay exactly what they were when later positions change. On a
    GPU the maximum is quick and the check would stop the GPU's queue once
    a call, so the textbook form runs there.

    Backward: for ``y = softmax(s)`` and upstream gradient ``g``,
    ``ds = y * (g - sum(g * y))`` along the same axis.

    PyTorch's own CPU softmax is slow on rows as short as ours (14 keys);
    these plain tensor operations do the same arithmetic several times
    quicker, so training and evaluation spend less time here.
    """

    @staticmethod
    def forward(ctx, scores):
        queries, keys = scores.shape[-2:] if scores.dim() >= 2 else (0, 0)
        if scores.device.type == "cpu" and 0 < queries <= keys:
            # the queries are the last Tq positions: query r's own key is T - Tq + r
            own = scores.diagonal(offset=keys - queries, dim1=-2, dim2=-1).unsqueeze(-1)  # [...,Tq,1]
            weights = _exp_shifted(scores, own)
            totals = weights.sum(dim=-1, keepdim=True)
            weights = weights.div_(totals)
            safe = torch.isfinite(totals).squeeze(-1)  # [...,Tq]
            if not bool(safe.all()):
                weights[~safe] = _row_softmax(scores[~safe])  # those rows only, [rows,T]
        else:
            weights = _row_softmax(scores)
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
    # Scaled and masked in place (div_, add_): the product is a new tensor
    # that nothing else reads, so no second [B,H,Tq,T] is allocated.
    scores = (q @ k.transpose(-2, -1)).div_(math.sqrt(head_dim))  # [B,H,Tq,T]
    if causal:
        # -inf before the softmax: exp(-inf) = 0, and the visible keys are
        # still normalised to sum to 1. Zeroing after the softmax would not be.
        # Adding causal_bias (-inf above the diagonal, 0 elsewhere) is the
        # same as masked_fill(causal_mask, -inf), and quicker.
        length, queries = k.size(-2), q.size(-2)
        scores.add_(causal_bias(length, scores.device, scores.dtype)[length - queries:])
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
