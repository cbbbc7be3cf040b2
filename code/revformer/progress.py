"""What a reader sees while models train: one line before, then bars that move.

Before anything trains, ``announce`` prints one line: what will be trained,
why (it is not in the cache yet) and about how long it will take, from the
speed test. Then ``TrainingBars`` draws one bar per run being trained, with
its steps done, and, when there are several runs, a bar of the runs done.
Runs that train in worker processes report their steps on their standard
output (``revformer.worker``), and the caller draws the bars here; a run that
trains in this process draws its own bar (``revformer.train.run_training``).

The bars are tqdm's: text in a terminal, widgets in a notebook (Jupyter,
Colab, VS Code). Nothing is printed or drawn when progress is off:
``progress=False``, ``--quiet``, or ``REVFORMER_PROGRESS=0`` (the book build).
This module does not take part in training: a worker never imports it.
"""
from __future__ import annotations

import json
import os

from .train import progress_enabled


def describe_jobs(jobs) -> str:
    """``(config, group)`` pairs in words: ``3 groups (four_heads, one_head, no_mask)``, or runs and seeds."""
    jobs = list(jobs)
    groups = list(dict.fromkeys(g.name for _, g in jobs))
    settings = list(dict.fromkeys(json.dumps(c.to_dict(), sort_keys=True) for c, _ in jobs))
    seeds = list(dict.fromkeys(c.train.seed for c, _ in jobs))
    count = len(jobs)
    if len(settings) == 1:
        return f"{count} group{'' if count == 1 else 's'} ({', '.join(groups)})"
    which = (f"seed{'' if len(seeds) == 1 else 's'} {', '.join(map(str, seeds))}" if len(seeds) == len(settings)
             else f"{len(settings)} settings")
    return f"{count} runs ({', '.join(groups)}; {which})"


def format_wait(seconds: float) -> str:
    """``about 40 s``, ``about 3 min``: an estimate, rounded like one."""
    if seconds < 60:
        return f"about {max(5, 5 * round(seconds / 5))} s"
    return f"about {max(1, round(seconds / 60))} min"


# Measured on a two-core machine against the speed test's projection of one run (``Budget.seconds_per_run``):
# a run in this process took 1.15 times it (its first steps and evaluations run cold), and three runs in
# worker processes took 1.5 to 1.7 times the projection for the cores shared (1.7 from a Jupyter kernel),
# plus about 5 s to start the workers.
IN_PROCESS_FACTOR = 1.15
SHARED_CORES_FACTOR = 1.6
WORKER_START_SECONDS = 5.0


def expected_seconds(seconds_per_run: float, runs: int, in_workers: bool, cores: int | None = None) -> float:
    """About how long ``runs`` runs take, from the speed test's projection of one (``seconds_per_run``).

    In worker processes the runs share the cores, as many at once as there
    are cores; here in this process they run one after another. The factors
    are this module's measured ones: an estimate, said as one.
    """
    cores = cores or os.cpu_count() or 1
    if not in_workers:
        return IN_PROCESS_FACTOR * seconds_per_run * runs
    return WORKER_START_SECONDS + SHARED_CORES_FACTOR * seconds_per_run * runs / min(runs, cores)


def announce(jobs, seconds: float | None, device, cache_dir, progress: bool | None = None) -> str | None:
    """Print (and return) the line said before ``jobs`` train; nothing when progress is off."""
    if not progress_enabled(progress) or not jobs:
        return None
    where = "GPU" if getattr(device, "type", str(device)) == "cuda" else "CPU"
    wait = f", {format_wait(seconds)} on this {where}" if seconds is not None else ""
    line = (f"training {describe_jobs(jobs)}{wait}: not in the cache at {cache_dir} yet; "
            "later chapters load them from there")
    print(line, flush=True)
    return line


class TrainingBars:
    """The bars of ``runs`` runs: one per run while it trains, one of the runs done (when there are several).

    Use as a context manager: every bar is closed on the way out. After an
    interrupt, the bars stop where they were (tqdm's notebook widgets turn
    red), so the reader sees how far training got. With progress off, nothing
    is drawn.
    """

    def __init__(self, runs: int, progress: bool | None = None):
        self.enabled = progress_enabled(progress)
        self.runs = runs
        self.overall = None
        self.open = []

    def __enter__(self) -> TrainingBars:
        if self.enabled and self.runs > 1:
            self.overall = self._bar(total=self.runs, desc="runs done", unit="run", leave=True)
        return self

    def __exit__(self, *exc) -> None:
        for bar in self.open:
            bar.close()
        self.open = []
        if self.overall is not None:
            self.overall.close()

    @staticmethod
    def _bar(**options):
        from tqdm.auto import tqdm  # imported here: the notebook flavour needs ipywidgets

        return tqdm(dynamic_ncols=True, **options)

    def start(self, name: str, steps: int):
        """A bar for one run of ``steps`` steps (None when progress is off)."""
        if not self.enabled:
            return None
        bar = self._bar(total=steps, desc=name, unit="step", leave=False)
        self.open.append(bar)
        return bar

    def advance(self, bar, steps_done: int) -> None:
        """Move ``bar`` to ``steps_done`` (it only moves forward)."""
        if bar is not None and steps_done > bar.n:
            bar.update(steps_done - bar.n)

    def finish(self, bar=None, done: bool = True) -> None:
        """One run has ended: its bar (if any) closes; the runs done move on if it succeeded."""
        if bar is not None:
            bar.close()
            self.open.remove(bar)
        if self.overall is not None and done:
            self.overall.update(1)


__all__ = ["TrainingBars", "announce", "describe_jobs", "expected_seconds", "format_wait"]
