"""The book's trained runs, served with its site: a fresh runtime loads them instead of training.

``make book`` copies every run the chapters load into the site's downloads
(``downloads/runs/``) with a manifest. An entry is keyed by the run's *served
key*, a hash of what decides which run belongs to which call (the package's
training fingerprint, the configuration, the group, the steps), and holds the
file, its size and SHA-256, the full cache key stored in the file, and the
PyTorch version, device and thread count that trained it. The wheel of the
same build carries the manifest (``served_runs.manifest`` beside this module),
so a reader's package knows exactly which files are the book's.

When a run is not in the local cache, ``fetch_run`` downloads it from the site
into a temporary file, checks its size and SHA-256 against the manifest, and
only then renames it into the cache (``<cache>/served/``) and loads it with
``weights_only=True``. A download that fails, is truncated or does not match is
deleted, never loaded; one line says why, and the caller trains instead. The
page's runs are accepted in another PyTorch version or on a GPU: the served key
leaves the version and the device out, while the configuration and the
fingerprint still decide.

``REVFORMER_TRAIN=1`` (or ``train=True`` on a loader) skips all this and trains;
``REVFORMER_SITE`` names another copy of the site (a local server in the tests).
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import sys
import urllib.error
import urllib.request
from pathlib import Path

import torch

from .cache import Run, load_run
from .config import ExperimentConfig, Group
from .files import atomic_path, write_json
from .fingerprint import training_fingerprint

MANIFEST = Path(__file__).resolve().parent / "served_runs.manifest"
SITE_ENV = "REVFORMER_SITE"
TRAIN_ENV = "REVFORMER_TRAIN"
LOG_ENV = "REVFORMER_SERVED_LOG"  # the build's record of the runs the chapters load
RUNS_FOLDER = "downloads/runs"


def served_key(config: ExperimentConfig, group: Group, steps: int, extra: str = "") -> str:
    """What decides which run belongs to a call, without the PyTorch version or the device."""
    identity = {"package": training_fingerprint(), "config": config.to_dict(),
                "group": [group.name, group.num_heads, group.causal], "steps": steps,
                "extra": extra}
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


def wants_training(train: bool | None = None) -> bool:
    """``train`` if given, else ``$REVFORMER_TRAIN`` (1, true or yes: train every run here)."""
    if train is not None:
        return bool(train)
    return os.environ.get(TRAIN_ENV, "").strip().lower() in ("1", "true", "yes")


def manifest() -> dict | None:
    """The manifest this package was built with, or None (a package installed from a clone)."""
    try:
        return json.loads(MANIFEST.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def site(entries: dict | None = None) -> str | None:
    """Where the runs are served: ``$REVFORMER_SITE``, else the site the manifest names."""
    named = os.environ.get(SITE_ENV) or (entries or {}).get("site")
    return None if not named else named if named.endswith("/") else named + "/"


def _say(line: str, problem: bool = False) -> None:
    print(f"revformer: {line}", file=sys.stderr if problem else sys.stdout, flush=True)


def _download(url: str, size: int, sha256: str, target: Path) -> None:
    """``url`` into ``target``, whole and matching, or not at all (ValueError or OSError)."""
    with urllib.request.urlopen(url, timeout=30) as response:
        data = response.read(size + 1)  # one byte more than the manifest says reveals a longer file
    if len(data) != size:
        raise ValueError(f"{len(data):,} bytes instead of {size:,}")
    if hashlib.sha256(data).hexdigest() != sha256:
        raise ValueError("its SHA-256 does not match the manifest")
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(target) as tmp:
        tmp.write_bytes(data)


def _matches(path: Path, size: int, sha256: str) -> bool:
    return (path.exists() and path.stat().st_size == size
            and hashlib.sha256(path.read_bytes()).hexdigest() == sha256)


def fetch_run(config: ExperimentConfig, group: Group, steps: int, device, cache_dir,
              extra: str = "") -> Run | None:
    """The book's run for this call, from ``<cache>/served/`` or the site; None to train instead."""
    entries = manifest()
    entry = (entries or {}).get("runs", {}).get(served_key(config, group, steps, extra))
    if entry is None:
        return None
    path = Path(cache_dir) / "served" / entry["file"]
    origin = "from the cache"
    if not _matches(path, entry["size"], entry["sha256"]):
        where = site(entries)
        if where is None:
            return None
        url = f"{where}{RUNS_FOLDER}/{entry['file']}"
        try:
            _download(url, entry["size"], entry["sha256"], path)
        except (OSError, ValueError) as error:  # URLError and HTTPError are OSErrors
            reason = (f"HTTP {error.code} {error.reason}" if isinstance(error, urllib.error.HTTPError)
                      else str(getattr(error, "reason", None) or error))
            _say(f"{group.name}: the book's run was not loaded from {url} "
                 f"({reason.splitlines()[0][:120]}); training it here instead", problem=True)
            return None
        origin = f"{entry['size'] / 1e6:.1f} MB from the site"
    run = load_run(path, entry["key"], config, group, device)
    if run is None:  # load_run said why; a file that does not load is not kept
        path.unlink(missing_ok=True)
        return None
    _say(f"{group.name}: the book's trained run (PyTorch {entry['torch']}, "
         f"{entry['device'].upper()}), {origin}")
    return run


def record_load(config: ExperimentConfig, group: Group, steps: int, key: str, path: Path,
                device, extra: str = "") -> None:
    """Add one line to the build's record of loaded runs (``$REVFORMER_SERVED_LOG``), if it keeps one."""
    log = os.environ.get(LOG_ENV)
    if not log:
        return
    line = {"served_key": served_key(config, group, steps, extra), "key": key,
            "path": str(Path(path).resolve()), "group": group.name,
            "torch": torch.__version__, "device": torch.device(device).type}
    with open(log, "a", encoding="utf-8") as out:
        out.write(json.dumps(line, sort_keys=True) + "\n")


def write_served(log: Path, out_dir: Path, site_url: str, manifest_path: Path | None = None) -> dict:
    """The build's step: every run in ``log`` whose file still holds its key, copied into
    ``out_dir`` (the site's ``downloads/runs``) with ``manifest.json``; the same manifest
    also to ``manifest_path`` (the copy of the package that the wheel is built from)."""
    runs, sources = {}, {}
    lines = Path(log).read_text(encoding="utf-8").splitlines() if Path(log).exists() else []
    for line in map(json.loads, lines):
        source = Path(line["path"])
        if line["served_key"] in runs or not source.exists():
            continue
        data = source.read_bytes()
        payload = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
        if payload.get("key") != line["key"]:  # trained again since: not this build's file
            continue
        runs[line["served_key"]] = {
            "file": f"{line['group']}-{line['served_key'][:20]}.pt", "key": line["key"],
            "size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
            "torch": line["torch"], "device": line["device"],
            "threads": int(payload.get("threads", 1))}
        sources[line["served_key"]] = source
    out_dir = Path(out_dir)
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    for served, entry in runs.items():
        shutil.copyfile(sources[served], out_dir / entry["file"])
    record = {"site": site_url, "fingerprint": training_fingerprint(),
              "runs": dict(sorted(runs.items()))}
    write_json(out_dir / "manifest.json", record)
    if manifest_path is not None:
        write_json(manifest_path, record)
    return record


__all__ = ["fetch_run", "manifest", "record_load", "served_key", "wants_training",
           "write_served"]
