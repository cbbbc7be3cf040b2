"""Launching the book for real: Binder's files, the pinned install, forks, the README's recipe, CI.

repo2docker, Colab and GitHub's runners cannot run here, so these tests check
what can be checked on this machine: that the files agree with each other and
with what is installed, that the install resolves with PyTorch's CPU build on
disk, that the wheel installs offline and the setup cell accepts it, and that a
fork's retargeting leaves no trace of the old repository.
"""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from book_facts import ROOT, book_tool

TOOLS_OF_THE_BUILD = ("jupyter-book", "jupyter_book", "sphinx", "myst", "pytest", "playwright", "jupyterquiz",
                      "docutils", "nbclient", "jupyter-cache")


def _requirements(path: Path) -> dict:
    """``name -> version`` of the ``name==version`` lines of a requirements file (``-r`` followed)."""
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("-r "):
            pins.update(_requirements(path.parent / line[3:].strip()))
        elif "==" in line:
            name, version = line.split("==")
            pins[name.strip().lower()] = version.strip()
    return pins


def _installed(name: str) -> str:
    from importlib.metadata import version

    return version(name)


def test_requirements_are_split_by_who_needs_them():
    runtime, book, test = (_requirements(ROOT / "requirements" / f"{n}.txt") for n in ("runtime", "book", "test"))
    assert set(runtime) < set(book) < set(test)
    assert not any(tool in name for name in runtime for tool in TOOLS_OF_THE_BUILD)
    assert {"jupyter-book", "sphinx", "myst-nb", "myst-parser", "sphinx-book-theme", "pydata-sphinx-theme"} <= set(book)
    assert {"pytest", "playwright"} <= set(test) - set(book)
    for name in ("jupyterquiz", "sphinx-exercise"):  # unused: gone
        assert name not in test
    for name, version in test.items():  # every pin is what this build really runs
        assert _installed(name).split("+")[0] == version.split("+")[0], f"{name}: pinned {version}, installed {_installed(name)}"
    assert "-r requirements/test.txt" in (ROOT / "requirements.txt").read_text()


def test_requires_python_tells_the_truth():
    text = (ROOT / "code" / "pyproject.toml").read_text()
    floor = re.search(r'requires-python = ">=(\d+)\.(\d+)"', text)
    assert floor and (int(floor.group(1)), int(floor.group(2))) <= sys.version_info[:2]  # tested here
    binder = (ROOT / "binder" / "runtime.txt").read_text().strip()
    assert binder == f"python-{sys.version_info[0]}.{sys.version_info[1]}"  # Binder runs what is tested here


def test_binder_installs_the_runtime_only_with_pytorchs_cpu_build():
    text = (ROOT / "binder" / "requirements.txt").read_text()
    assert re.search(r"^--extra-index-url https://download\.pytorch\.org/whl/cpu$", text, re.M)
    pins = _requirements(ROOT / "binder" / "requirements.txt")
    import torch

    assert pins["torch"] == torch.__version__ and pins["torch"].endswith("+cpu")  # the CPU build, as here
    runtime = _requirements(ROOT / "requirements" / "runtime.txt")
    assert {n: v for n, v in pins.items() if n != "torch"} == {n: v for n, v in runtime.items() if n != "torch"}
    assert not any(tool in name for name in pins for tool in TOOLS_OF_THE_BUILD)
    post_build = ROOT / "binder" / "postBuild"
    assert os.access(post_build, os.X_OK)
    script = post_build.read_text()
    # the site's wheel (with the manifest of the build's runs), the three runs loaded from the site; else
    # the repository's package with the three groups trained into the image's cache
    assert 'python -m pip install --no-deps --no-cache-dir "$wheel"' in script and "load_experiment(" in script
    assert "pip install --no-deps --no-cache-dir ./code" in script
    assert "python -m revformer reproduce" in script
    # the site and the version postBuild reads are the ones the build names
    lines = [line for line in script.splitlines() if line.startswith(("site=", "version=", "wheel="))]
    done = subprocess.run(["bash", "-c", "\n".join(lines + ['echo "$wheel"'])], cwd=ROOT, capture_output=True,
                          text=True, env={k: v for k, v in os.environ.items() if k != "REVFORMER_SITE"})
    import revformer

    assert done.stdout.strip() == f"{book_tool.named()[1]}downloads/revformer-{revformer.__version__}-py3-none-any.whl"


def test_chapter_14_installs_the_wheel_the_site_serves_for_this_version():
    import revformer

    chapter = json.loads((ROOT / "book" / "14_colab.ipynb").read_text())
    text = "".join("".join(c["source"]) for c in chapter["cells"] if c["cell_type"] == "markdown")
    wheels = re.findall(r"https://\S+/downloads/revformer-[^\s/]+\.whl", text)
    assert wheels == [f"{book_tool.named()[1]}downloads/revformer-{revformer.__version__}-py3-none-any.whl"]


