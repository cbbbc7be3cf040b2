import contextlib
import json
import os
import shutil

import numpy as np
import pytest
import torch

from revformer import cli
from revformer.analysis import reversal_key
from revformer.artifacts import ARTIFACTS
from revformer.config import GROUP_NAMES
from revformer.config import group as find_group
from revformer.experiment import load_experiment
from revformer.files import atomic_path, read_csv, write_json
from revformer.model import count_parameters


def _read(out, name):
    return read_csv(out / name)


def test_reproduction_writes_every_artifact(reproduction):
    _, out = reproduction
    assert sorted(p.name for p in out.iterdir()) == sorted(ARTIFACTS)
    config = json.loads((out / "config.json").read_text())
    for section in ("task", "model", "train", "data", "budget", "environment"):
        assert section in config
    assert {config["data"][k] for k in ("train_size", "val_size", "test_size")} and config["data"]["test_size"] == 512
    assert set(config["environment"]) >= {"python", "torch", "numpy", "matplotlib", "device"}
    assert config["budget"]["steps"] == 600 and config["budget"]["seconds_per_step"] > 0


def test_artifacts_agree_with_each_other(reproduction):
    experiment, out = reproduction
    full = _read(out, "losses_full.csv")
    ablation_losses = _read(out, "losses_ablation.csv")
    assert [r["step"] for r in full] == [str(s) for s in range(0, 601, 50)]
    assert [{k: r[k] for k in ("step", "train_loss", "val_loss")} for r in ablation_losses
            if r["group"] == "four_heads"] == full
    ablation = {r["group"]: r for r in _read(out, "ablation.csv")}
    assert list(ablation) == list(GROUP_NAMES)
    for name, row in ablation.items():
        last = [r for r in ablation_losses if r["group"] == name][-1]
        assert row["train_loss"] == last["train_loss"] and row["val_loss"] == last["val_loss"]
        assert int(row["parameters"]) == 69_709
    assert ablation["one_head"]["num_heads"] == "1" and ablation["no_mask"]["causal"] == "False"

    predictions = _read(out, "predictions.csv")
    assert len(predictions) == 512 and [int(r["index"]) for r in predictions] == list(range(512))
    right = sum(int(r["sequence_correct"]) for r in predictions) / 512
    digits = sum(int(r["digits_correct"]) for r in predictions) / (512 * 6)
    assert right == pytest.approx(float(ablation["four_heads"]["sequence_accuracy"]))
    assert digits == pytest.approx(float(ablation["four_heads"]["digit_accuracy"]))
    for r in predictions[:50]:
        assert r["target"] == r["prompt"][::-1]
        tokens = r["prediction"].split(" ")
        assert len(tokens) == 7
        assert int(r["digits_correct"]) == sum(a == b for a, b in zip(tokens[:6], r["target"]))

    npz = np.load(out / "attention_sample0.npz")
    assert sorted(npz.files) == sorted(["tokens", *GROUP_NAMES, "four_heads_mask_off"])
    tokens = npz["tokens"]
    assert tokens.shape == (14,) and "".join(map(str, tokens[1:7])) == predictions[0]["prompt"]
    assert npz["four_heads"].shape == (2, 4, 14, 14) and npz["one_head"].shape == (2, 1, 14, 14)
    assert np.count_nonzero(np.triu(npz["four_heads"], 1)) == 0
    assert np.count_nonzero(np.triu(npz["no_mask"], 1)) > 0
    assert np.count_nonzero(np.triu(npz["four_heads_mask_off"], 1)) > 0

    stats = _read(out, "head_stats.csv")
    assert len(stats) == 2 * 4 + 2 * 1 + 2 * 4
    for r in stats:
        w = npz[r["group"]][int(r["layer"]), int(r["head"])]
        rev = np.mean([w[q, reversal_key(q)] for q in range(7, 13)])
        nxt = np.mean([w[q, q + 1] for q in range(7, 13)])
        assert float(r["reversal_weight"]) == pytest.approx(rev, abs=1e-6)
        assert float(r["next_answer_weight"]) == pytest.approx(nxt, abs=1e-6)

    toggle = json.loads((out / "mask_toggle.json").read_text())
    assert toggle["prefix_max_change_mask_on"] == 0.0
    assert toggle["prefix_max_change_mask_off"] > 1e-3
    assert 0.0 <= toggle["sequence_accuracy_mask_off"] <= 1.0


