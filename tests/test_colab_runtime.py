"""Colab end to end: downloaded chapters in a fresh Colab-like runtime, as a reader runs them.

``tools/colab_runtime.py`` makes the runtime: a virtual environment with what
Colab ships (ipywidgets 7.7.1, IPython 7.34, ipykernel 6.17) but not
revformer, whose kernel loads a stand-in ``google.colab`` at start. The built
site is served on a local address; each chapter is downloaded from it, its
setup cell pointed at that address, and run with nbclient from a fresh state.
"""
import importlib.util
import json
import re
import subprocess
import sys

import pytest

from book_facts import ROOT

pytestmark = [pytest.mark.book, pytest.mark.slow]  # the built site; a new environment and three groups trained

_spec = importlib.util.spec_from_file_location("colab_runtime", ROOT / "tools" / "colab_runtime.py")
colab = sys.modules["colab_runtime"] = importlib.util.module_from_spec(_spec)  # dataclasses look it up there
_spec.loader.exec_module(colab)

DRIVE_THE_EXPLORER = [
    # the reader changes the controls; nbclient stands in for the page that shows the widget
    "import gc, json\n"
    "from revformer.explorer import LiveExplorer\n"
    "(explorer,) = [o for o in gc.get_objects() if type(o) is LiveExplorer]  # type(): weak proxies too\n"
    "drawn = lambda e: [o['data']['image/png'] for o in e.output.outputs if 'image/png' in o.get('data', {})]\n"
    "before = {'status': explorer.status.value, 'images': drawn(explorer)}\n"
    "explorer.row.value = 9\n"
    "explorer.digits.value = '987650'\n",
    "after = {'status': explorer.status.value, 'images': drawn(explorer)}\n"
    "print('EXPLORER', json.dumps({'before': before['status'], 'after': after['status'],\n"
    "      'drawn_before': len(before['images']), 'drawn_after': len(after['images']),\n"
    "      'redrawn': before['images'] != after['images']}))\n",
]


@pytest.fixture(scope="module")
def runtime():
    """Made once in _build (again when requirements/colab.txt changes), reset before each chapter."""
    return colab.Runtime(ROOT / "_build" / "colab-runtime").make()


REQUESTED = []  # the paths the served site was asked for


@pytest.fixture(scope="module")
def site():
    with colab.serve(requested=REQUESTED) as url:
        yield url


def _code_cell(source, number):
    return {"cell_type": "code", "id": f"drive-explorer-{number}", "metadata": {}, "execution_count": None,
            "outputs": [], "source": source}


def _every_cell_ran(execution):
    assert execution.error is None, execution.error[-3000:]
    code = [c for c in execution.notebook.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in code), "a code cell did not run"
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]
    return code


def _installed_from_the_wheel(runtime):
    where = subprocess.run([str(runtime.python), "-c", "import revformer; print(revformer.__file__)"],
                           capture_output=True, text=True, env=runtime.clean_env(), cwd=runtime.home)
    return where.returncode == 0 and where.stdout.strip().startswith(str(runtime.venv))


def test_with_the_site_unreachable_the_setup_cell_stops_with_its_two_lines(runtime, site):
    nb = colab.downloaded(site, "01_task", served_as=colab.unreachable_site())
    nb["cells"] = [next(c for c in nb["cells"] if c["cell_type"] == "code")]  # the setup cell
    execution = runtime.run(nb, allow_errors=True)
    (error,) = [o for o in execution.notebook.cells[0].outputs if o.output_type == "error"]
    assert error.ename == "SystemExit"
    lines = error.evalue.strip().splitlines()
    assert len(lines) == 2, error.evalue
    assert lines[0].startswith("Could not install revformer ") and "http://127.0.0.1:" in lines[0]
    assert "upload it" in lines[1] and "!pip install revformer-" in lines[1]
    assert runtime.installed() is None


def test_the_chinese_setup_cell_says_its_two_lines_in_chinese(runtime, site):
    nb = colab.downloaded(site, "01_task", served_as=colab.unreachable_site(), edition="zh_CN")
    nb["cells"] = [next(c for c in nb["cells"] if c["cell_type"] == "code")]  # the setup cell
    execution = runtime.run(nb, allow_errors=True)
    (error,) = [o for o in execution.notebook.cells[0].outputs if o.output_type == "error"]
    lines = error.evalue.strip().splitlines()
    assert error.ename == "SystemExit" and len(lines) == 2, error.evalue
    assert lines[0].startswith("无法从 http://127.0.0.1:") and "安装 revformer " in lines[0]
    assert "上传" in lines[1] and "!pip install revformer-" in lines[1]
    assert runtime.installed() is None


def test_chapter_1_installs_the_package_from_the_site_and_runs(runtime, site):
    import revformer

    runtime.reset()
    assert runtime.installed() is None
    REQUESTED.clear()
    execution = runtime.run(colab.downloaded(site, "01_task"))
    _every_cell_ran(execution)
    assert runtime.installed() == revformer.__version__ and _installed_from_the_wheel(runtime)
    assert f"/downloads/revformer-{revformer.__version__}-py3-none-any.whl" in REQUESTED  # from the served site
    # a fresh runtime loads the book's trained runs from the site instead of training them (revformer.served)
    assert len([p for p in REQUESTED if p.startswith("/downloads/runs/")]) == 3, REQUESTED
    index = next(i for i, c in enumerate(execution.notebook.cells) if "load_experiment(" in c.source)
    said = "".join(o.get("text", "") for o in execution.notebook.cells[index].outputs if o.output_type == "stream")
    assert said.count("the book's trained run (PyTorch") == 3 and "training" not in said, said


