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

from book_facts import ROOT


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


@pytest.mark.slow  # several groups in worker processes
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


@pytest.mark.slow  # several groups in worker processes
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


@pytest.mark.slow  # several groups in worker processes
def test_slow_machine_lowers_every_group_alike(small_config, tmp_path):
    import dataclasses

    config = dataclasses.replace(small_config, train=dataclasses.replace(small_config.train, time_limit_seconds=1e-9))
    exp = load_experiment(config, device="cpu", cache_dir=tmp_path, progress=False)
    assert exp.budget.lowered and exp.budget.steps == config.train.eval_every
    assert all(run.steps == config.train.eval_every for run in exp.runs.values())
    record = exp.config_record()["budget"]
    assert record["lowered"] and "lowered" in record["reason"]


@contextlib.contextmanager
def _one_thread():
    """This process at a worker's thread count on this machine's two cores."""
    before = torch.get_num_threads()
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // len(GROUP_NAMES)))
    try:
        yield
    finally:
        torch.set_num_threads(before)


@pytest.mark.slow  # several groups in worker processes
def test_workers_train_what_this_process_trains(small_config, tmp_path):
    """Three worker processes give the runs of one group after another here, bit for bit."""
    from revformer.worker import use_workers

    if not use_workers(torch.device("cpu"), 3, True):
        pytest.fail("training in workers needs a CPU with at least two cores")
    with _one_thread():
        here = load_experiment(small_config, device="cpu", cache_dir=tmp_path / "a", progress=False,
                               parallel=False)
    workers = load_experiment(small_config, device="cpu", cache_dir=tmp_path / "b", progress=False,
                              parallel=True)
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == sorted(p.name for p in (tmp_path / "a").iterdir())
    for name in GROUP_NAMES:
        a, b = here.run(name), workers.run(name)
        assert a.history == b.history and a.batch_losses == b.batch_losses and not b.from_cache
        for x, y in zip(a.model.state_dict().values(), b.model.state_dict().values()):
            assert torch.equal(x, y)
        assert torch.equal(here.generated(name), workers.generated(name))


@pytest.mark.slow  # several groups in worker processes
def test_a_failing_worker_reports_its_error(small_config, tmp_path):
    from revformer.config import Group
    from revformer.worker import train_in_workers

    seed = small_config.train.seed
    with pytest.raises(RuntimeError, match=rf"(?s)worker processes failed.*no_such_group \(seed {seed}\): exit 1.*unknown group"):
        train_in_workers([(small_config, find_group("one_head")), (small_config, Group("no_such_group", 4, True))],
                         25, tmp_path, at_once=1)
    assert [p.name for p in tmp_path.iterdir()] == [next(tmp_path.glob("one_head-*.pt")).name]