def test_the_experiment_succeeds(reproduction):
    """The issue's bar: the full model reverses the test set, and its first layer
    (layer 0 in code) reads the reversal positions of sample 0."""
    experiment, out = reproduction
    assert experiment.scores("four_heads").sequence_accuracy >= 0.99
    stats = [r for r in _read(out, "head_stats.csv") if r["group"] == "four_heads" and r["layer"] == "0"]
    assert np.mean([float(r["reversal_weight"]) for r in stats]) >= 0.90
    assert all(count_parameters(run.model) == 69_709 for run in experiment.runs.values())


def test_groups_are_what_their_names_say(small_config, tmp_path):
    exp = load_experiment(small_config, device="cpu", cache_dir=tmp_path, progress=False)
    assert list(exp.runs) == list(GROUP_NAMES)
    heads = {name: run.model.blocks[0].attention.num_heads for name, run in exp.runs.items()}
    causal = {name: run.model.blocks[1].attention.causal for name, run in exp.runs.items()}
    assert heads == {"four_heads": 4, "one_head": 1, "no_mask": 4}
    assert causal == {"four_heads": True, "one_head": True, "no_mask": False}
    assert all([r[0] for r in run.history] == [0, 25, 50, 75, 100] for run in exp.runs.values())


def test_cache_hit_gives_identical_results(small_config, tmp_path):
    first = load_experiment(small_config, device="cpu", cache_dir=tmp_path, groups=["four_heads"], progress=False)
    second = load_experiment(small_config, device="cpu", cache_dir=tmp_path, groups=["four_heads"], progress=False)
    assert not first.run().from_cache and second.run().from_cache
    assert second.run().history == first.run().history
    for a, b in zip(first.model().state_dict().values(), second.model().state_dict().values()):
        assert torch.equal(a, b)
    assert "loaded from the cache" in second.budget.reason


@pytest.mark.parametrize("damage", ["garbage", "truncated", "foreign"])
def test_damaged_or_foreign_cache_is_reported_and_rebuilt(small_config, tmp_path, capsys, damage):
    first = load_experiment(small_config, device="cpu", cache_dir=tmp_path, progress=False)
    path = next(tmp_path.glob("four_heads-*.pt"))
    if damage == "garbage":
        path.write_bytes(b"not a checkpoint")
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[:1000])
    else:
        shutil.copy(next(tmp_path.glob("one_head-*.pt")), path)
    capsys.readouterr()
    again = load_experiment(small_config, device="cpu", cache_dir=tmp_path, progress=False)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and path.name in err[0] and "retraining" in err[0]
    assert not again.run("four_heads").from_cache and again.run("one_head").from_cache
    # retrained alone (in this process) rather than beside the others: the same
    # run up to the thread count's rounding
    rebuilt, original = again.run("four_heads").history, first.run("four_heads").history
    assert [r[0] for r in rebuilt] == [r[0] for r in original]
    assert [v for r in rebuilt for v in r[1:]] == pytest.approx([v for r in original for v in r[1:]], abs=1e-6)
    # the rebuilt file is good again
    third = load_experiment(small_config, device="cpu", cache_dir=tmp_path, progress=False)
    assert third.run("four_heads").from_cache and capsys.readouterr().err == ""


def test_slow_machine_lowers_every_group_alike(small_config, tmp_path):
    import dataclasses

    config = dataclasses.replace(small_config, train=dataclasses.replace(small_config.train, time_limit_seconds=1e-9))
    exp = load_experiment(config, device="cpu", cache_dir=tmp_path, progress=False)
    assert exp.budget.lowered and exp.budget.steps == config.train.eval_every
    assert all(run.steps == config.train.eval_every for run in exp.runs.values())
    record = exp.config_record()["budget"]
    assert record["lowered"] and "lowered" in record["reason"]