def test_the_chinese_chapter_1_runs_and_answers_in_chinese(runtime, site):
    """The Chinese notebook's setup cell sets the language: its quizzes and sentences come out in Chinese."""
    execution = runtime.run(colab.downloaded(site, "01_task", edition="zh_CN"))
    code = _every_cell_ran(execution)
    html = [o["data"]["text/html"] for c in code for o in c.outputs if "text/html" in o.get("data", {})]
    quizzes = [h for h in html if 'class="rf-quiz"' in h]
    assert quizzes and all(re.search(r"<strong>问题 01 q\d+。</strong>", h) for h in quizzes)


def test_chapter_10_trains_with_bars_and_its_live_explorer_redraws(runtime, site):
    nb = colab.downloaded(site, "10_heatmaps")  # run() starts it with no trained model
    # the setup cell's switch: train every model here instead of loading the book's runs
    setup = next(c for c in nb["cells"] if c["cell_type"] == "code")
    assert "".join(setup["source"]).count("TRAIN = False") == 1
    colab.with_training(nb)
    assert "TRAIN = True" in "".join(setup["source"])
    nb["cells"] += [_code_cell(source, i) for i, source in enumerate(DRIVE_THE_EXPLORER)]
    execution = runtime.run(nb)
    code = _every_cell_ran(execution)
    assert _installed_from_the_wheel(runtime)

    # the wait: one line before the training, then bars that move (widgets here, as in Colab)
    index = next(i for i, c in enumerate(execution.notebook.cells) if "load_experiment(" in c.source)
    said = "".join(o.get("text", "") for o in execution.notebook.cells[index].outputs if o.output_type == "stream")
    assert "training 3 groups (four_heads, one_head, no_mask), about " in said
    assert "not in the cache at " in said
    bars = [w for w in execution.widgets_of(index).values() if w["model"] == "FloatProgressModel"]
    assert len(bars) == 4, [w["model"] for w in execution.widgets_of(index).values()]
    tops = sorted(bar["states"][0]["max"] for bar in bars)
    assert tops[0] == 3 and tops[1] == tops[2] == tops[3] >= 50  # the runs done; each group's steps
    for bar in bars:
        top = bar["states"][0]["max"]
        values = [s["value"] for s in bar["states"] if "value" in s]
        assert values[-1] == top, values
        if top > 3:  # a group's bar: it moved while the group trained
            assert len({v for v in values if 0 < v < top}) >= 2, values

    # the live explorer is a widget, and it redraws when its controls change
    view = [o for c in code if "live_explorer(" in c.source for o in c.outputs
            if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert len(view) == 1
    (line,) = [t for t in code[-1].outputs[0].text.splitlines() if t.startswith("EXPLORER ")]
    explorer = json.loads(line[len("EXPLORER "):])
    assert explorer["drawn_before"] == 1 and explorer["drawn_after"] == 1 and explorer["redrawn"]
    assert "query 9" in explorer["after"] and "query 9" not in explorer["before"]
    assert "(right)" in explorer["after"] and "0 5 6 7 8 9" in explorer["after"]


def test_binder_post_build_installs_the_sites_package_and_loads_the_three_runs(runtime, site):
    """binder/postBuild, run as Binder runs it (bash, the image's python first on PATH), against the served site."""
    import os

    import revformer

    runtime.reset()
    REQUESTED.clear()
    env = dict(runtime.clean_env(), REVFORMER_SITE=site, HOME=str(runtime.home),
               PATH=f"{runtime.venv / 'bin'}{os.pathsep}{os.environ['PATH']}")
    done = subprocess.run(["bash", str(ROOT / "binder" / "postBuild")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert runtime.installed() == revformer.__version__ and _installed_from_the_wheel(runtime)
    assert f"/downloads/revformer-{revformer.__version__}-py3-none-any.whl" in REQUESTED
    assert len([p for p in REQUESTED if p.startswith("/downloads/runs/")]) == 3, REQUESTED
    said = done.stdout + done.stderr
    assert said.count("the book's trained run (PyTorch") == 3 and "training" not in said, said
    assert len(list(runtime.cache.rglob("*.pt"))) == 3


def test_chapter_8_replays_the_served_run_with_the_thread_count_that_trained_it(runtime, site):
    """A fresh runtime with the served run of four_heads: chapter 8's hand-written loop replays it, with the run's
    own thread count (the runtime has as many threads as cores), bit for bit on a CPU, and every assert holds."""
    import json as json_
    import os

    execution = runtime.run(colab.downloaded(site, "08_training"))
    code = _every_cell_ran(execution)
    said = "".join(o.get("text", "") + "".join(o.get("data", {}).get("text/markdown", ""))
                   for c in code for o in c.outputs)
    manifest = json_.loads((colab.SITE / "downloads" / "runs" / "manifest.json").read_text())
    built_with = {entry["threads"] for entry in manifest["runs"].values()}
    assert built_with != {os.cpu_count()}, "the runtime would compute with the build's own thread count"
    assert "the hand-written loop reproduces the recorded run bit for bit" in said, said[-3000:]
