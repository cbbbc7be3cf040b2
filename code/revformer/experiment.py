"""The whole experiment behind one call, with a cache of trained models.

``load_experiment()`` returns the three trained groups: from the cache when a
file for the same configuration, package version, PyTorch version and device
type is there, by training otherwise. Every chapter calls it, so any chapter
runs alone (in Colab too) and a book build trains each group once.

A cache file is written to a temporary name and renamed. A damaged file, or
one whose stored key does not match its name, is reported in one line and
rebuilt: never a crash, never a silently wrong result.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from . import __version__
from .analysis import (attention_maps, next_answer_weight, prefix_logit_change,
                       reversal_weight)
from .config import GROUP_NAMES, ExperimentConfig, Group, group as find_group
from .data import Splits, make_splits, split_inputs_labels
from .files import atomic_path
from .generate import Scores, generate, score
from .model import count_parameters, make_model
from .train import (Budget, TrainResult, batch_schedule, evaluate_snapshots, progress_enabled,
                    resolve_device, speed_test, train_model)

CACHE_ENV = "REVFORMER_CACHE"


def default_cache_dir() -> Path:
    """``$REVFORMER_CACHE`` if set, else ``~/.cache/revformer``."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "revformer")


def cache_key(config: ExperimentConfig, group: Group, steps: int, device: torch.device) -> str:
    """A hash of everything that decides a trained model's weights."""
    identity = {
        "revformer": __version__,
        "torch": torch.__version__,
        "device": torch.device(device).type,
        "config": config.to_dict(),
        "group": [group.name, group.num_heads, group.causal],
        "steps": steps,
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


@dataclass
class Run:
    """One trained group."""

    group: Group
    model: torch.nn.Module
    history: list  # (step, train_loss, val_loss)
    train_seconds: float
    steps: int
    from_cache: bool = False


def _report(message: str) -> None:
    print(f"revformer: {message}", file=sys.stderr)


def _cache_path(cache_dir: Path, group: Group, key: str) -> Path:
    return cache_dir / f"{group.name}-{key[:20]}.pt"


def _load_cached(path: Path, key: str, config: ExperimentConfig, group: Group,
                 device: torch.device) -> Run | None:
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
        if len(history) != payload["steps"] // config.train.eval_every + 1:
            raise ValueError("its loss history is incomplete")
        run = Run(group, model.to(device).eval(), history, float(payload["train_seconds"]),
                  int(payload["steps"]), from_cache=True)
    except Exception as error:  # any unreadable or inconsistent file is rebuilt
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        _report(f"cache file {path.name} is damaged or foreign ({reason[:120]}); retraining")
        return None
    return run


def _save_cached(path: Path, key: str, run: Run) -> None:
    payload = {
        "key": key,
        "group": run.group.name,
        "steps": run.steps,
        "train_seconds": run.train_seconds,
        "history": [list(row) for row in run.history],
        "state_dict": {k: v.detach().cpu() for k, v in run.model.state_dict().items()},
    }
    with atomic_path(path) as tmp:
        torch.save(payload, tmp)


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
        "device": name,
    }