@contextlib.contextmanager
def _threads_of(processes):
    """This process at the thread count of one of ``processes`` training side by side."""
    before = torch.get_num_threads()
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // processes))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _splits_and_schedule(config):
    """The splits of ``config`` and its shared batch schedule, as ``load_experiment`` makes them."""
    from revformer.data import make_splits
    from revformer.train import batch_schedule

    splits = make_splits(config.data, config.task)
    return splits, batch_schedule(splits.train.size(0), config.train)


@pytest.mark.parametrize("start, processes, count", [("fork", 2, 3), ("fork", 3, 3), ("spawn", 2, 3),
                                                      ("fork", 2, 2)])
def test_parallel_training_matches_sequential(small_config, tmp_path, monkeypatch, start, processes, count):
    """Two processes share the groups' evaluations; three give each group its own.
    Either way the runs equal one group after another, bit for bit."""
    from revformer.experiment import _train_group, _train_parallel, cache_key

    monkeypatch.setenv("REVFORMER_WORKER_START", start)
    names = GROUP_NAMES[:count]
    groups = [find_group(name) for name in names]
    splits, schedule = _splits_and_schedule(small_config)
    before = torch.get_num_threads()
    with _threads_of(processes):
        sequential = {g.name: _train_group(small_config, g, splits, schedule, torch.device("cpu"), False)
                      for g in groups}
    if processes == 2:  # what a shared run killed outright leaves: cleared, never believed
        stem = f"{names[1]}-{cache_key(small_config, groups[1], 100, torch.device('cpu'))[:20]}"
        (tmp_path / f"{stem}.claim-0").touch()
        (tmp_path / f"{stem}.row-1.json").write_text('{"row": [50, 9.0, 9.0], "seconds": 0}')
    parallel = _train_parallel(small_config, groups, splits, schedule, processes, tmp_path, False)
    assert torch.get_num_threads() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        p.name for p in tmp_path.glob("*.pt") if not p.name.endswith(".steps.pt"))  # no snapshots left
    assert len(list(tmp_path.glob("*.pt"))) == count and sorted(parallel) == sorted(names)
    for name in names:
        a, b = sequential[name], parallel[name]
        assert a.history == b.history  # bit-identical: same thread count, same operations
        for x, y in zip(a.model.state_dict().values(), b.model.state_dict().values()):
            assert torch.equal(x, y)
        assert b.train_seconds > 0 and b.steps == a.steps


def test_load_experiment_trains_in_parallel_like_sequentially(small_config, tmp_path):
    from revformer.experiment import parallel_workers

    processes = parallel_workers(3, torch.device("cpu"), True)
    if processes == 0:
        pytest.fail("parallel training needs a CPU with at least two cores")
    with _threads_of(processes):
        sequential = load_experiment(small_config, device="cpu", cache_dir=tmp_path / "a", progress=False,
                                     parallel=False)
    parallel = load_experiment(small_config, device="cpu", cache_dir=tmp_path / "b", progress=False, parallel=True)
    for name in GROUP_NAMES:
        assert sequential.run(name).history == parallel.run(name).history
        assert not parallel.run(name).from_cache
        assert torch.equal(sequential.generated(name), parallel.generated(name))


@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_a_failing_worker_reports_its_error(small_config, tmp_path, start):
    from revformer.worker import start_worker

    worker = start_worker(small_config, [("full", "no_such_group")], 50, 1, tmp_path, start)
    code, report = worker.wait()
    assert code != 0 and "no_such_group" in report
    assert worker.wait() == (code, report)  # asked again, the same answer
    worker.kill()  # harmless once it has ended
    assert list(tmp_path.iterdir()) == []


def test_a_worker_that_fails_before_its_steps_stops_the_run(small_config, tmp_path, monkeypatch):
    """The process waiting for another group's update steps hears why they never came."""
    from revformer.experiment import _train_parallel

    monkeypatch.setenv("REVFORMER_WORKER_START", "fork")
    monkeypatch.setattr("revformer.experiment.train_model", _fails_without_evaluation(
        __import__("revformer.experiment", fromlist=["train_model"]).train_model))
    splits, schedule = _splits_and_schedule(small_config)
    groups = [find_group(name) for name in GROUP_NAMES]
    with pytest.raises(RuntimeError, match="(?s)worker processes failed.*one_head.*steps broke"):
        _train_parallel(small_config, groups, splits, schedule, 2, tmp_path, False)
    assert not list(tmp_path.glob("*.steps.pt"))


