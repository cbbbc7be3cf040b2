"""Several seeds: how much is one run worth?
``python -m revformer sweep --out DIR [--seeds 42,0,1,2,3]``.

Every group trains once per seed, with the same data, the same batches and the
same budget as ``reproduce``; only the initial weights change. The run of the
build's seed is ``reproduce``'s run and comes from the same cache. Each
(group, seed) is cached like the reproduction's runs, so an interrupted sweep
resumes with what it had. Two files come out:

- ``seeds.csv``: one row per group and seed, with the last losses, the test
  accuracies, layer 0's weight on the reversal keys and on the next answer key
  (mean over heads and over all 512 test samples) and the first step at which
  greedy generation gets every validation sequence right;
- ``learning_curves.csv``: validation loss and greedy sequence accuracy at
  every recorded step of every run.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import torch

from .analysis import evaluating, next_answer_weight, reversal_weight
from .cache import default_cache_dir
from .config import GROUPS, ExperimentConfig, default_seed
from .data import make_splits, split_inputs_labels
from .files import write_csv
from .generate import generate, score
from .experiment import load_or_train
from .train import resolve_device

SEEDS_HEADER = ["group", "seed", "train_loss", "val_loss", "digit_accuracy",
                "sequence_accuracy", "reversal_weight", "next_answer_weight",
                "first_perfect_step"]
CURVES_HEADER = ["group", "seed", "step", "val_loss", "val_sequence_accuracy"]


def default_seeds(count: int = 5) -> list[int]:
    """The build's seed first (42 unless ``REVFORMER_SEED`` says otherwise), then
    0, 1, 2, ... ."""
    first = default_seed()
    return [first] + [s for s in range(count) if s != first][: count - 1]


def parse_seeds(seeds) -> list[int]:
    """``"42,0,1"`` or ``[42, 0, 1]`` -> ``[42, 0, 1]``; ``ValueError`` for an empty
    or repeated list."""
    if isinstance(seeds, str):
        parts = [p.strip() for p in seeds.split(",")]
        if not seeds.strip() or any(not p for p in parts):
            raise ValueError(f"seeds must be integers separated by commas, "
                             f"such as 42,0,1; got {seeds!r}")
        try:
            seeds = [int(p) for p in parts]
        except ValueError:
            raise ValueError(f"every seed must be an integer, such as 42,0,1; "
                             f"got {seeds!r}") from None
    seeds = list(seeds)
    if not seeds:
        raise ValueError("the sweep needs at least one seed")
    for seed in seeds:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"every seed must be an integer, got {seed!r}")
    repeated = sorted({s for s in seeds if seeds.count(s) > 1})
    if repeated:
        raise ValueError(f"each seed may appear once; repeated: {repeated}")
    return seeds


def seed_config(config: ExperimentConfig, seed: int) -> ExperimentConfig:
    return dataclasses.replace(config,
                               train=dataclasses.replace(config.train, seed=seed))


def first_perfect_step(curve) -> int | None:
    """The first recorded step at which every validation sequence is generated
    right."""
    return next((step for step, _, accuracy in curve if accuracy == 1.0), None)


@torch.inference_mode()
def layer0_weights(model, inputs: torch.Tensor) -> tuple[float, float]:
    """Layer 0's weight on the reversal keys and on the next answer key, mean over
    heads and samples."""
    with evaluating(model):
        _, weights = model(inputs.to(next(model.parameters()).device))
    # [L,H,T,T], mean over samples
    maps = torch.stack([w.mean(dim=0) for w in weights]).cpu().numpy()
    return (float(reversal_weight(maps)[0].mean()),
            float(next_answer_weight(maps)[0].mean()))


def sweep_rows(config: ExperimentConfig | None = None, seeds=None, groups=GROUPS,
               device="auto", cache_dir=None,
               progress: bool | None = None, train: bool | None = None) -> list[dict]:
    """Train (or load) every group of ``groups`` for every seed of ``seeds`` under
    ``config``; one row a run.

    Each row has the columns of ``seeds.csv``, plus ``curve`` (the run's
    learning curve, ``(step, val_loss, val_sequence_accuracy)``) and ``run``
    (its ``Run``, with the trained model). A control of "Going further" passes
    its own ``config`` (one block, a score multiplier, another data or batch
    seed); the runs are cached like the reproduction's, and loaded from the
    book's served runs unless ``train`` (``load_or_train``).
    """
    seeds = parse_seeds(default_seeds() if seeds is None else seeds)
    config = config or ExperimentConfig()
    device = resolve_device(device)
    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    splits = make_splits(config.data, config.task)
    jobs = [(seed_config(config, seed), g) for seed in seeds for g in groups]
    _, runs = load_or_train(config, jobs, splits, device, cache_dir, progress, train=train)
    test_inputs, _ = split_inputs_labels(splits.test)
    rows = []
    for (c, g), run in zip(jobs, runs):
        scores = score(generate(run.model, splits.prompts("test"), kv_cache=g.causal),
                       splits.answers("test"))
        reversal, next_answer = layer0_weights(run.model, test_inputs)
        _, train_loss, val_loss = run.history[-1]
        rows.append({"group": g.name, "seed": c.train.seed, "train_loss": train_loss,
                     "val_loss": val_loss, "digit_accuracy": scores.digit_accuracy,
                     "sequence_accuracy": scores.sequence_accuracy,
                     "reversal_weight": reversal, "next_answer_weight": next_answer,
                     "first_perfect_step": first_perfect_step(run.curve),
                     "curve": run.curve, "run": run})
    return rows


def run_sweep(out_dir, seeds=None, config: ExperimentConfig | None = None,
              device="auto", cache_dir=None,
              progress: bool | None = None) -> tuple[list[dict], list[dict]]:
    """Train (or load) every group for every seed; write ``seeds.csv`` and
    ``learning_curves.csv``.

    Returns the rows of both files. The budget is the reproduction's: the
    full steps when every run is cached, otherwise what the speed test allows.
    """
    rows = sweep_rows(config, seeds, GROUPS, device, cache_dir, progress)
    seed_rows = [{k: r[k] for k in SEEDS_HEADER} for r in rows]
    curve_rows = [{"group": r["group"], "seed": r["seed"], "step": step,
                   "val_loss": loss, "val_sequence_accuracy": accuracy}
                  for r in rows for step, loss, accuracy in r["curve"]]
    out = Path(out_dir)
    write_csv(out / "seeds.csv", SEEDS_HEADER,
              [["" if r[k] is None else r[k] for k in SEEDS_HEADER] for r in seed_rows])
    write_csv(out / "learning_curves.csv", CURVES_HEADER,
              [[r[k] for k in CURVES_HEADER] for r in curve_rows])
    return seed_rows, curve_rows


def read_seeds(path) -> list[dict]:
    """``seeds.csv`` back as rows with numbers (``first_perfect_step`` None when never
    reached)."""
    from .files import read_csv

    rows = []
    for r in read_csv(path):
        row = {"group": r["group"], "seed": int(r["seed"])}
        for k in SEEDS_HEADER[2:-1]:
            row[k] = float(r[k])
        row["first_perfect_step"] = (int(r["first_perfect_step"])
                                     if r["first_perfect_step"] else None)
        rows.append(row)
    return rows


__all__ = ["CURVES_HEADER", "SEEDS_HEADER", "default_seeds", "first_perfect_step",
           "parse_seeds", "read_seeds", "run_sweep", "sweep_rows"]
