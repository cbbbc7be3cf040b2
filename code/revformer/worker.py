"""Training groups: in this process, or each in a process of its own.

``train_group`` trains one group and returns its ``Run``. On a CPU with two
or more cores, ``load_experiment`` trains the missing groups side by side
instead: ``train_in_workers`` starts one fresh interpreter per group,

    python -m revformer.worker --config JSON --group NAME --steps N --cache DIR

each on one share of the cores (a sweep of several seeds runs a few at a
time), and waits for them, drawing each worker's progress as it reports it
on its standard output. Each worker writes its
group's cache file (to a temporary name, then renamed) and exits; the caller
then loads the files like any other cache hit. A model this small keeps one
thread busy, so three processes on two cores finish sooner than three groups
one after another with both cores each, and the operating system shares the
cores between them fairly by itself.

A worker is a plain program with its arguments on the command line: it never
re-imports the caller's script (so a script without an
``if __name__ == "__main__"`` guard works), and it works from a Jupyter kernel.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from .cache import Run, cache_key, cache_path, save_run
from .config import ExperimentConfig, Group, group as find_group
from .data import Splits, make_splits, split_inputs_labels
from .model import make_model
from .train import batch_schedule, run_training


def train_group(config: ExperimentConfig, group: Group, splits: Splits,
                schedule: torch.Tensor, device: torch.device,
                progress: bool | None = None, description: str | None = None,
                on_step=None) -> Run:
    """Train a fresh model of ``group`` on the shared ``schedule``; its ``Run``.

    ``description`` labels the progress bar (the group's name by default);
    ``on_step`` goes to ``run_training``.
    """
    train_x, train_y = split_inputs_labels(splits.train)
    val_x, val_y = split_inputs_labels(splits.val)
    model = make_model(group.num_heads, config.train.seed, group.causal, config.model,
                       device)
    result = run_training(model, train_x, train_y, val_x, val_y, schedule, config.train,
                           progress, description=description or group.name,
                           on_step=on_step)
    return Run(group, result.model, result.history, result.batch_losses, result.seconds,
               result.steps, result.curve, torch.get_num_threads())


def use_workers(device: torch.device, missing: int,
                parallel: bool | None = None) -> bool:
    """Whether the ``missing`` groups train in worker processes rather than here.

    Only on a CPU with at least two cores and at least two groups to train. On
    a GPU they train here, one after another: a process started after CUDA is
    initialised in its parent cannot share it, and one GPU runs one group at a
    time well. ``parallel=None`` follows ``REVFORMER_PARALLEL`` (``0`` turns
    workers off).
    """
    if parallel is None:
        parallel = os.environ.get("REVFORMER_PARALLEL", "1") not in ("0", "false", "no")
    return (bool(parallel) and device.type == "cpu" and missing >= 2
            and (os.cpu_count() or 1) >= 2)


def _stop(process: subprocess.Popen) -> None:
    """Interrupt a worker as Ctrl-C would (it removes its temporary file), then wait
    for it.

    A Ctrl-C in a terminal reaches the workers too; they get a moment to end
    by themselves first, so that a second interrupt cannot cut their clean-up.
    """
    try:
        process.wait(timeout=1)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGINT if os.name == "posix" else signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def train_in_workers(jobs: list[tuple[ExperimentConfig, Group]], steps: int, cache_dir,
                     at_once: int | None = None, progress: bool | None = None) -> None:
    """Train each ``(config, group)`` of ``jobs`` in a worker process of its own, into
    ``cache_dir``.

    At most ``at_once`` workers run at a time (by default all of them: the
    three groups of a reproduction share the cores fairly by themselves);
    each next one starts when one ends. Returns when every worker has written
    its cache file; raises ``RuntimeError`` with a worker's own error when one
    fails. If this process is interrupted (Ctrl-C, or a Jupyter kernel's
    interrupt), the workers are interrupted too and none is left running.

    Each worker writes its steps done to its standard output (one line per
    hundredth of its steps); a thread here reads them, and this process
    draws one bar per running worker and one for the runs done
    (``revformer.progress``), unless ``progress`` is off.
    """
    from .progress import TrainingBars

    at_once = len(jobs) if at_once is None else max(1, at_once)
    threads = max(1, (os.cpu_count() or 1) // min(at_once, len(jobs)))
    # importable however this one was
    package_root = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), REVFORMER_PROGRESS="0",
               PYTHONPATH=os.pathsep.join(
                   filter(None, [package_root, os.environ.get("PYTHONPATH")])))

    def start(config, g):
        command = [sys.executable, "-m", "revformer.worker",
                   "--config", json.dumps(config.to_dict()),
                   "--group", g.name, "--steps", str(steps), "--threads", str(threads),
                   "--cache", str(cache_dir),
                   "--key", cache_key(config, g, steps, "cpu"), "--report"]
        name = f"{g.name} (seed {config.train.seed})"
        return _Worker(name, command, env, bars.start(name, steps))

    waiting, running, failures = list(jobs), [], []
    with TrainingBars(len(jobs), progress) as bars:
        try:
            while waiting or running:
                while waiting and len(running) < at_once:
                    running.append(start(*waiting.pop(0)))
                for worker in running:
                    bars.advance(worker.bar, worker.steps_done)
                finished = [worker for worker in running
                            if worker.process.poll() is not None]
                if not finished:
                    # the workers compute; this process only waits and draws
                    time.sleep(0.1)
                    continue
                for worker in finished:
                    running.remove(worker)
                    error = worker.close()
                    if error:
                        failures.append(error)
                    bars.advance(worker.bar, worker.steps_done)
                    bars.finish(worker.bar, done=error is None)
        finally:
            for worker in running:
                _stop(worker.process)
                worker.close()
    if failures:
        raise RuntimeError("training in worker processes failed:\n"
                           + "\n".join(failures))


class _Worker:
    """One worker process, the thread that reads the steps it reports, and its bar."""

    def __init__(self, name: str, command: list[str], env: dict, bar):
        import threading

        self.name, self.bar, self.steps_done = name, bar, 0
        # the worker's errors, read if it fails
        self.log = tempfile.TemporaryFile(mode="w+")
        self.process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                                        stderr=self.log, text=True)
        self.reader = threading.Thread(target=self._follow, daemon=True)
        self.reader.start()

    def _follow(self) -> None:
        for line in self.process.stdout:  # ends when the worker exits
            if line.strip().isdigit():
                self.steps_done = int(line)

    def close(self) -> str | None:
        """After the process has ended: the last report read, the files closed; its
        error, if it failed."""
        self.reader.join(timeout=10)
        # a reader still inside readline keeps its pipe; it ends with the process
        if not self.reader.is_alive():
            self.process.stdout.close()
        error = None
        if self.process.returncode != 0:
            self.log.seek(0)
            error = (f"{self.name}: exit {self.process.returncode}: "
                     f"{self.log.read()[-800:].strip()}")
        self.log.close()
        return error


def main(argv=None) -> int:
    """A worker: train one group on the CPU and write its cache file."""
    parser = argparse.ArgumentParser(
        prog="python -m revformer.worker",
        description="train one group and write it to the cache")
    parser.add_argument("--config", required=True,
                        help="ExperimentConfig.to_dict() as JSON")
    parser.add_argument("--group", required=True)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cache", required=True)
    parser.add_argument("--key", default=None,
                        help="the caller's cache key: the worker's must be the same")
    parser.add_argument("--report", action="store_true",
                        help="write the steps done to standard output, "
                             "one line per hundredth of the steps")
    args = parser.parse_args(argv)
    torch.set_num_threads(max(1, args.threads))
    config = ExperimentConfig.from_dict(json.loads(args.config))
    group, cpu = find_group(args.group), torch.device("cpu")
    splits = make_splits(config.data, config.task)
    schedule = batch_schedule(splits.train.size(0), config.train)[:args.steps]
    key = cache_key(config, group, args.steps, cpu)
    # the package's files changed after the caller started
    if args.key is not None and args.key != key:
        parser.exit(3, f"revformer.worker: the package's code differs from the "
                       f"caller's (another key for {group.name}): run again\n")
    every = max(1, args.steps // 100)

    def report(step):
        if step % every == 0 or step == args.steps:
            print(step, flush=True)

    run = train_group(config, group, splits, schedule, cpu, progress=False,
                      on_step=report if args.report else None)
    save_run(cache_path(args.cache, group, key), key, run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
