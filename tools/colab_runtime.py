"""A fresh Colab-like runtime on this machine: the chapters as a reader in Colab runs them.

    python tools/colab_runtime.py bench [--chapters 10 16 | all] [--train] [--out _build/colab-waits.json]

``Runtime`` is a virtual environment made from ``requirements/colab.txt``
(what Colab ships that the chapters use, its ipywidgets 7.7.1 included, but
not revformer) with a stand-in ``google.colab`` module that its kernel imports
at start, from IPython's startup folder, as Colab's kernel does. ``serve``
serves the built site (``_build/html``) on a local address; ``downloaded``
fetches a chapter's notebook from it, as the download button does, and points
its setup cell at that address (what ``make retarget SITE=...`` does to the
published one). ``Runtime.run`` executes a notebook there with nbclient, as
"Run all" does: in a fresh state (revformer not installed, an empty cache of
models), cell by cell, recording when each cell started and ended and every
widget message the kernel sent.

The end-to-end test (``tests/test_colab_runtime.py``) uses it, and so does
``make bench`` for the waits in the README: from "Run all" to the first
figure and to the end of a chapter.
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import http.server
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "_build" / "html"
REQUIREMENTS = ROOT / "requirements" / "colab.txt"
# Variables of this build that a reader's runtime does not have: the kernel starts without them.
NOT_IN_COLAB = ("REVFORMER_", "PYTHONPATH", "MPLBACKEND", "OMP_NUM_THREADS", "VIRTUAL_ENV", "JUPYTER_", "IPYTHONDIR")


def published_site() -> str:
    """The site ``_config.yml`` names, as ``tools/book.py`` reads it (the one place that parses it)."""
    spec = importlib.util.spec_from_file_location("book_tool", ROOT / "tools" / "book.py")
    book = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(book)
    return book.named()[1]


@contextlib.contextmanager
def serve(directory: Path = SITE, requested: list | None = None):
    """The built site on ``http://127.0.0.1:PORT/`` while the block runs; each path asked for goes to ``requested``."""
    if not (directory / "index.html").exists():
        raise SystemExit(f"no built site in {directory}: run make book first")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            if requested is not None:
                requested.append(self.path)
            super().do_GET()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(directory)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def unreachable_site() -> str:
    """An address where nothing listens: the site, down."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/"


def downloaded(site: str, name: str, served_as: str | None = None, edition: str = "en") -> dict:
    """Chapter ``name`` (``10_heatmaps``) from the site's downloads, its setup cell pointed at ``served_as``.

    ``edition="zh_CN"``: the Chinese notebook, from the Chinese site's downloads.
    """
    folder = "" if edition == "en" else f"{edition}/"
    with urllib.request.urlopen(f"{site}{folder}downloads/notebooks/{name}.ipynb", timeout=30) as response:
        text = response.read().decode("utf-8")
    return json.loads(text.replace(published_site(), served_as or site))


@dataclass
class Execution:
    """A notebook run: the executed notebook, the clock of each cell, the kernel's widget messages."""

    notebook: object
    started: float  # time.time() when "Run all" was pressed (the kernel starting)
    cells: list = field(default_factory=list)  # (index, start, end) in time.time() seconds, code cells
    widget_messages: list = field(default_factory=list)  # (cell index, msg_type, comm_id, data)
    error: str | None = None

    def first_figure_seconds(self) -> float | None:
        for index, _, end in self.cells:
            if any("image/png" in o.get("data", {}) for o in self.notebook.cells[index].get("outputs", [])):
                return end - self.started
        return None

    def announced_waits(self) -> list[dict]:
        """Each line said before training, beside how long its cell then took: the estimate against the wait."""
        waits = []
        for index, start, end in self.cells:
            text = "".join(o.get("text", "") for o in self.notebook.cells[index].get("outputs", [])
                           if o.get("output_type") == "stream")
            for line in text.splitlines():
                if line.startswith("training ") and " about " in line:
                    waits.append({"cell": index, "said": line.split(":")[0], "cell_seconds": round(end - start, 1)})
        return waits

    def total_seconds(self) -> float:
        return self.cells[-1][2] - self.started if self.cells else 0.0

    def widgets_of(self, index: int) -> dict:
        """The widgets cell ``index`` created: comm id -> {model name, every state it was sent, in order}."""
        found = {}
        for cell, kind, comm, data in self.widget_messages:
            if kind == "comm_open" and cell == index:
                found[comm] = {"model": data.get("state", {}).get("_model_name"), "states": [data.get("state", {})]}
            elif kind == "comm_msg" and comm in found and "state" in data:
                found[comm]["states"].append(data["state"])
        return found


