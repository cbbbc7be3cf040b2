"""No reader waits in silence: a line before training, bars while it runs, nothing when quiet."""
import os
import re
import subprocess
import sys

import pytest
import torch

from revformer.config import group as find_group
from revformer.experiment import load_experiment
from revformer.progress import describe_jobs, expected_seconds, format_wait
from revformer.sweep import seed_config


class Bar:
    """Stands in for tqdm: records every position a bar is moved to."""

    made = []

    def __init__(self, total=None, desc="", disable=False, **options):
        self.total, self.desc, self.disable, self.n, self.seen, self.closed = total, desc, disable, 0, [], False
        Bar.made.append(self)

    def update(self, k=1):
        self.n += k
        self.seen.append(self.n)

    def set_postfix(self, **values):
        pass

    def close(self):
        self.closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@pytest.fixture
def bars(monkeypatch):
    import tqdm.auto

    Bar.made = []
    monkeypatch.setattr(tqdm.auto, "tqdm", Bar)  # read at each call by train_model and TrainingBars
    return Bar.made


def _check_bars(made, steps, runs):
    shown = [b for b in made if not b.disable]
    overall = [b for b in shown if b.desc == "runs done"]
    per_run = [b for b in shown if b.desc != "runs done"]
    assert [b.total for b in overall] == [runs] and overall[0].seen == list(range(1, runs + 1))
    assert sorted(b.desc for b in per_run) == sorted(f"{g} (seed 42)" for g in ("four_heads", "one_head", "no_mask"))
    for b in per_run:
        assert b.total == steps and b.n == steps and b.closed, (b.desc, b.n)
        moving = [n for n in b.seen if 0 < n < steps]
        assert len(set(moving)) >= 2, (b.desc, b.seen)  # moved while it trained


def _longer(config, steps=400):
    """Enough steps that a worker's reports span many of the caller's looks, on a fast machine too."""
    import dataclasses

    return dataclasses.replace(config, train=dataclasses.replace(config.train, steps=steps))


def _needs_workers():
    from revformer.worker import use_workers

    assert use_workers(torch.device("cpu"), 3, True), "training in workers needs a CPU with at least two cores"


@pytest.mark.slow  # several groups in worker processes
def test_the_bars_advance_while_workers_train(small_config, tmp_path, bars, capsys):
    _needs_workers()
    small_config = _longer(small_config)
    exp = load_experiment(small_config, device="cpu", cache_dir=tmp_path, progress=True, parallel=True)
    assert not any(r.from_cache for r in exp.runs.values())
    _check_bars(bars, small_config.train.steps, 3)
    said = capsys.readouterr().out
    assert said.startswith("training 3 groups (four_heads, one_head, no_mask), about ")
    assert f"not in the cache at {tmp_path} yet" in said and said.count("\n") == 1
    Bar.made.clear()
    again = load_experiment(small_config, device="cpu", cache_dir=tmp_path, progress=True, parallel=True)
    assert all(r.from_cache for r in again.runs.values())
    assert Bar.made == [] and capsys.readouterr().out == ""  # from the cache: nothing to wait for


def test_the_bars_advance_when_training_here(small_config, tmp_path, bars, capsys):
    load_experiment(small_config, device="cpu", cache_dir=tmp_path, progress=True, parallel=False)
    _check_bars(bars, small_config.train.steps, 3)
    assert capsys.readouterr().out.startswith("training 3 groups (four_heads, one_head, no_mask), about ")


@pytest.mark.parametrize("how", ["progress=False", "REVFORMER_PROGRESS=0"])
def test_nothing_is_printed_when_quiet(small_config, tmp_path, how):
    """In a process of its own, workers and all: not a line on either stream."""
    progress = "False" if how == "progress=False" else "None"
    script = (f"from revformer.config import ExperimentConfig\nfrom revformer.experiment import load_experiment\n"
              f"config = ExperimentConfig.from_dict({small_config.to_dict()!r})\n"
              f"load_experiment(config, device='cpu', cache_dir={str(tmp_path)!r}, progress={progress}, parallel=True)\n")
    env = {k: v for k, v in os.environ.items() if k != "REVFORMER_PROGRESS"}
    if how != "progress=False":
        env["REVFORMER_PROGRESS"] = "0"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == "" and done.stderr == ""
    assert len(list(tmp_path.glob("*.pt"))) == 3