class Experiment:
    """The trained groups, the data, and the results derived from them (computed once)."""

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
            raise ValueError(f"group {name!r} was not loaded; loaded: {', '.join(self.runs)}")
        return self.runs[name]

    @property
    def test_inputs(self) -> torch.Tensor:
        """Teacher-forced test inputs ``[512,14]``."""
        return split_inputs_labels(self.splits.test)[0]

    def generated(self, name: str = "four_heads", causal: bool | None = None) -> torch.Tensor:
        """Greedy answers ``[512,7]`` for the test prompts."""
        return self._once(("generated", name, causal),
                          lambda: generate(self.model(name), self.splits.prompts("test"), causal))

    def scores(self, name: str = "four_heads", causal: bool | None = None) -> Scores:
        return score(self.generated(name, causal), self.splits.answers("test"))

    def attention(self, name: str = "four_heads", causal: bool | None = None,
                  index: int = 0) -> np.ndarray:
        """Weights ``[L,H,14,14]`` of test sample ``index``, teacher-forced."""
        return self._once(("attention", name, causal, index),
                          lambda: attention_maps(self.model(name), self.test_inputs[index], causal))

    def mask_toggle(self) -> dict:
        """The trained full model with its mask toggled, no training."""
        def compute():
            model, inputs = self.model("four_heads"), self.test_inputs
            off = self.scores("four_heads", causal=False)
            return {
                "prefix_max_change_mask_on": prefix_logit_change(model, inputs, causal=True),
                "prefix_max_change_mask_off": prefix_logit_change(model, inputs, causal=False),
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
                         "causal": run.group.causal, "parameters": count_parameters(run.model),
                         "train_loss": train_loss, "val_loss": val_loss,
                         "digit_accuracy": s.digit_accuracy,
                         "sequence_accuracy": s.sequence_accuracy,
                         "train_seconds": run.train_seconds})
        return rows

    def config_record(self) -> dict:
        """The contents of ``config.json``."""
        record = self.config.to_dict()
        record["model"]["groups"] = {n: {"num_heads": r.group.num_heads, "causal": r.group.causal}
                                     for n, r in self.runs.items()}
        record["data"].update(train_size=self.splits.train.size(0), val_size=self.splits.val.size(0),
                              test_size=self.splits.test.size(0))
        record["budget"] = {
            "requested_steps": self.budget.requested_steps, "steps": self.budget.steps,
            "lowered": self.budget.lowered, "seconds_per_step": self.budget.seconds_per_step,
            "projected_seconds": self.budget.projected_seconds,
            "limit_seconds": self.budget.limit_seconds, "reason": self.budget.reason,
        }
        record["environment"] = environment(self.device)
        return record


def _fit(config: ExperimentConfig, group: Group, splits: Splits, schedule: torch.Tensor,
         device: torch.device, progress: bool | None, evaluate: bool = True) -> TrainResult:
    """``train_model`` on a fresh model of ``group``, with the splits' train and validation sets."""
    train_x, train_y = split_inputs_labels(splits.train)
    val_x, val_y = split_inputs_labels(splits.val)
    model = make_model(group.num_heads, config.train.seed, group.causal, config.model, device)
    return train_model(model, train_x, train_y, val_x, val_y, schedule, config.train, progress,
                       description=group.name, evaluate=evaluate)


def _train_group(config: ExperimentConfig, group: Group, splits: Splits, schedule: torch.Tensor,
                 device: torch.device, progress: bool | None) -> Run:
    result = _fit(config, group, splits, schedule, device, progress)
    return Run(group, result.model, result.history, result.seconds, result.steps)


def _steps_path(cache_dir: Path, group: Group, key: str) -> Path:
    return cache_dir / f"{group.name}-{key[:20]}.steps.pt"


def train_into_cache(config: ExperimentConfig, name: str, steps: int, cache_dir,
                     evaluate: bool = True) -> Path:
    """Train one group on the CPU and write the result into ``cache_dir``; return the path.

    What a worker process runs (``revformer.worker``). With ``evaluate`` the
    file is the group's cache entry, which the caller loads like any cache
    hit, key checked. Without, only the update steps run and the file holds
    the weight snapshots of the evaluation steps and their time, for the
    caller to evaluate (``_finish_from_steps``).
    """
    g = find_group(name)
    device = torch.device("cpu")
    splits = make_splits(config.data, config.task)
    schedule = batch_schedule(splits.train.size(0), config.train)[:steps]
    key = cache_key(config, g, steps, device)
    if evaluate:
        path = _cache_path(Path(cache_dir), g, key)
        _save_cached(path, key, _train_group(config, g, splits, schedule, device, progress=False))
        return path
    result = _fit(config, g, splits, schedule, device, progress=False, evaluate=False)
    path = _steps_path(Path(cache_dir), g, key)
    with atomic_path(path) as tmp:
        torch.save({"key": key, "seconds": result.seconds, "history": result.history,
                    "snapshots": result.snapshots}, tmp)
    return path