def _fails_without_evaluation(train_model):
    caller = os.getpid()

    def patched(*args, evaluate=True, **kwargs):
        if not evaluate and os.getpid() != caller:  # in the forked worker only
            raise OSError("steps broke")
        return train_model(*args, evaluate=evaluate, **kwargs)
    return patched


def test_worker_start_refuses_an_unknown_way_or_job(small_config, tmp_path):
    from revformer.worker import start_worker

    with pytest.raises(ValueError, match="fork.*spawn"):
        start_worker(small_config, [("full", "four_heads")], 50, 1, tmp_path, "thread")
    with pytest.raises(ValueError, match="kind"):
        start_worker(small_config, [("evaluate", "four_heads")], 50, 1, tmp_path)
    with pytest.raises(ValueError, match="kind"):
        start_worker(small_config, [], 50, 1, tmp_path)


def test_an_interrupted_caller_leaves_no_worker_behind(small_config, tmp_path):
    from revformer.worker import start_worker

    worker = start_worker(small_config, [("full", "four_heads")], 100, 1, tmp_path, "fork")
    worker.kill()
    with pytest.raises(ChildProcessError):
        os.waitpid(worker.pid, os.WNOHANG)  # killed and reaped: no such child any more


def test_snapshots_evaluated_later_give_the_same_history(small_config):
    from revformer.data import split_inputs_labels
    from revformer.model import make_model
    from revformer.train import evaluate_snapshots, train_model

    splits, schedule = _splits_and_schedule(small_config)
    tx, ty = split_inputs_labels(splits.train)
    vx, vy = split_inputs_labels(splits.val)
    direct = train_model(make_model(), tx, ty, vx, vy, schedule, small_config.train, progress=False)
    steps_only = train_model(make_model(), tx, ty, vx, vy, schedule, small_config.train, progress=False,
                             evaluate=False)
    assert steps_only.history == direct.history[:1]  # step 0 is evaluated before the updates
    assert [s for s, _ in steps_only.snapshots] == [25, 50, 75, 100]
    later = make_model()
    assert evaluate_snapshots(later, steps_only.snapshots, tx, ty, vx, vy) == direct.history[1:]
    for x, y in zip(later.state_dict().values(), direct.model.state_dict().values()):
        assert torch.equal(x, y)  # the model ends holding the last snapshot: the trained weights


class _FinishedWorker:
    """Stands in for a worker that has already ended, with ``code`` and ``report``."""

    name = "no_mask"

    def __init__(self, code=0, report=""):
        self.result = (code, report)

    def poll(self):
        return self.result[0]

    def wait(self):
        return self.result


def test_the_worker_takes_the_evaluations_left_from_the_last_down(small_config, tmp_path):
    from revformer.experiment import _claim_path, cache_key, evaluate_shared, train_into_cache

    one_head = find_group("one_head")
    key = cache_key(small_config, one_head, 100, torch.device("cpu"))
    _claim_path(tmp_path, one_head, key, 1).touch()  # the caller has reached snapshot 1
    train_into_cache(small_config, "one_head", 100, tmp_path, evaluate=False)
    assert evaluate_shared(small_config, "one_head", 100, tmp_path) == 2  # snapshots 3 and 2
    rows = {p.name.split(".")[-2]: json.loads(p.read_text())["row"] for p in tmp_path.glob("*.row-*.json")}
    assert sorted(rows) == ["row-2", "row-3"] and [rows["row-2"][0], rows["row-3"][0]] == [75, 100]
    assert evaluate_shared(small_config, "one_head", 100, tmp_path) == 0  # nothing left to take
    _claim_path(tmp_path, find_group("no_mask"), cache_key(small_config, find_group("no_mask"), 100,
                                                           torch.device("cpu")), 3).touch()
    assert evaluate_shared(small_config, "no_mask", 100, tmp_path) == 0  # lost at once: no steps read


