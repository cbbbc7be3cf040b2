"""Greedy autoregressive generation and the two accuracies.

Generation starts from the 8-token prompt ``BOS d0..d5 SEP`` and runs seven
forward passes, one new token each, always reading the logits of the last
position. By default every pass recomputes the whole prefix, as the article
does; ``kv_cache=True`` (``generate_cached``) keeps each layer's keys and
values instead (``KVCache``), which the causal mask makes exact.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .attention import scaled_dot_product_attention
from .data import BOS, EOS, PROMPT_LEN, SEP, SEQ_LEN, check_token_batch


def check_prompts(prompts) -> None:
    """Raise ``ValueError`` unless ``prompts`` is ``[B,8]`` of ``BOS d0..d5 SEP``."""
    check_token_batch(prompts, PROMPT_LEN, "prompts")
    if prompts.size(0) == 0:
        raise ValueError("prompts is empty: expected at least one row")
    if not bool((prompts[:, 0] == BOS).all()):
        raise ValueError(f"every prompt must start with BOS ({BOS})")
    if not bool((prompts[:, -1] == SEP).all()):
        raise ValueError(f"every prompt must end with SEP ({SEP})")
    digits = prompts[:, 1:-1]
    if not bool(((digits >= 0) & (digits <= 9)).all()):
        raise ValueError("prompt positions 1-6 must hold digits 0-9")


class KVCache:
    """Every layer's keys and values for the positions a model has read so far,
    ``[B,H,t,Dh]`` each.

    With the causal mask, position i's keys and values depend on tokens 0..i
    only, so they do not change when later tokens arrive: each step computes
    the new position alone, and its query reads the kept keys and values.
    This is the forward pass of ``TransformerBlock`` and ``ReversalTransformer``
    again, written out with the keys and values kept.
    """

    def __init__(self, model):
        self.model = model
        self.keys = [None] * len(model.blocks)
        self.values = [None] * len(model.blocks)
        self.length = 0  # positions read so far

    def next_logits(self, tokens: torch.Tensor) -> torch.Tensor:
        """Read the positions of ``tokens`` ``[B,T]`` not read yet (the whole
        prompt first, then one token a call); the logits ``[B,13]`` of the last."""
        model, start = self.model, self.length
        if start and tokens.size(1) != start + 1:
            raise ValueError(f"after the prompt, the cache reads one new token a call: "
                             f"it has read {start}, got {tokens.size(1)}")
        # the new positions only
        positions = torch.arange(start, tokens.size(1), device=tokens.device)
        x = (model.token_embedding(tokens[:, start:])
             + model.position_embedding(positions))  # [B,t,D]
        for layer, block in enumerate(model.blocks):
            attention = block.attention
            h = block.norm1(x)
            q = attention.split_heads(attention.q_proj(h))  # [B,H,t,Dh]: new queries
            k = attention.split_heads(attention.k_proj(h))
            v = attention.split_heads(attention.v_proj(h))
            # the earlier positions' keys and values, kept from the steps before
            if start:
                k = torch.cat([self.keys[layer], k], dim=2)  # [B,H,T,Dh]
                v = torch.cat([self.values[layer], v], dim=2)
            self.keys[layer], self.values[layer] = k, v
            # The prompt's queries read with the causal mask. A later call has one
            # query, the newest position: every key is at or before it, so there
            # is nothing to mask.
            heads, _ = scaled_dot_product_attention(q, k, v, causal=start == 0)
            x = x + block.dropout(attention.out_proj(attention.merge_heads(heads)))
            x = x + block.dropout(block.ffn(block.norm2(x)))
        self.length = tokens.size(1)
        return model.lm_head(model.final_norm(x[:, -1]))  # [B,13]


def uses_mask(model, causal: bool | None = None) -> bool:
    """Whether a forward pass with ``causal`` (None: each layer's own setting)
    masks every layer."""
    if causal is not None:
        return causal
    return all(block.attention.causal for block in model.blocks)


@torch.inference_mode()
def generate(model, prompts: torch.Tensor, causal: bool | None = None,
             kv_cache: bool = False, return_logits: bool = False):
    """``[B,8]`` prompts -> ``[B,7]`` greedy tokens; EOS repeats once a row has
    emitted it.

    No token is forbidden: a model that writes SEP where a digit belongs is
    scored as wrong, not corrected. The model's train/eval mode is restored.
    The result is on the device of ``prompts``. ``kv_cache=True`` gives the
    same tokens with less work (``generate_cached``); ``return_logits=True``
    returns ``(tokens, logits)``, the logits ``[B,7,13]`` each step read.
    """
    if kv_cache:
        return generate_cached(model, prompts, causal, return_logits)

    def next_logits(tokens):  # [B,t] -> [B,13]
        logits, _ = model(tokens, causal=causal)  # [B,t,13]: the whole prefix again
        return logits[:, -1]  # the last position predicts what follows

    return greedy(model, prompts, next_logits, return_logits)


@torch.inference_mode()
def generate_cached(model, prompts: torch.Tensor, causal: bool | None = None,
                    return_logits: bool = False):
    """``generate`` with a ``KVCache``: the same tokens, and each step computes
    only its new position. Only for a model that attends with the causal mask."""
    if not uses_mask(model, causal):
        raise ValueError("`kv_cache=True` needs the causal mask: without it every "
                         "position reads the later ones, so the keys and values of "
                         "earlier positions change with each new token, and kept ones "
                         "would be stale; generate with `kv_cache=False`")
    return greedy(model, prompts, KVCache(model).next_logits, return_logits)


def greedy(model, prompts: torch.Tensor, next_logits, return_logits: bool = False):
    """Seven greedy steps from ``[B,8]`` prompts: each appends the most likely
    token under ``next_logits(tokens)`` (``[B,t]`` -> ``[B,13]``)."""
    check_prompts(prompts)
    was_training = model.training
    model.eval()
    try:
        tokens = prompts.to(next(model.parameters()).device, torch.long)
        finished = torch.zeros(tokens.size(0), dtype=torch.bool, device=tokens.device)
        new, read = [], []
        for _ in range(SEQ_LEN + 1):
            last = next_logits(tokens)  # [B,13]
            next_token = last.argmax(dim=-1).masked_fill(finished, EOS)  # [B]
            finished |= next_token == EOS
            new.append(next_token)
            read.append(last)
            tokens = torch.cat([tokens, next_token.unsqueeze(1)], dim=1)
    finally:
        model.train(was_training)
    generated = torch.stack(new, dim=1).to(prompts.device)  # [B,7]
    return ((generated, torch.stack(read, dim=1).to(prompts.device)) if return_logits
            else generated)


@dataclass(frozen=True)
class Scores:
    """Per-row results and the two accuracies."""

    digits_correct: torch.Tensor  # [B], 0-6
    sequence_correct: torch.Tensor  # [B], bool

    @property
    def digit_accuracy(self) -> float:
        """Right digits over all digit positions (B x 6)."""
        return (float(self.digits_correct.sum())
                / (SEQ_LEN * self.digits_correct.numel()))

    @property
    def sequence_accuracy(self) -> float:
        """Rows with all six digits right and EOS as the seventh token."""
        return float(self.sequence_correct.float().mean())


def score(generated: torch.Tensor, answers: torch.Tensor) -> Scores:
    """Compare ``[B,7]`` generated tokens with ``[B,7]`` answers (six digits, EOS)."""
    for name, t in (("generated", generated), ("answers", answers)):
        if (not isinstance(t, torch.Tensor) or t.dim() != 2
                or t.size(1) != SEQ_LEN + 1):
            shape = list(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
            raise ValueError(f"{name} must be a [B,{SEQ_LEN + 1}] tensor, got {shape}")
    if generated.size(0) != answers.size(0):
        raise ValueError(f"generated has {generated.size(0)} rows "
                         f"but answers {answers.size(0)}")
    answers = answers.to(generated.device)
    digit_hits = generated[:, :SEQ_LEN] == answers[:, :SEQ_LEN]  # [B,6]
    ends = generated[:, SEQ_LEN] == EOS
    return Scores(digit_hits.sum(dim=1).cpu(), (digit_hits.all(dim=1) & ends).cpu())
