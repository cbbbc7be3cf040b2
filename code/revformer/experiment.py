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
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from . import __version__
from .analysis import (attention_maps, next_answer_weight, prefix_logit_change,
                       reversal_weight)
from .config import GROUP_NAMES, ExperimentConfig, Group, group as find_group
from .data import Splits, make_splits, split_inputs_labels
from .files import atomic_path, write_json
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


def _stem(group: Group, key: str) -> str:
    """The start of every file name of ``group`` under ``key``: its cache file and the rest."""
    return f"{group.name}-{key[:20]}"


def _cache_path(cache_dir: Path, group: Group, key: str) -> Path:
    return cache_dir / f"{_stem(group, key)}.pt"


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
    return cache_dir / f"{_stem(group, key)}.steps.pt"


def _claim_path(cache_dir: Path, group: Group, key: str, index: int) -> Path:
    return cache_dir / f"{_stem(group, key)}.claim-{index}"


def _row_path(cache_dir: Path, group: Group, key: str, index: int) -> Path:
    return cache_dir / f"{_stem(group, key)}.row-{index}.json"


def _shared_files(cache_dir: Path, group: Group, key: str) -> list[Path]:
    """The update-step file, claims and rows of a shared group (never its cache file)."""
    stem = _stem(group, key)
    return [_steps_path(cache_dir, group, key), *cache_dir.glob(f"{stem}.claim-*"),
            *cache_dir.glob(f"{stem}.row-*.json")]


def _claim(path: Path) -> bool:
    """True for the one process whose call creates ``path``: the file is a snapshot's claim."""
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def _save_steps(cache_dir: Path, group: Group, key: str, result: TrainResult) -> dict:
    """Write the update-step file of ``result`` (``train_model(evaluate=False)``); its payload."""
    payload = {"key": key, "seconds": result.seconds, "history": result.history,
               "snapshots": result.snapshots}
    with atomic_path(_steps_path(cache_dir, group, key)) as tmp:
        torch.save(payload, tmp)
    return payload


def train_into_cache(config: ExperimentConfig, name: str, steps: int, cache_dir,
                     evaluate: bool = True, splits: Splits | None = None) -> Path:
    """Train one group on the CPU and write the result into ``cache_dir``; return the path.

    What a worker process runs (``revformer.worker``). With ``evaluate`` the
    file is the group's cache entry, which the caller loads like any cache
    hit, key checked. Without, only the update steps run and the file holds
    the weight snapshots of the evaluation steps and their time, for the
    processes to evaluate (``evaluate_shared`` and ``_train_shared``).
    ``splits``: the ones ``config`` draws, if the caller has them already.
    """
    g = find_group(name)
    device = torch.device("cpu")
    splits = splits if splits is not None else make_splits(config.data, config.task)
    schedule = batch_schedule(splits.train.size(0), config.train)[:steps]
    key = cache_key(config, g, steps, device)
    if evaluate:
        path = _cache_path(Path(cache_dir), g, key)
        _save_cached(path, key, _train_group(config, g, splits, schedule, device, progress=False))
        return path
    _save_steps(Path(cache_dir), g, key, _fit(config, g, splits, schedule, device, progress=False,
                                              evaluate=False))
    return _steps_path(Path(cache_dir), g, key)


def _load_steps(path: Path, key: str, group: Group, running) -> dict:
    """The update-step file at ``path``, waiting for it while ``running()`` says its writer runs.

    ``running`` returns True while the writer runs, or the reason why not.
    """
    while not path.exists():
        state = running()
        if state is not True and not path.exists():
            raise RuntimeError(f"training in worker processes failed:\n{state}, "
                               f"without the update steps of {group.name}")
        time.sleep(0.05)
    payload = torch.load(path, map_location="cpu", weights_only=True)
    if payload.get("key") != key:
        raise RuntimeError(f"the update steps of {group.name} belong to another configuration")
    return payload


