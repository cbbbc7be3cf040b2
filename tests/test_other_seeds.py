"""The interpretation chapters follow their run for another seed, not only the build's (issue 33).

Every sentence of chapters 10-12 that depends on the run is generated from it, and every assert checks
only what must hold for any seed. ``tools/run_chapter.py`` runs them top to bottom in a fresh kernel, as
the book build does, with seed 0 instead of the build's 42: any assert that holds for one seed only, or
a sentence whose branch has no case for what seed 0 shows, fails here. It trains seed 0's groups (about
three minutes on two cores, into the build's cache, which then keeps them). Chapters 16-21 train several
seeds each (up to twenty minutes a seed): they were run for seeds 0-3 by hand, as the issue's note says.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_chapters_10_to_12_run_green_with_seed_0(tmp_path):
    env = dict(os.environ, REVFORMER_CACHE=os.environ.get("REVFORMER_CACHE", str(ROOT / "_build" / "revformer-cache")))
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "run_chapter.py"), "10", "11", "12", "--seed", "0",
                          "--out", str(tmp_path)], capture_output=True, text=True, cwd=ROOT, env=env)
    report = run.stdout + run.stderr
    assert run.returncode == 0, report[-4000:]
    for name in ("10_heatmaps", "11_mask_off", "12_ablations"):
        assert f"{name}.ipynb (seed 0): ran in" in run.stdout, report[-4000:]
        cells = json.loads((tmp_path / f"{name}.ipynb").read_text(encoding="utf-8"))["cells"]
        assert all(c.get("execution_count") for c in cells if c["cell_type"] == "code"), f"{name}: a cell did not run"
