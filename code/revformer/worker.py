"""Worker processes: each trains groups and writes them to the cache.

``load_experiment`` trains missing groups side by side on a multi-core CPU:
the first in its own process, the others in workers started here by
``start_worker``. A worker runs its jobs in order and exits:

- ``("full", name)`` trains group ``name`` with its evaluations and writes
  its cache file, which the caller loads like any other, key checked;
- ``("steps", name)`` runs only the update steps and writes the weight
  snapshots of the evaluation steps, for the processes to evaluate;
- ``("evals", name)`` evaluates those snapshots of group ``name`` that the
  caller has not yet taken, from the last down, each into its own row file
  (on two cores the caller and one worker share the evaluations this way).

So a worker returns nothing but success or the error it met.

Two ways to start one:

- **fork** (Linux): a copy of the calling process, with PyTorch and the
  data already in memory, starts at once. A worker started this way would
  otherwise spend about a second of CPU importing PyTorch, while the cores
  are busy training the other groups.
- **spawn** (elsewhere, where forking a process that uses threads is not
  safe, or on request): a fresh interpreter runs
  ``python -m revformer.worker --config JSON --job KIND:NAME [--job KIND:NAME ...]
  --steps N --threads T --cache DIR``.
  It never re-imports the caller's main script, so a script without an
  ``if __name__ == "__main__"`` guard works too.
"""
from __future__ import annotations

import argparse
import json
import os
import sys


def fork_available() -> bool:
    """Fork only on Linux, where it is how processes start (macOS frameworks refuse it)."""
    return sys.platform.startswith("linux") and hasattr(os, "fork")


JOB_KINDS = ("full", "steps", "evals")


def _well_formed(jobs) -> bool:
    """Every job a ``(kind, group name)`` pair with ``kind`` in ``JOB_KINDS``."""
    return all(len(job) == 2 and job[0] in JOB_KINDS for job in jobs)


def _worker_name(jobs) -> str:
    """The groups a worker's jobs touch, each once, in order: how its errors name it."""
    return ", ".join(dict.fromkeys(name for _, name in jobs))


def run_jobs(config, jobs, steps: int, cache_dir, caller: int | None = None) -> None:
    """Run ``jobs`` (``(kind, group name)`` pairs) one after another, in this process.

    ``caller``: the process id of the caller, whose files an ``evals`` job
    may wait for only while that process lives. The splits are drawn once,
    for every job.
    """
    from .data import make_splits
    from .experiment import evaluate_shared, train_into_cache

    splits = make_splits(config.data, config.task)
    for kind, name in jobs:
        if kind == "evals":
            evaluate_shared(config, name, steps, cache_dir, caller, splits)
        else:
            train_into_cache(config, name, steps, cache_dir, evaluate=kind == "full", splits=splits)


class ForkedWorker:
    """Jobs run in a forked copy of this process."""

    def __init__(self, config, jobs, steps: int, threads: int, cache_dir):
        import warnings

        self.name = _worker_name(jobs)
        read_end, write_end = os.pipe()
        caller = os.getpid()
        with warnings.catch_warnings():
            # Python 3.12+ warns that forking a process with threads may leave
            # the child waiting on a lock another thread held. This child takes
            # none of those: it computes on one thread (no OpenMP pool, as
            # PyTorch's DataLoader workers do), writes only its own files and the
            # raw pipe, and leaves through os._exit without running any cleanup.
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # the child: never returns into the caller's code
            os.close(read_end)
            _forked_child(write_end, config, jobs, steps, threads, cache_dir, caller)
        os.close(write_end)
        self.pid, self._read, self._status, self._result = pid, read_end, None, None

    def poll(self) -> int | None:
        """The exit code if the worker has ended, else None; never blocks."""
        if self._status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self._status = status
        return None if self._status is None else os.waitstatus_to_exitcode(self._status)

    def wait(self) -> tuple[int, str]:
        """Block until the worker ends; its exit code and, on failure, its traceback."""
        if self._result is None:
            chunks = []
            while chunk := os.read(self._read, 65536):
                chunks.append(chunk)
            os.close(self._read)
            self._read = None
            if self._status is None:
                self._status = os.waitpid(self.pid, 0)[1]
            self._result = (os.waitstatus_to_exitcode(self._status), b"".join(chunks).decode(errors="replace"))
        return self._result

    def kill(self) -> None:
        """Stop a worker that is still running (an interrupted caller leaves none behind)."""
        import signal

        if self._status is None:
            os.kill(self.pid, signal.SIGKILL)
            self._status = os.waitpid(self.pid, 0)[1]
        if self._read is not None:
            os.close(self._read)
            self._read = None