def _evaluate_claimed(config: ExperimentConfig, group: Group, splits: Splits, snapshots,
                      claims: list[Path], order, bar=None) -> dict:
    """Evaluate snapshots in ``order`` (indices) while this process wins their claims.

    ``snapshots()`` gives the group's snapshots, asked for only once a
    claim is won. Returns ``{index: (row, seconds)}``. The two processes go
    through the snapshots in opposite directions, so at the first claim lost
    every snapshot further on belongs to the other process: stop there.
    A progress ``bar``, if given, moves on by one per evaluation.
    """
    train_x, train_y = split_inputs_labels(splits.train)
    val_x, val_y = split_inputs_labels(splits.val)
    model = make_model(group.num_heads, config.train.seed, group.causal, config.model)
    done = {}
    for index in order:
        if not _claim(claims[index]):
            break
        start = time.perf_counter()
        (row,) = evaluate_snapshots(model, snapshots()[index:index + 1], train_x, train_y, val_x, val_y)
        done[index] = (row, time.perf_counter() - start)
        if bar is not None:
            bar.update(1)
    return done


def evaluate_shared(config: ExperimentConfig, name: str, steps: int, cache_dir,
                    caller: int | None = None, splits: Splits | None = None) -> int:
    """The worker's share of group ``name``'s evaluations; how many it took.

    From the last snapshot down, each one the caller has not claimed yet
    (the caller goes up from the first): whichever process is free does the
    remaining evaluations, so both end at about the same time however fast
    each one's own training ran. Each row goes to its own file (written
    whole, then renamed). The group's update-step file is read only once a
    claim is won, waiting for it while the caller (process id ``caller``,
    by default this process's parent) is still this process's parent: a
    caller killed outright never writes it. ``splits``: the ones ``config``
    draws, if the caller has them already.
    """
    g = find_group(name)
    key = cache_key(config, g, steps, torch.device("cpu"))
    cache_dir = Path(cache_dir)
    count = steps // config.train.eval_every
    caller = os.getppid() if caller is None else caller
    payload = {}

    def running():
        return os.getppid() == caller or f"the calling process {caller} has ended"

    def snapshots():
        if not payload:
            payload.update(_load_steps(_steps_path(cache_dir, g, key), key, g, running))
        return payload["snapshots"]

    claims = [_claim_path(cache_dir, g, key, i) for i in range(count)]
    splits = splits if splits is not None else make_splits(config.data, config.task)
    done = _evaluate_claimed(config, g, splits, snapshots, claims, reversed(range(count)))
    for index, (row, seconds) in done.items():  # JSON keeps every float exactly
        write_json(_row_path(cache_dir, g, key, index), {"row": list(row), "seconds": seconds})
    return len(done)


def _worker_running(worker):
    """For ``_load_steps``: True while ``worker`` runs, else its exit code and report."""
    def running():
        if worker.poll() is None:
            return True
        code, report = worker.wait()
        return f"{worker.name}: exit {code}: {report[-800:]}"
    return running


