"""The cache of trained groups: one file per group, named by a key of everything that
decides its weights.

A file is written to a temporary name and renamed, so a reader sees either no
file or a whole one. A damaged file, or one whose stored key does not match its
name, is reported in one line and retrained: never a crash, never a silently
wrong result.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import torch

from .config import ExperimentConfig, Group
from .files import atomic_path
from .fingerprint import training_fingerprint
from .model import make_model

CACHE_ENV = "REVFORMER_CACHE"


def default_cache_dir() -> Path:
    """``$REVFORMER_CACHE`` if set, else ``~/.cache/revformer``."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "revformer")


def cache_key(config: ExperimentConfig, group: Group, steps: int, device) -> str:
    """A hash of everything that decides a trained model's weights, the package's code included."""
    identity = {
        "package": training_fingerprint(),
        "torch": torch.__version__,
        "device": torch.device(device).type,
        "config": config.to_dict(),
        "group": [group.name, group.num_heads, group.causal],
        "steps": steps,
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


def cache_path(cache_dir, group: Group, key: str) -> Path:
    return Path(cache_dir) / f"{group.name}-{key[:20]}.pt"


@dataclass
class Run:
    """One trained group."""

    group: Group
    model: torch.nn.Module
    history: list  # (step, train_loss, val_loss) every eval_every steps, step 0 first
    batch_losses: list  # the loss of each step's batch
    train_seconds: float  # wall-clock time of run_training in the process that trained it
    steps: int
    curve: list = field(default_factory=list)  # (step, val_loss, val_sequence_accuracy)
    threads: int = 1  # PyTorch's thread count while it trained: float sums regroup with it
    from_cache: bool = field(default=False, compare=False)


def save_run(path: Path, key: str, run: Run) -> None:
    payload = {
        "key": key,
        "group": run.group.name,
        "steps": run.steps,
        "train_seconds": run.train_seconds,
        "history": [list(row) for row in run.history],
        "batch_losses": list(run.batch_losses),
        "curve": [list(point) for point in run.curve],
        "threads": run.threads,
        "state_dict": {k: v.detach().cpu() for k, v in run.model.state_dict().items()},
    }
    with atomic_path(path) as tmp:
        torch.save(payload, tmp)


def load_run(path: Path, key: str, config: ExperimentConfig, group: Group, device) -> Run | None:
    """The cached run at ``path``, or None when it is missing, damaged or foreign."""
    if not path.exists():
        return None
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
        if not isinstance(payload, dict) or payload.get("key") != key:
            raise ValueError("it belongs to another configuration")
        model = make_model(group.num_heads, config.train.seed, group.causal, config.model)
        model.load_state_dict(payload["state_dict"])
        history = [tuple(row) for row in payload["history"]]
        curve = [tuple(point) for point in payload["curve"]]
        steps = int(payload["steps"])
        if (len(history) != steps // config.train.eval_every + 1 or len(payload["batch_losses"]) != steps
                or [point[0] for point in curve] != config.train.curve_steps(steps)):
            raise ValueError("its record is incomplete")
        return Run(group, model.to(device).eval(), history, list(payload["batch_losses"]),
                   float(payload["train_seconds"]), steps, curve, int(payload["threads"]), from_cache=True)
    except Exception as error:  # any unreadable or inconsistent file is retrained
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        print(f"revformer: cache file {path.name} is damaged or foreign ({reason[:120]}); retraining",
              file=sys.stderr)
        return None
