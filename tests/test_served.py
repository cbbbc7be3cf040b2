"""The book's trained runs, served with the site (issue 31): a fresh runtime loads them instead of training.

A small run is trained into a "build" cache while the build's record is kept, written out as the site's
``downloads/runs`` with its manifest, and served from a local server. A fresh cache then loads it from
there, checked; every way the download can go wrong leaves nothing loaded, nothing half-written and one
line saying why, and the loader trains instead.
"""
import contextlib
import functools
import hashlib
import http.server
import json
import socket
import threading

import pytest
import torch

from revformer import served
from revformer.config import group as find_group
from revformer.experiment import load_experiment
from revformer.fingerprint import training_fingerprint


@contextlib.contextmanager
def serving(directory):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             functools.partial(Quiet, directory=str(directory)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A build's cache, its record of loads, and the site's downloads/runs written from them."""
    from revformer.config import DataConfig, ExperimentConfig, TrainConfig

    config = ExperimentConfig(train=TrainConfig(steps=100, eval_every=25),
                              data=DataConfig(train_size=1024, val_size=256, test_size=64))
    root = tmp_path_factory.mktemp("build")
    log = root / "loads.jsonl"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(served.LOG_ENV, str(log))
        experiment = load_experiment(config, device="cpu", cache_dir=root / "cache",
                                     groups=["four_heads"], progress=False, parallel=False)
    site = root / "site"
    record = served.write_served(log, site / served.RUNS_FOLDER, "https://example.invalid/book/",
                                 root / "served_runs.manifest")
    return config, experiment, site, record, root / "served_runs.manifest"


@pytest.fixture
def package_manifest(built, monkeypatch):
    """This test's package, built with the manifest (as the wheel is)."""
    monkeypatch.setattr(served, "MANIFEST", built[4])
    monkeypatch.delenv(served.TRAIN_ENV, raising=False)
    return built[3]


def test_the_build_writes_each_loaded_run_once_with_its_size_and_hash(built):
    _, _, site, record, manifest_copy = built
    (entry,) = record["runs"].values()
    data = (site / served.RUNS_FOLDER / entry["file"]).read_bytes()
    assert entry["size"] == len(data) and entry["sha256"] == hashlib.sha256(data).hexdigest()
    assert entry["torch"] == torch.__version__ and entry["device"] == "cpu" and entry["threads"] >= 1
    assert json.loads(manifest_copy.read_text()) == record  # the wheel's copy is the site's
    assert json.loads((site / served.RUNS_FOLDER / "manifest.json").read_text()) == record


def test_a_fresh_cache_loads_the_served_run_instead_of_training(built, package_manifest, tmp_path,
                                                                 monkeypatch, capsys):
    config, experiment, site, _, _ = built
    with serving(site) as url:
        monkeypatch.setenv(served.SITE_ENV, url)
        fresh = load_experiment(config, device="cpu", cache_dir=tmp_path, groups=["four_heads"],
                                progress=False, parallel=False)
    out = capsys.readouterr().out
    assert "four_heads: the book's trained run (PyTorch" in out and "MB from the site" in out
    assert fresh.budget.reason.startswith("every group loaded")  # no speed test, no training
    for a, b in zip(fresh.model("four_heads").state_dict().values(),
                    experiment.model("four_heads").state_dict().values()):
        assert torch.equal(a, b)
    # a second call finds it in the cache's served folder: no download
    with serving(tmp_path / "nothing-here") as url:
        monkeypatch.setenv(served.SITE_ENV, url)
        again = load_experiment(config, device="cpu", cache_dir=tmp_path, groups=["four_heads"],
                                progress=False, parallel=False)
    assert "from the cache" in capsys.readouterr().out
    assert again.runs["four_heads"].history == experiment.runs["four_heads"].history


def test_train_true_trains_instead(built, package_manifest, tmp_path, monkeypatch, capsys):
    config, _, site, _, _ = built
    with serving(site) as url:
        monkeypatch.setenv(served.SITE_ENV, url)
        load_experiment(config, device="cpu", cache_dir=tmp_path, groups=["four_heads"],
                        progress=False, parallel=False, train=True)
    assert "the book's trained run" not in capsys.readouterr().out
    assert not (tmp_path / "served").exists()
    monkeypatch.setenv(served.TRAIN_ENV, "1")
    assert served.wants_training() and not served.wants_training(False)


def _broken_site(site, tmp_path, how):
    """A copy of the site whose run file is damaged in one way."""
    copy = tmp_path / "site"
    runs = copy / served.RUNS_FOLDER
    runs.mkdir(parents=True)
    (name,) = [p.name for p in (site / served.RUNS_FOLDER).glob("*.pt")]
    data = (site / served.RUNS_FOLDER / name).read_bytes()
    if how == "wrong hash":
        data = data[:-1] + bytes([data[-1] ^ 1])
    elif how == "truncated":
        data = data[: len(data) // 2]
    elif how == "longer":
        data = data + b"\0"
    if how != "missing":
        (runs / name).write_bytes(data)
    return copy


def _unreachable():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/"


@pytest.mark.parametrize("how, reason", [
    ("wrong hash", "SHA-256 does not match"),
    ("truncated", "bytes instead of"),
    ("longer", "bytes instead of"),
    ("missing", "HTTP 404"),
    ("unreachable", "refused"),
])
def test_a_bad_download_is_never_loaded_nor_kept_and_says_why(built, package_manifest, tmp_path,
                                                              monkeypatch, capsys, how, reason):
    config, _, site, record, _ = built
    (entry,) = record["runs"].values()
    group = find_group("four_heads")
    cache = tmp_path / "cache"
    if how == "unreachable":
        monkeypatch.setenv(served.SITE_ENV, _unreachable())
        run = served.fetch_run(config, group, config.train.steps, "cpu", cache)
    else:
        with serving(_broken_site(site, tmp_path, how)) as url:
            monkeypatch.setenv(served.SITE_ENV, url)
            run = served.fetch_run(config, group, config.train.steps, "cpu", cache)
    assert run is None
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and reason in lines[0] and "training it here instead" in lines[0], lines
    left = list(cache.rglob("*")) if cache.exists() else []
    assert not [p for p in left if p.is_file()], left  # nothing half-written, no temporary file


def test_a_call_the_manifest_does_not_hold_fetches_nothing(built, package_manifest, tmp_path, monkeypatch,
                                                           capsys):
    config, _, _, _, _ = built
    from revformer.config import group
    from revformer.sweep import seed_config

    monkeypatch.setenv(served.SITE_ENV, _unreachable())  # a fetch would say so
    other_seed = seed_config(config, config.train.seed + 1)
    assert served.fetch_run(other_seed, group("four_heads"), 100, "cpu", tmp_path) is None
    assert served.fetch_run(config, group("one_head"), 100, "cpu", tmp_path) is None
    assert capsys.readouterr().err == ""


def test_a_package_without_a_manifest_never_fetches(tmp_path, monkeypatch, small_config, capsys):
    monkeypatch.setattr(served, "MANIFEST", tmp_path / "absent.manifest")
    from revformer.config import group

    assert served.manifest() is None
    assert served.fetch_run(small_config, group("four_heads"), 100, "cpu", tmp_path) is None
    assert capsys.readouterr().err == ""


@pytest.mark.book
def test_the_built_site_serves_every_run_its_wheel_names():
    """make book: downloads/runs holds each run of the manifest, whole, and the wheel carries that manifest."""
    import zipfile

    from book_facts import ROOT

    downloads = ROOT / "_build" / "html" / "downloads"
    record = json.loads((downloads / "runs" / "manifest.json").read_text())
    assert record["fingerprint"] == training_fingerprint()
    groups = {entry["file"].rsplit("-", 1)[0] for entry in record["runs"].values()}
    assert {"four_heads", "one_head", "no_mask", "mixed_lengths"} <= groups and len(record["runs"]) >= 40
    for entry in record["runs"].values():
        data = (downloads / "runs" / entry["file"]).read_bytes()
        assert len(data) == entry["size"] and hashlib.sha256(data).hexdigest() == entry["sha256"], entry["file"]
    (wheel,) = downloads.glob("revformer-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        assert json.loads(archive.read("revformer/served_runs.manifest")) == record