def test_a_worker_refuses_a_caller_whose_package_code_differs(small_config, tmp_path):
    """The caller names its cache key; a worker whose files give another key trains nothing."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "revformer.worker", "--config", json.dumps(small_config.to_dict()),
                           "--group", "one_head", "--steps", "25", "--cache", str(tmp_path), "--key", "0" * 64],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 3 and "package's code differs" in done.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow  # trains the three groups here, one after another
def test_on_a_gpu_the_groups_train_here_one_after_another(small_config, tmp_path, monkeypatch):
    """A CUDA device (faked here: CI has none) never starts workers."""
    import revformer.experiment as experiment
    from revformer.train import Budget
    from revformer.worker import train_group, use_workers

    assert use_workers(torch.device("cpu"), 3, True) and not use_workers(torch.device("cuda"), 3, True)
    assert not use_workers(torch.device("cpu"), 1, True) and not use_workers(torch.device("cpu"), 3, False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    trained = []

    def train_here(config, group, splits, schedule, device, progress, **labels):
        trained.append((group.name, device.type))
        return train_group(config, group, splits, schedule, torch.device("cpu"), progress, **labels)

    def no_workers(*args, **kwargs):
        raise AssertionError("workers were started for a GPU")

    monkeypatch.setattr(experiment, "train_group", train_here)
    monkeypatch.setattr(experiment, "train_in_workers", no_workers)
    monkeypatch.setattr(experiment, "speed_test", lambda *a, **k: Budget(100, 100, 0.01, 18.0, 1800.0, 3, "fake"))
    exp = load_experiment(small_config, device="auto", cache_dir=tmp_path, progress=False)
    assert exp.device.type == "cuda"
    assert trained == [(name, "cuda") for name in GROUP_NAMES]


def _run_script(tmp_path, name: str, body: str):
    """Start ``body`` (after the small configuration's import) as a script in its own process."""
    import subprocess
    import sys

    script = tmp_path / name
    script.write_text("from revformer.config import DataConfig, ExperimentConfig, TrainConfig\n"
                      "from revformer.experiment import load_experiment\n"
                      "from revformer.artifacts import write_artifacts\n" + body)
    return subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


@pytest.mark.slow  # several groups in worker processes
def test_two_runs_at_once_on_one_cache_both_succeed(small_config, tmp_path):
    """Each trains what it finds missing and writes whole files: neither waits for the other."""
    body = (f"config = ExperimentConfig.from_dict({small_config.to_dict()!r})\n"
            f"exp = load_experiment(config, device='cpu', cache_dir={str(tmp_path / 'cache')!r}, "
            "progress=False, always_speed_test=True)\n"
            "import sys; write_artifacts(exp, sys.argv[0] + '.out')\n")
    runs = [_run_script(tmp_path, f"run{i}.py", body) for i in range(2)]
    for run in runs:
        _, err = run.communicate(timeout=600)
        assert run.returncode == 0, err[-2000:]
    first, second = (tmp_path / "run0.py.out"), (tmp_path / "run1.py.out")
    for name in ARTIFACTS:
        if name == "config.json":  # the speed test's timing differs; the settings do not
            a, b = (json.loads((d / name).read_text()) for d in (first, second))
            assert {k: v for k, v in a.items() if k != "budget"} == {k: v for k, v in b.items() if k != "budget"}
        elif name == "ablation.csv":
            drop = lambda rows: [{k: v for k, v in r.items() if k != "train_seconds"} for r in rows]  # noqa: E731
            assert drop(_read(first, name)) == drop(_read(second, name))
        else:
            assert (first / name).read_bytes() == (second / name).read_bytes(), name
    assert sorted(p.suffix for p in (tmp_path / "cache").iterdir()) == [".pt"] * 3


def _children_of(pid: int) -> list[int]:
    children = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2:].split()[1]) == pid:
                children.append(int(entry))
    return children


@pytest.mark.slow  # several groups in worker processes
@pytest.mark.parametrize("whom", ["caller", "group"])  # Jupyter's interrupt; Ctrl-C in a terminal
def test_an_interrupt_during_training_leaves_no_file_and_no_worker(small_config, tmp_path, whom):
    import signal
    import time

    config = dataclasses_replace_steps(small_config, 2000)
    cache, out = tmp_path / "cache", tmp_path / "out"
    body = (f"config = ExperimentConfig.from_dict({config.to_dict()!r})\n"
            f"exp = load_experiment(config, device='cpu', cache_dir={str(cache)!r}, progress=True)\n"
            f"write_artifacts(exp, {str(out)!r})\n")
    run = _run_script(tmp_path, "interrupted.py", body)  # with the bars drawn, as a reader runs it
    deadline = time.monotonic() + 120
    while len(_children_of(run.pid)) < 3:  # the three workers are training
        assert run.poll() is None and time.monotonic() < deadline, run.stderr.read()[-2000:]
        time.sleep(0.1)
    workers = _children_of(run.pid)
    time.sleep(1.0)
    if whom == "caller":
        run.send_signal(signal.SIGINT)
    else:
        os.killpg(run.pid, signal.SIGINT)
    _, err = run.communicate(timeout=120)
    assert run.returncode != 0 and "KeyboardInterrupt" in err
    assert "Exception in thread" not in err and "four_heads (seed" in err  # the bars were drawn; no reader failed
    assert all(not os.path.exists(f"/proc/{pid}") for pid in workers), "a worker outlived its caller"
    left = [p.name for p in tmp_path.rglob("*") if p.is_file() and p.parent != tmp_path]
    assert left == [], left  # no temporary file, no half-written cache file, no output
    again = load_experiment(small_config, device="cpu", cache_dir=cache, progress=False)
    assert len(again.runs) == 3 and not any(r.from_cache for r in again.runs.values())


