"""Greedy autoregressive generation and the two accuracies.

Generation starts from the 8-token prompt ``BOS d0..d5 SEP`` and runs seven
full forward passes, one new token each, always reading the logits of the
last position. There is no KV cache: every pass recomputes the whole prefix.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

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


@torch.no_grad()
def generate(model, prompts: torch.Tensor, causal: bool | None = None) -> torch.Tensor:
    """``[B,8]`` prompts -> ``[B,7]`` greedy tokens; EOS repeats once a row has emitted it.

    No token is forbidden: a model that writes SEP where a digit belongs is
    scored as wrong, not corrected. The model's train/eval mode is restored.
    The result is on the device of ``prompts``.
    """
    check_prompts(prompts)
    was_training = model.training
    model.eval()
    try:
        device = next(model.parameters()).device
        tokens = prompts.to(device=device, dtype=torch.long)
        finished = torch.zeros(tokens.size(0), dtype=torch.bool, device=device)
        new = []
        for _ in range(SEQ_LEN + 1):
            logits, _ = model(tokens, causal=causal)  # [B,t,13]
            next_token = logits[:, -1].argmax(dim=-1)  # the last position predicts what follows
            next_token = next_token.masked_fill(finished, EOS)
            finished |= next_token == EOS
            new.append(next_token)
            tokens = torch.cat([tokens, next_token.unsqueeze(1)], dim=1)
    finally:
        model.train(was_training)
    return torch.stack(new, dim=1).to(prompts.device)  # [B,7]


@dataclass(frozen=True)
class Scores:
    """Per-row results and the two accuracies."""

    digits_correct: torch.Tensor  # [B], 0-6
    sequence_correct: torch.Tensor  # [B], bool

    @property
    def digit_accuracy(self) -> float:
        """Right digits over all digit positions (B x 6)."""
        return float(self.digits_correct.sum()) / (SEQ_LEN * self.digits_correct.numel())

    @property
    def sequence_accuracy(self) -> float:
        """Rows with all six digits right and EOS as the seventh token."""
        return float(self.sequence_correct.float().mean())


def score(generated: torch.Tensor, answers: torch.Tensor) -> Scores:
    """Compare ``[B,7]`` generated tokens with ``[B,7]`` answers (six digits, EOS)."""
    for name, t in (("generated", generated), ("answers", answers)):
        if not isinstance(t, torch.Tensor) or t.dim() != 2 or t.size(1) != SEQ_LEN + 1:
            shape = list(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
            raise ValueError(f"{name} must be a [B,{SEQ_LEN + 1}] tensor, got {shape}")
    if generated.size(0) != answers.size(0):
        raise ValueError(f"generated has {generated.size(0)} rows but answers {answers.size(0)}")
    answers = answers.to(generated.device)
    digit_hits = generated[:, :SEQ_LEN] == answers[:, :SEQ_LEN]  # [B,6]
    ends = generated[:, SEQ_LEN] == EOS
    return Scores(digit_hits.sum(dim=1).cpu(), (digit_hits.all(dim=1) & ends).cpu())