def test_in_a_terminal_the_bars_are_drawn_on_stderr(small_config, tmp_path):
    _needs_workers()
    small_config = _longer(small_config)
    script = (f"from revformer.config import ExperimentConfig\nfrom revformer.experiment import load_experiment\n"
              f"config = ExperimentConfig.from_dict({small_config.to_dict()!r})\n"
              f"load_experiment(config, device='cpu', cache_dir={str(tmp_path)!r}, progress=True, parallel=True)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("training 3 groups (four_heads, one_head, no_mask), about ")
    steps = small_config.train.steps
    for name in ("four_heads", "one_head", "no_mask"):  # each bar drawn while it moved
        drawn = {int(n) for n in re.findall(rf"{name} \(seed 42\): +\d+%\|[^|]*\| (\d+)/{steps} \[", done.stderr)}
        assert len({n for n in drawn if 0 < n < steps}) >= 2, (name, sorted(drawn))
    assert "runs done: 100%" in done.stderr and "| 3/3 [" in done.stderr


@pytest.mark.parametrize("command", ["reproduce", "sweep"])
def test_quiet_commands_turn_progress_off(monkeypatch, tmp_path, command):
    """``--quiet`` reaches the training as progress=False; without it, the environment decides (None)."""
    import revformer.artifacts
    import revformer.sweep
    from revformer import cli

    seen = []

    def stop(*args, progress=None, **kwargs):
        seen.append(progress)
        raise ValueError("stopped here")

    monkeypatch.setattr(revformer.artifacts, "reproduce", stop)
    monkeypatch.setattr(revformer.sweep, "run_sweep", stop)
    for extra in (["--quiet"], []):
        assert cli.main([command, "--out", str(tmp_path), *extra]) == 2
    assert seen == [False, None]


def test_the_line_names_what_trains():
    from revformer.config import ExperimentConfig

    config = ExperimentConfig()
    three = [(config, find_group(n)) for n in ("four_heads", "one_head", "no_mask")]
    assert describe_jobs(three) == "3 groups (four_heads, one_head, no_mask)"
    assert describe_jobs(three[:1]) == "1 group (four_heads)"
    sweep = [(seed_config(config, s), g) for s in (0, 1) for _, g in three]
    assert describe_jobs(sweep) == "6 runs (four_heads, one_head, no_mask; seeds 0, 1)"
    import dataclasses

    other = dataclasses.replace(config, data=dataclasses.replace(config.data, seed=7))
    assert describe_jobs([(config, three[0][1]), (other, three[0][1])]) == "2 runs (four_heads; 2 settings)"
    assert [format_wait(s) for s in (3, 41, 59, 61, 200)] == ["about 5 s", "about 40 s", "about 60 s",
                                                               "about 1 min", "about 3 min"]


def test_workers_share_the_cores_and_start_first():
    here = expected_seconds(20.0, 3, in_workers=False)
    two_cores = expected_seconds(20.0, 3, in_workers=True, cores=2)
    assert two_cores < here  # three runs on two cores beat three in a row
    assert expected_seconds(20.0, 6, in_workers=True, cores=2) - 5 == pytest.approx(2 * (two_cores - 5))
    assert expected_seconds(20.0, 3, in_workers=True, cores=16) < two_cores


def test_the_speed_test_times_an_evaluation_and_a_curve_point(small_config):
    from revformer.data import make_splits, split_inputs_labels
    from revformer.train import speed_test

    splits = make_splits(small_config.data, small_config.task)
    x, y = split_inputs_labels(splits.train)
    ticks = iter(range(100))
    budget = speed_test(x, y, small_config.train, torch.device("cpu"), clock=lambda: float(next(ticks)),
                        validation_rows=splits.val.size(0))
    # the clock ticks once a reading: the steps take one tick, the evaluation one, the curve point one
    assert budget.seconds_per_step == 1 / small_config.train.speed_test_steps
    assert budget.seconds_per_evaluation == 1.0 and budget.seconds_per_curve_point == 1.0
    train = small_config.train
    evaluations = train.steps // train.eval_every + 1
    assert budget.seconds_per_run(train) == pytest.approx(
        train.steps / train.speed_test_steps + evaluations + len(train.curve_steps()))