def _finish_from_steps(config: ExperimentConfig, group: Group, splits: Splits, steps: int,
                       cache_dir: Path, worker) -> Run:
    """Evaluate the snapshots that ``worker`` writes for ``group``: its full run.

    Waits for the file while the worker runs; the history (step 0's row
    from the worker, the rest from here) is the one the worker would have
    recorded itself, and the training time is the worker's update steps plus
    these evaluations, as in ``train_model``.
    """
    import time

    key = cache_key(config, group, steps, torch.device("cpu"))
    path = _steps_path(cache_dir, group, key)
    while not path.exists():
        if worker.poll() is not None and not path.exists():
            code, report = worker.wait()
            raise RuntimeError(f"training in worker processes failed:\n{worker.name}: exit {code}, "
                               f"without the update steps of {group.name}: {report[-800:]}")
        time.sleep(0.05)
    payload = torch.load(path, map_location="cpu", weights_only=True)
    path.unlink()
    if payload.get("key") != key:
        raise RuntimeError(f"the update steps of {group.name} belong to another configuration")
    train_x, train_y = split_inputs_labels(splits.train)
    val_x, val_y = split_inputs_labels(splits.val)
    model = make_model(group.num_heads, config.train.seed, group.causal, config.model)
    start = time.perf_counter()
    history = [tuple(row) for row in payload["history"]]
    history += evaluate_snapshots(model, payload["snapshots"], train_x, train_y, val_x, val_y)
    seconds = payload["seconds"] + time.perf_counter() - start
    return Run(group, model.eval(), history, seconds, steps)


def parallel_workers(missing: int, device: torch.device, parallel: bool | None) -> int:
    """How many processes train the missing groups side by side: 0 means one after another here.

    On a CPU with at least two cores, up to one process per core shares the
    missing groups, each with an equal share of the cores, at least one
    thread: a model this small keeps one thread busier than two threads
    can share one step, so processes side by side finish sooner than groups
    one after another with all cores each. ``parallel=None`` follows
    ``REVFORMER_PARALLEL`` (``0`` turns it off).
    """
    if parallel is None:
        parallel = os.environ.get("REVFORMER_PARALLEL", "1") not in ("0", "false", "no")
    cores = os.cpu_count() or 1
    if not parallel or device.type != "cpu" or missing < 2 or cores < 2:
        return 0
    return min(missing, cores)