def _stamp(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class Runtime:
    """A Colab-like Python in ``home``: made once, then reset before each notebook."""

    def __init__(self, home: Path):
        self.home = Path(home)
        self.venv = self.home / "venv"
        self.python = self.venv / "bin" / "python"
        self.cache = self.home / "cache"
        self.work = self.home / "content"  # Colab's working folder
        self.kernels = self.home / "kernels"

    def make(self, log=print) -> Runtime:
        """Create the environment (once per requirements file), the stand-in and the kernel."""
        stamp = self.venv / ".colab-requirements"
        wanted = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
        if not (stamp.exists() and stamp.read_text() == wanted):
            shutil.rmtree(self.venv, ignore_errors=True)
            log(f"making a Colab-like environment in {self.venv} (requirements/colab.txt; a few minutes)")
            subprocess.run([sys.executable, "-m", "venv", str(self.venv)], check=True)
            done = subprocess.run([str(self.python), "-m", "pip", "install", "--quiet", "-r", str(REQUIREMENTS)],
                                  env=self.clean_env(), capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"the Colab-like environment did not install:\n{done.stderr[-3000:]}")
            stamp.write_text(wanted)
        purelib = subprocess.run([str(self.python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                 check=True, capture_output=True, text=True).stdout.strip()
        stand_in = Path(purelib) / "google" / "colab"
        stand_in.mkdir(parents=True, exist_ok=True)
        (stand_in / "__init__.py").write_text('"""A stand-in for Colab\'s google.colab: present, as in Colab."""\n')
        (stand_in / "files.py").write_text(  # chapter 14 downloads its result files with it
            '"""A stand-in for google.colab.files: download() checks that the file exists, as Colab does."""\n'
            "import os\n\n\ndef download(filename):\n"
            "    if not os.path.exists(filename):\n"
            "        raise FileNotFoundError(f'Cannot find file: {filename}')\n"
            "    print(f'download: {filename}')\n")
        startup = self.home / "ipython" / "profile_default" / "startup"
        startup.mkdir(parents=True, exist_ok=True)
        (startup / "00-colab.py").write_text("import google.colab  # Colab's kernel has it loaded from the start\n")
        spec = self.kernels / "colab"
        spec.mkdir(parents=True, exist_ok=True)
        (spec / "kernel.json").write_text(json.dumps({
            "argv": [str(self.python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "Colab stand-in", "language": "python"}))
        return self

    def clean_env(self) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith(NOT_IN_COLAB)}
        env.update(IPYTHONDIR=str(self.home / "ipython"), REVFORMER_CACHE=str(self.cache),
                   PYDEVD_DISABLE_FILE_VALIDATION="1")  # ipykernel 6.17's debugger would warn at each start
        return env

    def installed(self) -> str | None:
        """The revformer version installed in the runtime (None when it is not)."""
        done = subprocess.run([str(self.python), "-c", "from importlib.metadata import version; print(version('revformer'))"],
                              capture_output=True, text=True, env=self.clean_env(), cwd=self.home)
        return done.stdout.strip() if done.returncode == 0 else None

    def reset(self) -> None:
        """A fresh runtime: revformer not installed, no trained model, an empty working folder."""
        if self.installed() is not None:
            subprocess.run([str(self.python), "-m", "pip", "uninstall", "--quiet", "--yes", "revformer"], check=True,
                           env=self.clean_env())
        for folder in (self.cache, self.work):
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)

    def run(self, nb: dict, timeout: int = 1800, allow_errors: bool = False) -> Execution:
        """Execute ``nb`` here from a fresh state, as "Run all" does; stops at an error unless ``allow_errors``."""
        import nbformat
        from jupyter_client.kernelspec import KernelSpecManager
        from jupyter_client.manager import AsyncKernelManager
        from nbclient import NotebookClient
        from nbclient.exceptions import CellExecutionError

        self.reset()
        notebook = nbformat.reads(json.dumps(nb), as_version=4)  # its sources joined, as read from a file
        specs = KernelSpecManager(kernel_dirs=[str(self.kernels)])
        manager = AsyncKernelManager(kernel_name="colab", kernel_spec_manager=specs)
        messages = []

        class Client(NotebookClient):
            def handle_comm_msg(self, outs, msg, cell_index):
                content = msg["content"]
                messages.append((cell_index, msg["msg_type"], content.get("comm_id"), content.get("data", {})))
                return super().handle_comm_msg(outs, msg, cell_index)

        client = Client(notebook, km=manager, timeout=timeout, allow_errors=allow_errors, record_timing=True,
                        resources={"metadata": {"path": str(self.work)}})
        execution = Execution(notebook, time.time(), widget_messages=messages)
        try:
            # cleanup_kc: the kernel is shut down and its sockets closed, though the manager is ours
            client.execute(env=self.clean_env(), cwd=str(self.work), cleanup_kc=True)
        except CellExecutionError as error:
            execution.error = str(error)
        for index, cell in enumerate(notebook.cells):
            timing = cell.get("metadata", {}).get("execution", {})
            if cell.cell_type == "code" and "shell.execute_reply" in timing:
                execution.cells.append((index, _stamp(timing["iopub.execute_input"]),
                                        _stamp(timing["shell.execute_reply"])))
        return execution


def chapter_name(number: str) -> str:
    (path,) = sorted((ROOT / "book").glob(f"{number}_*.ipynb"))
    return path.stem


def all_chapters() -> list[str]:
    return sorted(path.name[:2] for path in (ROOT / "book").glob("[0-9][0-9]_*.ipynb"))


def with_training(nb: dict) -> dict:
    """The notebook with its setup cell's switch set, ``TRAIN = True``: every model trained here."""
    setup = next(cell for cell in nb["cells"] if "TRAIN = False" in "".join(cell["source"]))
    source = "".join(setup["source"])
    setup["source"] = source.replace("TRAIN = False", "TRAIN = True", 1)
    return nb


def bench(chapters: list[str], out: Path, home: Path, train: bool = False, site: Path = SITE) -> dict:
    """From "Run all" to the first figure and to the end, for each chapter in a fresh runtime.

    ``train``: with ``TRAIN = True`` in the setup cell (every model trained in the runtime),
    otherwise with the build's runs downloaded from the site. A chapter that fails is recorded
    with its error, and the others still run; the command then exits with an error.
    """
    runtime = Runtime(home).make()
    record = {"cores": os.cpu_count(), "runtime": "requirements/colab.txt, a fresh runtime per chapter",
              "models": "trained in the runtime (TRAIN = True)" if train else "the build's runs, from the site",
              "measured": time.strftime("%Y-%m-%d %H:%M"), "chapters": {}}
    failed = []
    with serve(site) as address:
        for number in chapters:
            name = chapter_name(number)
            print(f"{name}: run all in a fresh Colab-like runtime ...", flush=True)
            nb = downloaded(address, name)
            execution = runtime.run(with_training(nb) if train else nb)
            row = {"install_seconds": round(execution.cells[0][2] - execution.started, 1) if execution.cells else None,
                   "first_figure_seconds": round(execution.first_figure_seconds() or -1, 1),
                   "end_seconds": round(execution.total_seconds(), 1),
                   "waits": execution.announced_waits()}
            if execution.error:
                row["error"] = execution.error[-3000:]
                failed.append(name)
            record["chapters"][name] = row
            print(f"{name}: {row}", flush=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    tmp.replace(out)
    if failed:
        raise SystemExit(f"failed in the Colab-like runtime: {', '.join(failed)} (errors in {out})")
    return record


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("bench", help="the waits of a fresh runtime, chapter by chapter")
    b.add_argument("--chapters", nargs="+", default=["10", "16"], help="chapter numbers, or all")
    b.add_argument("--train", action="store_true", help="TRAIN = True: train every model in the runtime")
    b.add_argument("--site", type=Path, default=SITE, help="the built site to serve (default _build/html)")
    b.add_argument("--out", type=Path, default=ROOT / "_build" / "colab-waits.json")
    b.add_argument("--home", type=Path, default=ROOT / "_build" / "colab-runtime")
    args = parser.parse_args(argv)
    chapters = all_chapters() if args.chapters == ["all"] else args.chapters
    bench(chapters, args.out, args.home, train=args.train, site=args.site)
    return 0


if __name__ == "__main__":
    sys.exit(main())