@pytest.mark.slow
def test_binder_install_resolves_with_the_cpu_build_on_disk(tmp_path):
    """pip resolves Binder's requirements here: PyTorch's CPU wheel from this machine's disk.

    PyTorch's own index cannot be reached from here, so its line is left out; the
    pin names the CPU build, which only that index and this disk carry.
    """
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("".join(line for line in (ROOT / "binder" / "requirements.txt").read_text()
                                    .splitlines(keepends=True) if not line.startswith("--extra-index-url")))
    report = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
                           "--report", str(report), "-r", str(requirements)], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    resolved = {i["metadata"]["name"].lower(): i["metadata"]["version"] for i in json.loads(report.read_text())["install"]}
    assert resolved["torch"].endswith("+cpu")
    assert not any(tool in name for name in resolved for tool in TOOLS_OF_THE_BUILD)
    package = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--quiet",
                              "--no-build-isolation", str(ROOT / "code")], capture_output=True, text=True, timeout=600)
    assert package.returncode == 0, package.stderr[-2000:]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The package's wheel, built the way ``make book`` builds the one the site serves."""
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(out), str(ROOT / "code")], check=True, timeout=600)
    (path,) = out.glob("revformer-*.whl")
    return path


def _setup_cell(python: str, cwd: Path, colab: bool, env=None):
    """Run the chapters' setup cell with ``python``, in Colab (faked) or not."""
    code = ("import sys, types\n" + ("sys.modules['google.colab'] = types.ModuleType('google.colab')\n" if colab else "")
            + book_tool.setup_cell_source() + "\nprint('setup ok')\n")
    return subprocess.run([python, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PIP_RETRIES="0", PIP_TIMEOUT="5", **(env or {})))


def test_the_wheel_installs_offline_and_the_setup_cell_accepts_it(wheel, tmp_path):
    import zipfile

    import revformer

    assert wheel.name == f"revformer-{revformer.__version__}-py3-none-any.whl"
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("revformer/questions/") and n.endswith(".json") for n in names)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=600)
    python = str(venv / "bin" / "python")
    missing = _setup_cell(python, tmp_path, colab=False)  # outside Colab, with no revformer: says how
    assert missing.returncode == 1 and "setup ok" not in missing.stdout
    assert "revformer is not installed" in missing.stderr and "pip install -e ./code" in missing.stderr
    installed = subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", str(wheel)],
                               capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stderr[-2000:]
    for colab in (True, False):  # the version it was written for: nothing to install, nothing to say
        done = _setup_cell(python, tmp_path, colab=colab)
        assert done.returncode == 0 and "setup ok" in done.stdout, done.stderr[-2000:]
        assert done.stderr == ""