def dataclasses_replace_steps(config, steps):
    import dataclasses

    return dataclasses.replace(config, train=dataclasses.replace(config.train, steps=steps))


@pytest.mark.slow  # several groups in worker processes
def test_load_experiment_inside_a_jupyter_kernel(small_config, tmp_path):
    """A Colab CPU runtime calls load_experiment from a kernel: the workers start from there."""
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3", cwd=str(tmp_path))
    try:
        code = ("from revformer.config import ExperimentConfig\n"
                "from revformer.experiment import load_experiment\n"
                f"config = ExperimentConfig.from_dict({small_config.to_dict()!r})\n"
                f"exp = load_experiment(config, device='cpu', cache_dir={str(tmp_path / 'cache')!r}, "
                "progress=True, parallel=True)\n"
                "print('trained', sorted(exp.runs), [r.from_cache for r in exp.runs.values()])\n")
        reply = client.execute_interactive(code, timeout=600, output_hook=_collect(out := [], widgets := []))
        assert reply["content"]["status"] == "ok", reply["content"]
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    assert "trained ['four_heads', 'no_mask', 'one_head'] [False, False, False]" in "".join(out)
    assert "training 3 groups (four_heads, one_head, no_mask), about" in "".join(out)
    # the bars are widgets in a notebook: the runs done, and one per group, each shown once
    assert len(widgets) == 4 and len(set(widgets)) == 4, widgets
    assert len(list((tmp_path / "cache").glob("*.pt"))) == 3


@pytest.mark.slow  # several groups in worker processes
def test_a_kernel_interrupt_while_the_bars_show_stops_every_worker(small_config, tmp_path):
    """Jupyter's interrupt button, with the bars drawn as widgets: no worker left, no file written."""
    import time

    from jupyter_client.manager import start_new_kernel

    config = dataclasses_replace_steps(small_config, 2000)
    cache = tmp_path / "cache"
    manager, client = start_new_kernel(kernel_name="python3", cwd=str(tmp_path))
    try:
        code = ("from revformer.config import ExperimentConfig\n"
                "from revformer.experiment import load_experiment\n"
                f"config = ExperimentConfig.from_dict({config.to_dict()!r})\n"
                f"exp = load_experiment(config, device='cpu', cache_dir={str(cache)!r}, progress=True, parallel=True)\n")
        request = client.execute(code)
        kernel, deadline = manager.provisioner.pid, time.monotonic() + 120
        while len(_children_of(kernel)) < 3:  # the three workers are training
            assert time.monotonic() < deadline, "the workers did not start"
            time.sleep(0.1)
        workers = _children_of(kernel)
        time.sleep(1.0)
        manager.interrupt_kernel()
        reply = client.get_shell_msg(timeout=120)
        while reply["parent_header"].get("msg_id") != request:
            reply = client.get_shell_msg(timeout=120)
        widgets = []
        hook = _collect([], widgets)
        while True:  # what the cell displayed before it stopped
            message = client.get_iopub_msg(timeout=30)
            hook(message)
            if (message["msg_type"] == "status" and message["content"]["execution_state"] == "idle"
                    and message["parent_header"].get("msg_id") == request):
                break
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "KeyboardInterrupt"
    assert len(set(widgets)) == 4  # the runs done and one bar per group were showing
    assert all(not os.path.exists(f"/proc/{pid}") for pid in workers), "a worker outlived the interrupt"
    assert [p.name for p in cache.rglob("*") if p.is_file()] == []  # no temporary file, no cache file


def _collect(lines, widgets=None):
    def hook(message):
        if message["msg_type"] == "stream":
            lines.append(message["content"]["text"])
        elif message["msg_type"] == "display_data" and widgets is not None:
            view = message["content"]["data"].get("application/vnd.jupyter.widget-view+json")
            if view:
                widgets.append(view["model_id"])
    return hook


