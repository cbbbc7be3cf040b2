"""The whole experiment behind one call, with a cache of trained models.

``load_experiment()`` returns the three trained groups: from the cache when a
file for the same configuration, package code, PyTorch version and device
type is there (``revformer.cache``), by training otherwise
(``revformer.worker``). Every chapter calls it, so any chapter runs alone (in
Colab too) and a book build trains each group once.
"""
from __future__ import annotations

import platform
from pathlib import Path

import numpy as np
import torch

from . import __version__
from .analysis import (attention_maps, next_answer_weight, prefix_logit_change,
                       reversal_weight)
from .cache import (CACHE_ENV, Run, cache_key, cache_path, default_cache_dir, load_run,
                    save_run)
from .config import GROUP_NAMES, ExperimentConfig
from .config import group as find_group
from .data import Splits, make_splits, split_inputs_labels
from .fingerprint import source_fingerprint
from .generate import Scores, generate, score
from .model import count_parameters
from .progress import TrainingBars, announce, expected_seconds
from .train import Budget, batch_schedule, resolve_device, speed_test
from .worker import train_group, train_in_workers, use_workers
from . import served


def environment(device: torch.device) -> dict:
    """Versions and the device of this run.

    matplotlib's version is read from its installed metadata: importing it
    only for the number would cost the command line a fifth of a second.
    """
    from importlib.metadata import version

    name = str(device)
    if device.type == "cuda":
        name = f"cuda ({torch.cuda.get_device_name(device)})"
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "matplotlib": version("matplotlib"),
        "revformer": __version__,
        "revformer_fingerprint": source_fingerprint(),
        "device": name,
    }


class Experiment:
    """The trained groups, the data, and the results derived from them (computed
    once)."""

    def __init__(self, config: ExperimentConfig, splits: Splits, device: torch.device,
                 budget: Budget, runs: dict[str, Run]):
        self.config = config
        self.splits = splits
        self.device = device
        self.budget = budget
        self.runs = runs
        self._memo: dict = {}

    def _once(self, key, compute):
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def model(self, name: str = "four_heads") -> torch.nn.Module:
        return self.run(name).model

    def run(self, name: str = "four_heads") -> Run:
        if name not in self.runs:
            raise ValueError(f"group {name!r} was not loaded; "
                             f"loaded: {', '.join(self.runs)}")
        return self.runs[name]

    @property
    def test_inputs(self) -> torch.Tensor:
        """Teacher-forced test inputs ``[512,14]``."""
        return split_inputs_labels(self.splits.test)[0]

    def generated(self, name: str = "four_heads",
                  causal: bool | None = None) -> torch.Tensor:
        """Greedy answers ``[512,7]`` for the test prompts."""
        return self._once(
            ("generated", name, causal),
            lambda: generate(self.model(name), self.splits.prompts("test"), causal))

    def scores(self, name: str = "four_heads", causal: bool | None = None) -> Scores:
        return score(self.generated(name, causal), self.splits.answers("test"))

    def attention(self, name: str = "four_heads", causal: bool | None = None,
                  index: int = 0) -> np.ndarray:
        """Weights ``[L,H,14,14]`` of test sample ``index``, teacher-forced."""
        return self._once(
            ("attention", name, causal, index),
            lambda: attention_maps(self.model(name), self.test_inputs[index], causal))

    def mask_toggle(self) -> dict:
        """The trained full model with its mask toggled, no training."""
        def compute():
            model, inputs = self.model("four_heads"), self.test_inputs
            off = self.scores("four_heads", causal=False)
            return {
                "prefix_max_change_mask_on":
                    prefix_logit_change(model, inputs, causal=True),
                "prefix_max_change_mask_off":
                    prefix_logit_change(model, inputs, causal=False),
                "sequence_accuracy_mask_off": off.sequence_accuracy,
                "digit_accuracy_mask_off": off.digit_accuracy,
            }
        return self._once("mask_toggle", compute)

    def head_stats(self) -> list[dict]:
        """Per group, layer and head: reversal and next-answer weight of sample 0."""
        rows = []
        for name in self.runs:
            w = self.attention(name)
            rev, nxt = reversal_weight(w), next_answer_weight(w)
            for layer in range(w.shape[0]):
                for head in range(w.shape[1]):
                    rows.append({"group": name, "layer": layer, "head": head,
                                 "reversal_weight": float(rev[layer, head]),
                                 "next_answer_weight": float(nxt[layer, head])})
        return rows

    def ablation(self) -> list[dict]:
        """One row a group: settings, last-step losses, accuracies, training time."""
        rows = []
        for name, run in self.runs.items():
            s = self.scores(name)
            _, train_loss, val_loss = run.history[-1]
            rows.append({"group": name, "num_heads": run.group.num_heads,
                         "causal": run.group.causal,
                         "parameters": count_parameters(run.model),
                         "train_loss": train_loss, "val_loss": val_loss,
                         "digit_accuracy": s.digit_accuracy,
                         "sequence_accuracy": s.sequence_accuracy,
                         "train_seconds": run.train_seconds})
        return rows

    def config_record(self) -> dict:
        """The contents of ``config.json``."""
        record = self.config.to_dict()
        record["model"]["groups"] = {n: {"num_heads": r.group.num_heads,
                                         "causal": r.group.causal}
                                     for n, r in self.runs.items()}
        record["data"].update(train_size=self.splits.train.size(0),
                              val_size=self.splits.val.size(0),
                              test_size=self.splits.test.size(0))
        record["budget"] = {
            "requested_steps": self.budget.requested_steps, "steps": self.budget.steps,
            "lowered": self.budget.lowered,
            "seconds_per_step": self.budget.seconds_per_step,
            "projected_seconds": self.budget.projected_seconds,
            "limit_seconds": self.budget.limit_seconds, "reason": self.budget.reason,
        }
        record["environment"] = environment(self.device)
        return record


