"""The two-layer, decoder-only, Pre-LN Transformer of the experiment.

ids ``[B,T]`` -> token + position embeddings ``[B,T,D]`` -> 2 blocks -> final
LayerNorm -> linear head -> logits ``[B,T,13]``: at each position, the scores
of the 13 possible next tokens.
"""
from __future__ import annotations

import dataclasses

import torch
import torch.nn as nn

from .attention import MultiHeadSelfAttention
from .config import ModelConfig, default_seed


class FeedForward(nn.Module):
    """Position-wise ``Linear(D,Dff) -> GELU -> Linear(Dff,D)``: no mixing across
    positions."""

    def __init__(self, d_model: int = 64, d_ff: int = 128):
        super().__init__()
        self.fc1 = nn.Linear(d_model, d_ff)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class TransformerBlock(nn.Module):
    """Pre-LN: ``u = x + Attn(LN1(x))``, then ``x_out = u + FFN(LN2(u))``.

    The residual path keeps ``[B,T,D]`` untouched; each sublayer reads a
    normalised copy and adds its result back.
    """

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.norm1 = nn.LayerNorm(config.d_model)
        self.attention = MultiHeadSelfAttention(config.d_model, config.num_heads,
                                                config.causal)
        self.norm2 = nn.LayerNorm(config.d_model)
        self.ffn = FeedForward(config.d_model, config.d_ff)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x, causal: bool | None = None):
        """``x`` ``[B,T,D]`` -> (``[B,T,D]``, weights ``[B,H,T,T]``)."""
        attended, weights = self.attention(self.norm1(x), causal)
        x = x + self.dropout(attended)  # [B,T,D]
        x = x + self.dropout(self.ffn(self.norm2(x)))  # [B,T,D]
        return x, weights


class ReversalTransformer(nn.Module):
    """Token and learned absolute position embeddings, blocks, final LN, head."""

    def __init__(self, config: ModelConfig | None = None):
        super().__init__()
        self.config = config or ModelConfig()
        c = self.config
        self.token_embedding = nn.Embedding(c.vocab_size, c.d_model)
        self.position_embedding = nn.Embedding(c.max_positions, c.d_model)
        self.blocks = nn.ModuleList(TransformerBlock(c) for _ in range(c.num_layers))
        self.final_norm = nn.LayerNorm(c.d_model)
        self.lm_head = nn.Linear(c.d_model, c.vocab_size)

    def forward(self, ids: torch.Tensor, causal: bool | None = None):
        """ids ``[B,T]`` -> (logits ``[B,T,13]``, per-layer weights, each
        ``[B,H,T,T]``).

        ``causal=None`` keeps every layer's own mask setting; True or False
        sets the mask of every layer for this call.
        """
        if ids.dim() != 2:
            raise ValueError(f"ids must have shape [B,T], got {list(ids.shape)}")
        length = ids.size(1)
        if length > self.config.max_positions:
            raise ValueError(
                f"sequence of {length} tokens is longer than the position table "
                f"({self.config.max_positions})"
            )
        positions = torch.arange(length, device=ids.device)  # [T]: 0, 1, ..., T-1
        # [B,T,D] + [T,D]
        x = self.token_embedding(ids) + self.position_embedding(positions)
        attention = []
        for block in self.blocks:
            x, weights = block(x, causal)
            attention.append(weights)  # [B,H,T,T]
        return self.lm_head(self.final_norm(x)), attention  # [B,T,13]


def init_weights(model: nn.Module, seed: int) -> None:
    """Linear and Embedding weights ~ N(0, 0.02), Linear biases 0, LayerNorm (1, 0).

    The draws come from one private generator in module order. Every group's
    tensors have the same shapes in the same order (one head of 64 or four of
    16 store the same ``Linear(64,64)``), so the same seed gives every group
    the same initial values.
    """
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                module.weight.normal_(0.0, 0.02, generator=generator)
            if isinstance(module, nn.Linear) and module.bias is not None:
                module.bias.zero_()
            if isinstance(module, nn.LayerNorm):
                module.weight.fill_(1.0)
                module.bias.zero_()


def make_model(num_heads: int = 4, seed: int | None = None, causal: bool = True,
               config: ModelConfig | None = None, device=None) -> ReversalTransformer:
    """Build the 69,709-parameter model, initialised from ``seed`` on the CPU.

    ``seed=None`` takes the build's seed (``revformer.config.default_seed``:
    42 unless ``REVFORMER_SEED`` says otherwise).
    ``num_heads`` and ``causal`` override ``config``. Weights are drawn on the
    CPU and then moved, so a seed gives the same values on every device.
    """
    config = dataclasses.replace(config or ModelConfig(), num_heads=num_heads,
                                 causal=causal)
    model = ReversalTransformer(config)
    init_weights(model, default_seed() if seed is None else seed)
    if config.score_multiplier != 1:
        scale_scores(model, config.score_multiplier)
    return model.to(device) if device is not None else model


def scale_scores(model: ReversalTransformer, multiplier: float) -> None:
    """Multiply every attention score of ``model`` by ``multiplier``, from now on.

    Chapter 17's temperature control (``ModelConfig.score_multiplier``), kept
    out of the taught attention: a forward hook multiplies each layer's
    queries, and ``(m q) k^T = m (q k^T)``, so every score is multiplied and
    nothing else changes (exactly, for a power of two such as 2 or 0.5).
    """
    def multiply(module, inputs, output):
        return output * multiplier  # [B,T,D]: the queries of every head

    for block in model.blocks:
        block.attention.q_proj.register_forward_hook(multiply)


def count_parameters(module: nn.Module) -> int:
    """Number of trainable values in ``module``."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad)