def _train_shared(config: ExperimentConfig, groups: list, splits: Splits, schedule: torch.Tensor,
                  cache_dir: Path, worker, progress: bool | None) -> dict:
    """Two processes, ``groups`` trained and evaluated between them: their runs.

    This process runs the update steps of the first group and the worker
    those of the others; every evaluation after step 0 then goes to
    whichever process is free: this one from the first group's first
    snapshot up, the worker from the last group's last snapshot down
    (``evaluate_shared``). Each history is the one one process would have
    recorded alone, and each training time its update steps plus its
    evaluations, as in ``train_model``.
    """
    here = groups[0]
    steps, cpu = schedule.size(0), torch.device("cpu")
    keys = {g.name: cache_key(config, g, steps, cpu) for g in groups}
    result = _fit(config, here, splits, schedule, cpu, progress, evaluate=False)
    payloads = {here.name: _save_steps(cache_dir, here, keys[here.name], result)}  # for the worker too

    def payload(g):
        if g.name not in payloads:
            payloads[g.name] = _load_steps(_steps_path(cache_dir, g, keys[g.name]), keys[g.name], g,
                                           _worker_running(worker))
        return payloads[g.name]

    from tqdm.auto import tqdm  # imported here: the notebook flavour needs ipywidgets

    count = steps // config.train.eval_every
    done = {}
    with tqdm(total=count * len(groups), desc="evaluations, shared", leave=False, dynamic_ncols=True,
              disable=not progress_enabled(progress)) as bar:
        for g in groups:
            claims = [_claim_path(cache_dir, g, keys[g.name], i) for i in range(count)]
            done[g.name] = _evaluate_claimed(config, g, splits, lambda g=g: payload(g)["snapshots"],
                                             claims, range(count), bar)
            if len(done[g.name]) < count:
                break  # the worker has every evaluation from here on
        bar.set_postfix_str("waiting for the worker's")
        code, report = worker.wait()
    runs = {}
    for g in groups:
        rows = done.setdefault(g.name, {})
        for index in range(count):
            if index in rows:
                continue
            path = _row_path(cache_dir, g, keys[g.name], index)
            if not path.exists():
                raise RuntimeError(f"training in worker processes failed:\n{worker.name}: exit {code}, "
                                   f"without the evaluation at step {(index + 1) * config.train.eval_every} "
                                   f"of {g.name}: {report[-800:]}")
            record = json.loads(path.read_text())
            rows[index] = (tuple(record["row"]), record["seconds"])
        record = payload(g)
        model = make_model(g.num_heads, config.train.seed, g.causal, config.model)
        model.load_state_dict(record["snapshots"][-1][1])  # the trained weights
        history = [tuple(row) for row in record["history"]] + [rows[i][0] for i in range(count)]
        seconds = record["seconds"] + sum(seconds for _, seconds in rows.values())
        runs[g.name] = Run(g, model.eval(), history, seconds, steps)
    return runs


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

    This process takes the first group (``four_heads`` when all are
    missing: the most work a step); worker processes (``revformer.worker``:
    forked on Linux, a fresh interpreter elsewhere or wherever
    ``REVFORMER_WORKER_START=spawn``) take the others.

    - **Two processes** (two cores) share the work: the worker runs the
      update steps of the other groups, then both evaluate, each taking the
      next snapshot no one has taken (``_train_shared``). Both end within
      one evaluation of each other, whichever group is quicker to train.
    - **One process per group** (more cores): each worker trains its group
      with its evaluations and writes its cache file, loaded here like any
      other, key checked.
    """
    from .worker import start_worker

    threads = max(1, (os.cpu_count() or 1) // processes)
    steps = schedule.size(0)
    cpu = torch.device("cpu")
    how = os.environ.get("REVFORMER_WORKER_START", "auto")
    here, *elsewhere = groups
    if processes == 2:
        jobs = [[*(("steps", g.name) for g in elsewhere), *(("evals", g.name) for g in reversed(groups))]]
    elif len(elsewhere) == processes - 1:
        jobs = [[("full", g.name)] for g in elsewhere]
    else:
        raise ValueError(f"cannot share {len(groups)} groups among {processes} processes")
    workers, runs, failures = [], {}, []
    keys = {g.name: cache_key(config, g, steps, cpu) for g in groups}

    def keep(run: Run) -> None:  # into the cache at once: an interruption later loses nothing
        key = keys[run.group.name]
        _save_cached(_cache_path(cache_dir, run.group, key), key, run)
        runs[run.group.name] = run

    def clear_shared() -> None:  # update steps, claims and rows: only finished runs stay
        if processes == 2:
            for g in groups:
                for path in _shared_files(cache_dir, g, keys[g.name]):
                    path.unlink(missing_ok=True)

    clear_shared()  # what a run killed outright left behind: its claims would never be kept
    before = torch.get_num_threads()
    try:
        for worker_jobs in jobs:
            workers.append(start_worker(config, worker_jobs, steps, threads, cache_dir, how))
        torch.set_num_threads(threads)  # this process's share, as a worker's
        if processes == 2:
            for run in _train_shared(config, groups, splits, schedule, cache_dir, workers[0],
                                     progress).values():
                keep(run)
        else:
            keep(_train_group(config, here, splits, schedule, cpu, progress))
        for worker in workers:
            code, report = worker.wait()
            if code != 0:
                failures.append(f"{worker.name}: exit {code}: {report[-800:]}")
    finally:
        torch.set_num_threads(before)
        for worker in workers:  # an interrupted caller leaves no worker behind
            worker.kill()
        clear_shared()
    if failures:
        raise RuntimeError("training in worker processes failed:\n" + "\n".join(failures))
    for g in elsewhere:
        if g.name in runs:
            continue
        key = keys[g.name]
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