def load_or_train(config: ExperimentConfig, jobs, splits: Splits, device: torch.device,
                  cache_dir: Path, progress: bool | None = None,
                  always_speed_test: bool = False,
                  parallel: bool | None = None,
                  train: bool | None = None) -> tuple[Budget, list[Run]]:
    """The runs of ``jobs``, pairs ``(config, group)``, from the cache; the missing
    ones train into it.

    ``config`` gives the training budget; each job trains on the splits and
    the batch table of its own configuration (``splits`` are ``config``'s).
    The full budget is used when every job is cached; otherwise the
    speed test runs first and, if the projected time of the three groups is
    over the limit, every job trains (or loads) the lowered budget alike.
    Missing runs train side by side in worker processes on a multi-core CPU
    (``use_workers``), else here one after another; both give the same weights.
    Before they train, one line says which, why and about how long; bars
    show their progress (``revformer.progress``), unless ``progress`` is off.
    A run missing from the cache is first looked for among the book's served
    runs (``revformer.served``), unless ``train`` (or ``$REVFORMER_TRAIN``)
    asks for training.
    Returns the budget and the runs in the order of ``jobs``.
    """
    fetch = not served.wants_training(train)

    def cached(steps):
        keys = [cache_key(c, g, steps, device) for c, g in jobs]
        runs = [load_run(cache_path(cache_dir, g, key), key, c, g, device)
                for (c, g), key in zip(jobs, keys)]
        if fetch:
            runs = [run or served.fetch_run(c, g, steps, device, cache_dir)
                    for (c, g), run in zip(jobs, runs)]
        return keys, runs

    steps = config.train.steps
    keys, runs = cached(steps)
    if all(run is not None for run in runs) and not always_speed_test:
        budget = Budget(steps, steps, None, None, config.train.time_limit_seconds,
                        len(GROUP_NAMES),
                        f"every group loaded from the cache, trained with the full "
                        f"{steps} steps")
    else:
        train_x, train_y = split_inputs_labels(splits.train)
        budget = speed_test(train_x, train_y, config.train, device,
                            groups=len(GROUP_NAMES), validation_rows=splits.val.size(0))
        if budget.steps != steps:
            steps = budget.steps
            keys, runs = cached(steps)
    missing = [i for i, run in enumerate(runs) if run is None]
    in_workers = use_workers(device, len(missing), parallel)
    if missing:
        per_run = budget.seconds_per_run(config.train)
        announce([jobs[i] for i in missing], device=device, cache_dir=cache_dir,
                 progress=progress,
                 seconds=(None if per_run is None
                          else expected_seconds(per_run, len(missing), in_workers)))
    if in_workers:
        train_in_workers([jobs[i] for i in missing], steps, cache_dir,
                         progress=progress)
        for i in missing:
            (c, g), key = jobs[i], keys[i]
            runs[i] = load_run(cache_path(cache_dir, g, key), key, c, g, device)
            if runs[i] is None:
                raise RuntimeError(f"the worker for {g.name} (seed {c.train.seed}) "
                                   "wrote no usable cache file")
            runs[i].from_cache = False
    else:
        # each run draws its own bar; this one counts them
        with TrainingBars(len(missing), progress) as bars:
            for i in missing:
                (c, g), key = jobs[i], keys[i]
                # a job with its own data or batch seed (a control of chapters
                # 16-17) draws its own
                job_splits = (splits if c.data == config.data and c.task == config.task
                              else make_splits(c.data, c.task))
                schedule = batch_schedule(job_splits.train.size(0), c.train)[:steps]
                runs[i] = train_group(c, g, job_splits, schedule, device, progress,
                                      description=f"{g.name} (seed {c.train.seed})")
                save_run(cache_path(cache_dir, g, key), key, runs[i])
                bars.finish()
    for (c, g), key in zip(jobs, keys):
        served.record_load(c, g, steps, key, cache_path(cache_dir, g, key), device)
    return budget, runs


def load_experiment(config: ExperimentConfig | None = None, device="auto",
                    cache_dir=None, groups=GROUP_NAMES, progress: bool | None = None,
                    always_speed_test: bool = False,
                    parallel: bool | None = None, train: bool | None = None) -> Experiment:
    """Trained groups from the cache, training those that are missing.

    The full budget is used from the cache when every asked group is there.
    Otherwise the speed test runs first and, if the projected time of all
    three groups is over the limit, every group trains (or loads) the lowered
    budget alike. Missing groups train side by side in worker processes on a
    multi-core CPU (``use_workers``), else here one after another; both give
    the same weights (``load_or_train``). A group missing from the cache is
    loaded from the book's served runs when this package was built with them,
    unless ``train=True`` (or ``REVFORMER_TRAIN=1``): then it trains here.
    """
    config = config or ExperimentConfig()
    device = resolve_device(device)
    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    chosen = [find_group(name) for name in groups]
    splits = make_splits(config.data, config.task)
    budget, runs = load_or_train(config, [(config, g) for g in chosen], splits, device,
                                 cache_dir, progress, always_speed_test, parallel, train)
    runs = {g.name: run for g, run in zip(chosen, runs)}
    return Experiment(config, splits, device, budget, runs)


__all__ = ["CACHE_ENV", "Experiment", "Run", "environment", "load_experiment",
           "load_or_train"]
