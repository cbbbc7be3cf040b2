"""Worker processes: each trains one group and writes it to the cache.

``load_experiment`` trains missing groups side by side on a multi-core CPU:
the first in its own process, each other one in a worker started here by
``start_worker``. A worker writes its cache file and exits; the caller then
loads the file like any other, key checked, so a worker returns nothing but
success or the error it met.

Two ways to start one:

- **fork** (Linux): a copy of the calling process, with PyTorch and the
  data already in memory, starts at once. A worker started this way would
  otherwise spend about a second of CPU importing PyTorch, while the cores
  are busy training the other groups.
- **spawn** (elsewhere, where forking a process that uses threads is not
  safe, or on request): a fresh interpreter runs
  ``python -m revformer.worker --config JSON --group NAME --steps N --threads T --cache DIR``.
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


class ForkedWorker:
    """One group trained in a forked copy of this process."""

    def __init__(self, config, name: str, steps: int, threads: int, cache_dir):
        import warnings

        self.name = name
        read_end, write_end = os.pipe()
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
            _forked_child(write_end, config, name, steps, threads, cache_dir)
        os.close(write_end)
        self.pid, self._read, self._ended = pid, read_end, False

    def wait(self) -> tuple[int, str]:
        """Block until the worker ends; its exit code and, on failure, its traceback."""
        chunks = []
        while chunk := os.read(self._read, 65536):
            chunks.append(chunk)
        os.close(self._read)
        _, status = os.waitpid(self.pid, 0)
        self._ended = True
        return os.waitstatus_to_exitcode(status), b"".join(chunks).decode(errors="replace")

    def kill(self) -> None:
        """Stop a worker that is still running (an interrupted caller leaves none behind)."""
        import signal

        if self._ended:
            return
        self._ended = True
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        os.close(self._read)


def _forked_child(write_end: int, config, name: str, steps: int, threads: int, cache_dir) -> None:
    import traceback

    import torch

    from .experiment import train_into_cache

    code, report = 1, b""
    try:
        # Nothing from the child reaches the caller's streams (in Jupyter they
        # belong to the kernel's threads, which a forked child does not have).
        sys.stdout = sys.stderr = open(os.devnull, "w")
        torch.set_num_threads(threads)
        train_into_cache(config, name, steps, cache_dir)
        code = 0
    except BaseException:  # reported to the caller through the pipe
        report = traceback.format_exc().encode()
    finally:
        try:
            while report:
                report = report[os.write(write_end, report):]
        finally:
            os._exit(code)


class SpawnedWorker:
    """One group trained in a fresh interpreter (``python -m revformer.worker``)."""

    def __init__(self, config, name: str, steps: int, threads: int, cache_dir):
        import subprocess
        from pathlib import Path

        self.name = name
        package_root = str(Path(__file__).resolve().parents[1])  # importable however this one was
        env = dict(os.environ, OMP_NUM_THREADS=str(threads), REVFORMER_PROGRESS="0",
                   PYTHONPATH=os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")])))
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "revformer.worker", "--config", json.dumps(config.to_dict()),
             "--group", name, "--steps", str(steps), "--threads", str(threads), "--cache", str(cache_dir)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def wait(self) -> tuple[int, str]:
        out, err = self._proc.communicate()
        return self._proc.returncode, (err or out).strip()

    def kill(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()


def start_worker(config, name: str, steps: int, threads: int, cache_dir, how: str = "auto"):
    """Start training group ``name`` in a worker process; ``how``: ``auto``, ``fork`` or ``spawn``."""
    if how not in ("auto", "fork", "spawn"):
        raise ValueError(f"how must be 'auto', 'fork' or 'spawn', got {how!r}")
    if how == "fork" and not fork_available():
        raise ValueError("forking worker processes is only used on Linux; use how='spawn'")
    if how == "fork" or (how == "auto" and fork_available()):
        return ForkedWorker(config, name, steps, threads, cache_dir)
    return SpawnedWorker(config, name, steps, threads, cache_dir)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m revformer.worker",
                                     description="train one group and write it to the cache")
    parser.add_argument("--config", required=True, help="ExperimentConfig.to_dict() as JSON")
    parser.add_argument("--group", required=True)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cache", required=True)
    args = parser.parse_args(argv)

    import torch

    from .config import ExperimentConfig
    from .experiment import train_into_cache

    torch.set_num_threads(max(1, args.threads))
    config = ExperimentConfig.from_dict(json.loads(args.config))
    print(train_into_cache(config, args.group, args.steps, args.cache))
    return 0


if __name__ == "__main__":
    sys.exit(main())