def _train_parallel(config, groups, splits, schedule, processes, cache_dir, progress) -> dict:
    """Train ``groups`` in ``processes`` processes side by side and return their runs.

    This process trains the first group (``four_heads`` when all are
    missing: the most work a step); a worker process (``revformer.worker``:
    forked on Linux, a fresh interpreter elsewhere or wherever
    ``REVFORMER_WORKER_START=spawn``) trains each of the others and writes
    its cache file, loaded here like any other, key checked.

    With one group more than processes (three groups on two cores), the
    group with the fewest heads, the least work, is shared out: the first
    worker runs its update steps before its own group, and this process
    evaluates the snapshots after its own. The two processes then carry
    about equal work, where three processes on two cores would leave one
    core idle at the end while the largest group finishes.
    """
    from .worker import start_worker

    threads = max(1, (os.cpu_count() or 1) // processes)
    steps = schedule.size(0)
    how = os.environ.get("REVFORMER_WORKER_START", "auto")
    here, *elsewhere = groups
    shared = None
    if len(groups) > processes:
        shared = min(elsewhere, key=lambda g: g.num_heads)
        elsewhere.remove(shared)
    if len(elsewhere) != processes - 1:
        raise ValueError(f"cannot share {len(groups)} groups among {processes} processes")
    jobs = [[("full", g.name)] for g in elsewhere]
    if shared is not None:
        jobs[0].insert(0, ("steps", shared.name))
    cpu = torch.device("cpu")
    workers, runs, failures = [], {}, []

    def keep(run: Run) -> None:  # into the cache at once: an interruption later loses nothing
        key = cache_key(config, run.group, steps, cpu)
        _save_cached(_cache_path(cache_dir, run.group, key), key, run)
        runs[run.group.name] = run

    before = torch.get_num_threads()
    try:
        for worker_jobs in jobs:
            workers.append(start_worker(config, worker_jobs, steps, threads, cache_dir, how))
        torch.set_num_threads(threads)  # this process's share, as a worker's
        keep(_train_group(config, here, splits, schedule, cpu, progress))
        if shared is not None:
            keep(_finish_from_steps(config, shared, splits, steps, cache_dir, workers[0]))
        for worker in workers:
            code, report = worker.wait()
            if code != 0:
                failures.append(f"{worker.name}: exit {code}: {report[-800:]}")
    finally:
        torch.set_num_threads(before)
        for worker in workers:  # an interrupted caller leaves no worker behind
            worker.kill()
        if shared is not None:  # the snapshots of an interrupted run
            _steps_path(cache_dir, shared, cache_key(config, shared, steps, cpu)).unlink(missing_ok=True)
    if failures:
        raise RuntimeError("training in worker processes failed:\n" + "\n".join(failures))
    for g in elsewhere:
        key = cache_key(config, g, steps, cpu)
        run = _load_cached(_cache_path(cache_dir, g, key), key, config, g, cpu)
        if run is None:
            raise RuntimeError(f"the worker for {g.name} wrote no usable cache file")
        run.from_cache = False
        runs[g.name] = run
    return runs


def load_experiment(config: ExperimentConfig | None = None, device="auto", cache_dir=None,
                    groups=GROUP_NAMES, progress: bool | None = None,
                    always_speed_test: bool = False, parallel: bool | None = None) -> Experiment:
    """Trained groups from the cache, training those that are missing.

    The full budget is used from the cache when every asked group is there.
    Otherwise the speed test runs first and, if the projected time of all
    three groups is over the limit, every group trains (or loads) the lowered
    budget alike. Missing groups train side by side on a multi-core CPU, one
    in this process and the others in worker processes (see
    ``parallel_workers``), with the same results as one after another.
    """
    config = config or ExperimentConfig()
    device = resolve_device(device)
    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    chosen = [find_group(name) for name in groups]
    splits = make_splits(config.data, config.task)
    train_x, train_y = split_inputs_labels(splits.train)

    def cached(steps):
        found = {}
        for g in chosen:
            key = cache_key(config, g, steps, device)
            found[g.name] = (key, _load_cached(_cache_path(cache_dir, g, key), key, config, g, device))
        return found

    full = config.train.steps
    found = cached(full)
    if all(run is not None for _, run in found.values()) and not always_speed_test:
        budget = Budget(full, full, None, None, config.train.time_limit_seconds, len(GROUP_NAMES),
                        f"every group loaded from the cache, trained with the full {full} steps")
    else:
        budget = speed_test(train_x, train_y, config.train, device, groups=len(GROUP_NAMES))
        if budget.steps != full:
            found = cached(budget.steps)
    schedule = batch_schedule(train_x.size(0), config.train)[: budget.steps]
    missing = [g for g in chosen if found[g.name][1] is None]
    processes = parallel_workers(len(missing), device, parallel)
    trained = (_train_parallel(config, missing, splits, schedule, processes, cache_dir, progress)
               if processes else {})
    runs = {}
    for g in chosen:
        key, run = found[g.name]
        if g.name in trained:  # trained side by side, already in the cache
            run = trained[g.name]
        elif run is None:
            run = _train_group(config, g, splits, schedule, device, progress)
            _save_cached(_cache_path(cache_dir, g, key), key, run)
        runs[g.name] = run
    return Experiment(config, splits, device, budget, runs)


__all__ = ["CACHE_ENV", "Experiment", "Run", "cache_key", "default_cache_dir", "environment",
           "load_experiment", "progress_enabled"]