def test_a_worker_draws_the_splits_once_for_all_its_jobs(small_config, tmp_path, monkeypatch):
    import revformer.data
    import revformer.experiment
    from revformer.worker import run_jobs

    draws = []
    original = revformer.data.make_splits

    def counted(*args, **kwargs):
        draws.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(revformer.data, "make_splits", counted)
    monkeypatch.setattr(revformer.experiment, "make_splits", counted)
    run_jobs(small_config, [("steps", "one_head"), ("steps", "no_mask"), ("evals", "no_mask"),
                            ("evals", "one_head")], 100, tmp_path, caller=os.getppid())
    assert len(draws) == 1
    assert len(list(tmp_path.glob("*.steps.pt"))) == 2
    assert len(list(tmp_path.glob("*.row-*.json"))) == 8  # four snapshots of each group, none claimed


def test_the_worker_stops_waiting_when_its_caller_has_gone(small_config, tmp_path):
    """A caller killed outright never writes its update steps: the worker must not wait forever."""
    from revformer.experiment import evaluate_shared

    import threading

    not_our_parent = os.getpid()  # as after the caller died and this process was adopted
    errors = []

    def worker():
        try:
            evaluate_shared(small_config, "four_heads", 100, tmp_path, caller=not_our_parent)
        except RuntimeError as error:
            errors.append(str(error))

    thread = threading.Thread(target=worker, daemon=True)  # a wait that never ends fails, not hangs
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive(), "the worker still waits for a caller that has gone"
    assert len(errors) == 1 and f"calling process {not_our_parent} has ended" in errors[0]
    assert "update steps of four_heads" in errors[0]


def _sequential(config, name):
    """The splits, the schedule and group ``name`` trained alone in this process."""
    from revformer.experiment import _train_group

    splits, schedule = _splits_and_schedule(config)
    return splits, schedule, _train_group(config, find_group(name), splits, schedule, torch.device("cpu"), False)


def test_rows_from_the_worker_complete_this_processs_runs(small_config, tmp_path):
    from revformer.experiment import _claim_path, _row_path, _train_shared, cache_key

    one_head = find_group("one_head")
    key = cache_key(small_config, one_head, 100, torch.device("cpu"))
    splits, schedule, alone = _sequential(small_config, "one_head")
    for index in (2, 3):  # what a worker that took the last two evaluations leaves
        _claim_path(tmp_path, one_head, key, index).touch()
        write_json(_row_path(tmp_path, one_head, key, index), {"row": list(alone.history[index + 1]),
                                                               "seconds": 0.5})
    shared = _train_shared(small_config, [one_head], splits, schedule, tmp_path, _FinishedWorker(), False)
    run = shared["one_head"]
    assert run.history == alone.history  # rows from two processes, bit for bit one run's
    for x, y in zip(run.model.state_dict().values(), alone.model.state_dict().values()):
        assert torch.equal(x, y)
    assert run.train_seconds > 1.0  # the update steps, both evaluations here and the worker's two


def test_an_evaluation_the_worker_took_and_never_wrote_stops_the_run(small_config, tmp_path):
    from revformer.experiment import _claim_path, _train_shared, cache_key

    one_head = find_group("one_head")
    key = cache_key(small_config, one_head, 100, torch.device("cpu"))
    _claim_path(tmp_path, one_head, key, 3).touch()  # taken by a worker that then failed
    splits, schedule = _splits_and_schedule(small_config)
    with pytest.raises(RuntimeError, match="(?s)exit 1.*evaluation at step 100 of one_head.*disk full"):
        _train_shared(small_config, [one_head], splits, schedule, tmp_path,
                      _FinishedWorker(1, "OSError: disk full"), False)