def _forked_child(write_end: int, config, jobs, steps: int, threads: int, cache_dir,
                  caller: int) -> None:
    import traceback

    import torch

    code, report = 1, b""
    try:
        # Nothing from the child reaches the caller's streams (in Jupyter they
        # belong to the kernel's threads, which a forked child does not have).
        sys.stdout = sys.stderr = open(os.devnull, "w")
        torch.set_num_threads(threads)
        run_jobs(config, jobs, steps, cache_dir, caller)
        code = 0
    except BaseException:  # reported to the caller through the pipe (its end: a pipe holds 64 KB)
        report = traceback.format_exc().encode()[-16000:]
    finally:
        try:
            while report:
                report = report[os.write(write_end, report):]
        finally:
            os._exit(code)


class SpawnedWorker:
    """Jobs run in a fresh interpreter (``python -m revformer.worker``)."""

    def __init__(self, config, jobs, steps: int, threads: int, cache_dir):
        import subprocess
        from pathlib import Path

        self.name = _worker_name(jobs)
        package_root = str(Path(__file__).resolve().parents[1])  # importable however this one was
        env = dict(os.environ, OMP_NUM_THREADS=str(threads), REVFORMER_PROGRESS="0",
                   PYTHONPATH=os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")])))
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "revformer.worker", "--config", json.dumps(config.to_dict()),
             *(arg for kind, name in jobs for arg in ("--job", f"{kind}:{name}")),
             "--steps", str(steps), "--threads", str(threads), "--cache", str(cache_dir),
             "--caller", str(os.getpid())],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._result = None

    def poll(self) -> int | None:
        return self._proc.poll()

    def wait(self) -> tuple[int, str]:
        if self._result is None:
            out, err = self._proc.communicate()
            self._result = (self._proc.returncode, (err or out).strip())
        return self._result

    def kill(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()


def start_worker(config, jobs, steps: int, threads: int, cache_dir, how: str = "auto"):
    """Start a worker process that runs ``jobs`` in order: ``(kind, group name)`` pairs,
    ``kind`` one of ``JOB_KINDS``; ``how``: ``auto``, ``fork`` or ``spawn``."""
    jobs = [tuple(job) for job in jobs]
    if not jobs or not _well_formed(jobs):
        raise ValueError(f"jobs must be (kind, group) pairs with kind in {JOB_KINDS}, got {jobs!r}")
    if how not in ("auto", "fork", "spawn"):
        raise ValueError(f"how must be 'auto', 'fork' or 'spawn', got {how!r}")
    if how == "fork" and not fork_available():
        raise ValueError("forking worker processes is only used on Linux; use how='spawn'")
    if how == "fork" or (how == "auto" and fork_available()):
        return ForkedWorker(config, jobs, steps, threads, cache_dir)
    return SpawnedWorker(config, jobs, steps, threads, cache_dir)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m revformer.worker",
                                     description="train groups and write them to the cache")
    parser.add_argument("--config", required=True, help="ExperimentConfig.to_dict() as JSON")
    parser.add_argument("--job", action="append", required=True, metavar="KIND:GROUP",
                        help="full:GROUP, steps:GROUP or evals:GROUP; repeat for several, run in order")
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cache", required=True)
    parser.add_argument("--caller", type=int, default=None,
                        help="the calling process's id: evals jobs wait for its files only while it runs")
    args = parser.parse_args(argv)

    import torch

    from .config import ExperimentConfig

    jobs = [tuple(job.split(":", 1)) for job in args.job]
    if not _well_formed(jobs):
        parser.error(f"--job must be KIND:GROUP with KIND one of {', '.join(JOB_KINDS)}")
    torch.set_num_threads(max(1, args.threads))
    run_jobs(ExperimentConfig.from_dict(json.loads(args.config)), jobs, args.steps, args.cache, args.caller)
    return 0


if __name__ == "__main__":
    sys.exit(main())