def test_every_module_that_trains_a_group_is_in_the_training_fingerprint():
    """What a worker imports to train is what decides the weights: all of it is fingerprinted."""
    import subprocess
    import sys

    from revformer.fingerprint import TRAINING_MODULES

    code = ("import sys, revformer.worker\n"
            "print(' '.join(sorted(m for m in sys.modules if m == 'revformer' or m.startswith('revformer.'))))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    loaded += ["revformer.generate"]  # imported when training records the learning curve
    files = {"__init__.py" if m == "revformer" else m.split(".", 1)[1].replace(".", "/") + ".py" for m in loaded}
    assert files <= set(TRAINING_MODULES), f"trained by modules the cache key ignores: {files - set(TRAINING_MODULES)}"


def test_the_cache_key_changes_with_the_package_code(small_config, tmp_path, monkeypatch):
    import revformer.cache
    import revformer.fingerprint as fingerprint
    from revformer.cache import cache_key

    group = find_group("four_heads")
    key = cache_key(small_config, group, 100, "cpu")
    copy = tmp_path / "revformer"
    shutil.copytree(fingerprint.PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(fingerprint, "PACKAGE", copy)
    assert fingerprint.training_fingerprint() == revformer.cache.training_fingerprint() != ""
    assert cache_key(small_config, group, 100, "cpu") == key  # the same files: the same key
    questions = copy / "questions" / "08.json"
    questions.write_text(questions.read_text().replace("2.5", "2.50", 1))
    assert cache_key(small_config, group, 100, "cpu") == key  # a question is no part of training
    before = fingerprint.source_fingerprint()
    model = copy / "model.py"
    model.write_text(model.read_text().replace('"""', '"""A docstring\'s new first words. ', 1)
                     + "\n\n# a comment, and two more blank lines\n")
    assert cache_key(small_config, group, 100, "cpu") == key  # comments, docs: the same program, the same key
    assert fingerprint.source_fingerprint() != before  # but the listings the chapters show change
    before = fingerprint.source_fingerprint()
    model.write_text(model.read_text().replace("x = x + self.dropout", "x = x - self.dropout", 1))
    assert cache_key(small_config, group, 100, "cpu") != key  # one changed line: another key
    assert fingerprint.source_fingerprint() != before  # and the book's chapters run again
    build = (ROOT / "tools" / "book.py").read_text()  # make book runs tools/book.py build
    assert '"-m", "revformer.fingerprint"' in build  # the chapters re-execute on the package's fingerprint


@pytest.mark.slow  # several groups in worker processes
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


def test_each_job_trains_on_its_own_data_and_batch_seed(small_config, tmp_path, monkeypatch):
    """The controls of chapters 16-17 vary DataConfig.seed and batch_seed: each job draws its own."""
    import dataclasses

    import revformer.experiment as experiment
    from revformer.data import make_splits
    from revformer.experiment import load_or_train
    from revformer.train import Budget, batch_schedule

    seen = {}

    def record(config, group, splits, schedule, device, progress, **labels):
        seen[(config.data.seed, config.train.batch_seed)] = (splits.train.clone(), schedule.clone())
        raise StopIteration  # nothing needs training for this test

    other_data = dataclasses.replace(small_config, data=dataclasses.replace(small_config.data, seed=7))
    other_batches = dataclasses.replace(small_config, train=dataclasses.replace(small_config.train, batch_seed=8))
    monkeypatch.setattr(experiment, "speed_test", lambda *a, **k: Budget(100, 100, 0.01, 1.0, 1800.0, 3, "fake"))
    monkeypatch.setattr(experiment, "train_group", record)
    splits = make_splits(small_config.data, small_config.task)
    for config in (small_config, other_data, other_batches):
        with pytest.raises(StopIteration):
            load_or_train(small_config, [(config, find_group("one_head"))], splits, torch.device("cpu"), tmp_path,
                          progress=False, parallel=False)
    for config in (small_config, other_data, other_batches):
        train, schedule = seen[(config.data.seed, config.train.batch_seed)]
        assert torch.equal(train, make_splits(config.data, config.task).train)
        assert torch.equal(schedule, batch_schedule(train.size(0), config.train))
    assert not torch.equal(seen[(7, 1234)][0], seen[(2024, 1234)][0])
    assert not torch.equal(seen[(2024, 8)][1], seen[(2024, 1234)][1])
