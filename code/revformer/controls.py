"""The controls of chapters 16 and 17: other batch orders and data draws, and the attention temperature.

Nothing here trains: each function builds a configuration (a copy of the
book's with one field changed) for ``revformer.sweep.sweep_rows``, which
trains or loads the runs and caches them like the sweep's, or reads a
result off a trained run.

- ``order_and_draw(config)``: the book's configuration, then two other
  batch orders (``TrainConfig.batch_seed``) and two other data draws
  (``DataConfig.seed``), one changed at a time. Chapter 16 trains the three
  groups at the build's seed under each; chapter 17 loads the same runs.
- ``scaled_scores(config, multiplier, steps)``: every attention score times
  ``multiplier`` (``ModelConfig.score_multiplier``), optionally a shorter
  run. Chapter 17's temperature control.
- ``at_step(curve, step)``: a learning curve's point at a recorded step.
- ``answer_margins(model, inputs, labels)``: the right-minus-best-rival logit of
  every graded target, teacher-forced.
- ``layer0_per_sample(model, inputs)``: layer 0's weight on the reversal keys
  and on the next-answer key, per sample (``layer0_weights`` of
  ``revformer.sweep`` averages them over the samples).
"""
from __future__ import annotations

import dataclasses

import torch

from .analysis import ANSWER_QUERIES, evaluating, reversal_key
from .config import ExperimentConfig
from .probes import answer_scores

BATCH_SEEDS = (1235, 1236)  # besides the book's batch_seed 1234
DATA_SEEDS = (2025, 2026)  # besides the book's DataConfig.seed 2024


def order_and_draw(config: ExperimentConfig | None = None, batch_seeds=BATCH_SEEDS,
                   data_seeds=DATA_SEEDS) -> list[tuple[str, ExperimentConfig]]:
    """``(label, configuration)`` pairs: ``config`` first, then one per other batch seed and data seed."""
    config = config or ExperimentConfig()
    settings = [(f"book's (batch {config.train.batch_seed}, data {config.data.seed})", config)]
    for b in batch_seeds:
        if b == config.train.batch_seed:
            raise ValueError(f"batch seed {b} is the configuration's own")
        settings.append((f"batch_seed {b}", dataclasses.replace(
            config, train=dataclasses.replace(config.train, batch_seed=b))))
    for d in data_seeds:
        if d == config.data.seed:
            raise ValueError(f"data seed {d} is the configuration's own")
        settings.append((f"data seed {d}", dataclasses.replace(config, data=dataclasses.replace(config.data, seed=d))))
    return settings


def scaled_scores(config: ExperimentConfig, multiplier: float, steps: int | None = None) -> ExperimentConfig:
    """``config`` with every attention score times ``multiplier``, and ``steps`` training steps if given."""
    model = dataclasses.replace(config.model, score_multiplier=multiplier)
    train = config.train if steps is None else dataclasses.replace(config.train, steps=steps)
    return dataclasses.replace(config, model=model, train=train)


def at_learning_rate(config: ExperimentConfig, rate: float, steps: int | None = None) -> ExperimentConfig:
    """``config`` trained at the constant learning rate ``rate``, and for ``steps`` steps if given."""
    changes = {"learning_rate": rate} if steps is None else {"learning_rate": rate, "steps": steps}
    return dataclasses.replace(config, train=dataclasses.replace(config.train, **changes))


def at_step(curve, step: int) -> tuple[float, float]:
    """``(val_loss, val_sequence_accuracy)`` of a learning curve ``[(step, loss, accuracy), ...]`` at ``step``."""
    for s, loss, accuracy in curve:
        if s == step:
            return loss, accuracy
    raise ValueError(f"step {step} is not a recorded step of this curve "
                     f"(recorded: {[s for s, _, _ in curve][:12]}...)")


@torch.inference_mode()
def answer_margins(model, inputs: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """``[B,P]``: at each graded target, the right logit minus the best wrong one (teacher-forced)."""
    device = next(model.parameters()).device
    with evaluating(model):
        logits, _ = model(inputs.to(device))
    return answer_scores(logits, labels.to(device)).margins


@torch.inference_mode()
def layer0_per_sample(model, inputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``([B], [B])``: per sample, layer 0's weight on the reversal keys and on key q+1, mean over heads and queries."""
    with evaluating(model):
        _, weights = model(inputs.to(next(model.parameters()).device))
    w = weights[0].cpu()  # [B,H,T,T]
    reversal = torch.stack([w[:, :, q, reversal_key(q)] for q in ANSWER_QUERIES]).mean(dim=(0, 2))
    next_answer = torch.stack([w[:, :, q, q + 1] for q in ANSWER_QUERIES]).mean(dim=(0, 2))
    return reversal, next_answer


__all__ = ["BATCH_SEEDS", "DATA_SEEDS", "at_step", "layer0_per_sample", "order_and_draw", "scaled_scores", "answer_margins"]