def test_parallel_training_from_a_script_without_a_main_guard(small_config, tmp_path):
    """Workers are subprocesses that never re-import the caller's script."""
    import subprocess
    import sys

    script = tmp_path / "train.py"
    script.write_text(
        "from revformer.config import ExperimentConfig\n"
        "from revformer.experiment import load_experiment\n"
        f"config = ExperimentConfig.from_dict({small_config.to_dict()!r})\n"
        f"exp = load_experiment(config, device='cpu', cache_dir={str(tmp_path / 'cache')!r}, "
        "progress=False, parallel=True)\n"
        "print('groups', sorted(exp.runs), exp.scores().sequence_accuracy >= 0)\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "groups ['four_heads', 'no_mask', 'one_head'] True" in done.stdout
    assert len(list((tmp_path / "cache").glob("*.pt"))) == 3


def test_the_command_reproduces_from_a_warm_cache(reproduction, reproduction_cache, tmp_path):
    """``python -m revformer reproduce``: the program's own entry point, end to end."""
    import subprocess
    import sys

    out = tmp_path / "out"
    buffered = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # as in a pipe
    done = subprocess.run([sys.executable, "-m", "revformer", "reproduce", "--out", str(out), "--cache",
                           str(reproduction_cache), "--device", "cpu"], capture_output=True, text=True,
                          timeout=600, env=buffered)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "(cache)" in done.stdout and "wrote 8 files" in done.stdout  # printed last, still all there
    assert sorted(p.name for p in out.iterdir()) == sorted(ARTIFACTS)
    _, first = reproduction
    assert (out / "ablation.csv").read_text() == (first / "ablation.csv").read_text()
    bad = subprocess.run([sys.executable, "-m", "revformer", "reproduce", "--out", str(out), "--device", "tpu"],
                         capture_output=True, text=True, timeout=600)
    assert bad.returncode == 2 and "tpu" in bad.stderr


def test_config_round_trip_and_refusal(small_config):
    from revformer.config import ExperimentConfig

    assert ExperimentConfig.from_dict(small_config.to_dict()) == small_config
    with pytest.raises(ValueError, match="not an experiment configuration"):
        ExperimentConfig.from_dict({"task": {}, "model": {}})
    record = small_config.to_dict()
    record["train"]["steps"] = 0
    with pytest.raises(ValueError, match="steps"):
        ExperimentConfig.from_dict(record)


def test_atomic_write_leaves_nothing_half_written(tmp_path):
    target = tmp_path / "result.json"
    write_json(target, {"ok": 1})
    with pytest.raises(KeyboardInterrupt):
        with atomic_path(target) as tmp:
            tmp.write_text('{"half')
            raise KeyboardInterrupt
    assert json.loads(target.read_text()) == {"ok": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]


def test_unknown_group_and_device(small_config, tmp_path):
    with pytest.raises(ValueError, match="unknown group"):
        load_experiment(small_config, device="cpu", cache_dir=tmp_path, groups=["two_heads"])
    with pytest.raises(ValueError, match="device"):
        load_experiment(small_config, device="tpu", cache_dir=tmp_path)


def test_cli_reports_bad_device(capsys):
    with pytest.raises(SystemExit):
        cli.main(["reproduce", "--out", "x", "--device", "tpu"])
    assert "invalid choice" in capsys.readouterr().err


def test_the_command_keeps_freed_memory_for_reuse():
    """After ``keep_freed_memory`` a freed tensor's block stays in the heap for the next one.

    By default glibc maps a block this large from the system on its own and
    gives it back when freed; the command's settings keep it. Each case runs
    in a fresh interpreter, so that no earlier allocation has moved glibc's
    own threshold.
    """
    import subprocess
    import sys

    script = (
        "import ctypes, sys, torch\n"
        "from revformer.cli import keep_freed_memory\n"
        "class Info(ctypes.Structure):\n"
        "    _fields_ = [(n, ctypes.c_size_t) for n in ('arena', 'ordblks', 'smblks', 'hblks', "
        "'hblkhd', 'usmblks', 'fsmblks', 'uordblks', 'fordblks', 'keepcost')]\n"
        "libc = ctypes.CDLL(None)\n"
        "libc.mallinfo2.restype = Info\n"
        "applied = keep_freed_memory() if sys.argv[1] == 'on' else None\n"
        "block = torch.empty(6 * 2**20).fill_(1.0)  # 24 MiB, every page touched\n"
        "del block\n"
        "print(applied, libc.mallinfo2().fordblks // 2**20)\n")  # MiB free inside the process
    kept = {}
    for case in ("off", "on"):
        done = subprocess.run([sys.executable, "-c", script, case], capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        applied, free_mib = done.stdout.split()
        kept[case] = (applied, int(free_mib))
    assert kept["off"][0] == "None" and kept["off"][1] < 24  # handed back to the system
    assert kept["on"] == ("True", kept["on"][1]) and kept["on"][1] >= 24  # kept for the next tensor