def test_in_colab_a_failed_install_says_what_failed_and_what_to_do(tmp_path):
    """No revformer, and the site cannot be reached: two lines, the cause and the remedy."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=600)
    python = str(venv / "bin" / "python")
    # pip of this project's environment stands in for Colab's, with no index and the site unreachable
    shim = tmp_path / "shim"
    (shim / "pip").mkdir(parents=True)
    (shim / "pip" / "__main__.py").write_text(
        "import sys\nprint('ERROR: Could not install requirement from URL: no network', file=sys.stderr)\nsys.exit(1)\n")
    done = _setup_cell(python, tmp_path, colab=True, env={"PYTHONPATH": str(shim)})
    assert done.returncode == 1 and "setup ok" not in done.stdout
    message = done.stderr.strip().splitlines()
    assert len(message) == 2, done.stderr
    assert message[0].startswith("Could not install revformer ") and "no network" in message[0]
    assert "upload it" in message[1] and "!pip install revformer-" in message[1]


def test_a_fork_is_retargeted_in_every_place(tmp_path):
    """make retarget leaves no trace of the old repository or site, and every place agrees again."""
    copy = tmp_path / "fork"
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.splitlines()
    for name in files:
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    old_repo, old_site = book_tool.named()
    done = subprocess.run(["make", "-s", "retarget", "REPO=https://github.com/example/fork", f"PYTHON={sys.executable}"],
                          cwd=copy, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    traces = [str(p.relative_to(copy)) for p in copy.rglob("*") if p.is_file()
              and (old_repo.split("github.com/")[1] in p.read_text(errors="ignore")
                   or old_site.split("//")[1].rstrip("/") in p.read_text(errors="ignore"))]
    assert traces == [], f"still naming the old repository or site: {traces}"
    check = subprocess.run([sys.executable, "tools/book.py", "check"], cwd=copy, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout
    config = (copy / "_config.yml").read_text()
    assert "url: https://github.com/example/fork" in config and "baseurl: https://example.github.io/fork/" in config
    first = json.loads(next((copy / "book").glob("08_*.ipynb")).read_text())
    setup = "".join(next(c for c in first["cells"] if c["cell_type"] == "code")["source"])
    assert 'SITE = "https://example.github.io/fork/"' in setup and 'f"{SITE}downloads/revformer-' in setup
    bad = subprocess.run(["make", "-s", "retarget", "REPO=github.com/example", f"PYTHON={sys.executable}"], cwd=copy,
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "OWNER/NAME" in bad.stderr + bad.stdout


def test_the_ci_workflow_tests_the_book_and_publishes_the_site():
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "book.yml").read_text())
    triggers = workflow[True] if True in workflow else workflow["on"]  # YAML reads a bare `on` as True
    assert "main" in triggers["push"]["branches"] and "pull_request" in triggers
    steps = workflow["jobs"]["test"]["steps"]
    commands = " ".join(s.get("run", "") for s in steps)
    assert "make test" in commands
    assert "download.pytorch.org/whl/cpu" in commands  # never the CUDA build
    upload = next(s for s in steps if "upload-pages-artifact" in s.get("uses", ""))
    assert upload["with"]["path"] == "_build/html" and "refs/heads/main" in upload["if"]
    publish = workflow["jobs"]["publish"]
    assert publish["needs"] == "test" and any("deploy-pages" in s.get("uses", "") for s in publish["steps"])
    assert publish["permissions"]["pages"] == "write"


def test_the_project_is_publishable():
    assert "MIT License" in (ROOT / "LICENSE").read_text()
    assert "CC BY 4.0" in (ROOT / "LICENSE-TEXT.md").read_text()
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    import revformer

    assert citation["cff-version"] == "1.2.0" and citation["version"] == revformer.__version__
    assert citation["repository-code"] == book_tool.named()[0]
    contributing = (ROOT / "CONTRIBUTING.md").read_text()
    for needed in ("make unit", "tools/run_chapter.py", "_toc.yml", "make setup-cells", "make retarget"):
        assert needed in contributing


def test_without_chromium_make_test_says_how_to_install_it():
    done = subprocess.run(["make", "-s", "chromium", "CHROMIUM=/nonexistent/chromium"], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode != 0 and "Traceback" not in done.stdout + done.stderr
    assert "apt-get install -y chromium" in done.stdout


def _readme_recipe() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Without make"):]
    block = re.search(r"```\n(.*?)```", section, re.S).group(1)
    return [line.split("#", 1)[0].strip() for line in block.splitlines() if line.split("#", 1)[0].strip()]


@pytest.mark.slow
def test_the_readmes_recipe_without_make_builds_the_book(tmp_path):
    """The README's commands, run as written in a fresh copy of the repository.

    The environment is this one (creating and filling a new one needs the
    network, and its editable install would point the project's own away), so
    the venv, activation and pip lines are checked for their text, and the
    test suite's own line is not run again from inside it. The copy starts
    with this build's caches (trained models, executed chapters), as a second
    build would: ``make book`` has just executed every chapter, so here the
    recipe's paths, commands and environment are what is under test.
    """
    lines = _readme_recipe()
    assert lines[:3] == ["python3 -m venv .venv", ". .venv/bin/activate", "pip install -r requirements.txt"]
    assert lines[-1] == "python -m pytest"
    copy = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(copy)], check=True, timeout=600)
    for name in subprocess.run(["git", "ls-files", "--others", "--exclude-standard", "--modified"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.splitlines():
        if (ROOT / name).is_file():  # the working tree as it is, committed or not
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    for cached in (".jupyter_cache", ".package-hash"):
        if (ROOT / "_build" / cached).is_dir():
            shutil.copytree(ROOT / "_build" / cached, copy / "_build" / cached)
        elif (ROOT / "_build" / cached).exists():
            (copy / "_build").mkdir(exist_ok=True)
            shutil.copy2(ROOT / "_build" / cached, copy / "_build" / cached)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    for line in lines[3:-1]:
        done = subprocess.run(line, shell=True, cwd=copy, env=env, capture_output=True, text=True, timeout=1800)
        assert done.returncode == 0, f"{line}: {done.stdout[-1500:]}{done.stderr[-1500:]}"
    assert (copy / "_build" / "html" / "index.html").exists()
    assert (copy / "_build" / "html" / "downloads" / "ablation.csv").exists()


def test_chapter_14s_waits_are_the_benchmarks_records():
    """Chapter 14's table of waits is make bench's measurement (bench/colab-waits*.json), not numbers typed in."""
    import ast

    chapter = json.loads((ROOT / "book" / "14_colab.ipynb").read_text())
    (source,) = ["".join(c["source"]) for c in chapter["cells"] if "WAITS_SERVED = {" in "".join(c["source"])]
    found = {node.targets[0].id: ast.literal_eval(node.value) for node in ast.parse(source).body
             if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
             and node.targets[0].id.startswith("WAITS_")}
    for name, record in (("WAITS_SERVED", "colab-waits.json"), ("WAITS_TRAINED", "colab-waits-trained.json")):
        chapters = json.loads((ROOT / "bench" / record).read_text())["chapters"]
        assert all("error" not in row for row in chapters.values()), record
        assert found[name] == {n[:2]: row["end_seconds"] for n, row in chapters.items()}, name
    assert set(found["WAITS_SERVED"]) == {p.name[:2] for p in (ROOT / "book").glob("[0-9][0-9]_*.ipynb")}
