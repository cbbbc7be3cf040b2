import os

import pytest

from revformer.config import GROUP_NAMES
from revformer.experiment import load_experiment
from revformer.files import read_csv
from revformer.sweep import CURVES_HEADER, SEEDS_HEADER, default_seeds, parse_seeds, read_seeds, run_sweep


@pytest.mark.parametrize("bad, message", [
    ("", "integers separated by commas"), ("1,,2", "integers separated by commas"), ("1,a", "must be an integer"),
    ([], "at least one seed"), ([1, 1], "repeated"), ("3,4,3", r"repeated: \[3\]"), ([1.5], "integer"),
    ([True], "integer"),
])
def test_bad_seed_lists_are_refused(bad, message):
    with pytest.raises(ValueError, match=message):
        parse_seeds(bad)


def test_seed_lists():
    assert parse_seeds("42, 0,1") == [42, 0, 1] and parse_seeds([7]) == [7]
    assert default_seeds() == [42, 0, 1, 2, 3]


def test_default_seeds_follow_the_builds_seed(monkeypatch):
    monkeypatch.setenv("REVFORMER_SEED", "2")
    assert default_seeds() == [2, 0, 1, 3, 4]


@pytest.mark.slow  # several groups in worker processes
def test_a_sweep_writes_both_files_reuses_the_reproduction_and_resumes(small_config, tmp_path):
    seed = small_config.train.seed
    here = load_experiment(small_config, device="cpu", cache_dir=tmp_path / "cache", progress=False)
    reproduction_files = {p: p.stat().st_mtime_ns for p in (tmp_path / "cache").iterdir()}
    seed_rows, curve_rows = run_sweep(tmp_path / "out", [seed, 5], small_config, device="cpu",
                                      cache_dir=tmp_path / "cache", progress=False)
    assert all(p.stat().st_mtime_ns == t for p, t in reproduction_files.items())  # seed 42: from the cache
    assert len(list((tmp_path / "cache").iterdir())) == 6
    rows = read_seeds(tmp_path / "out" / "seeds.csv")
    assert list(read_csv(tmp_path / "out" / "seeds.csv")[0]) == SEEDS_HEADER
    assert [(r["group"], r["seed"]) for r in rows] == [(g, s) for s in (seed, 5) for g in GROUP_NAMES]
    for row in rows:
        assert 0 <= row["sequence_accuracy"] <= row["digit_accuracy"] <= 1 or row["sequence_accuracy"] == 0
        assert 0 <= row["reversal_weight"] <= 1 and 0 <= row["next_answer_weight"] <= 1
    for name in GROUP_NAMES:  # the reproduction's own numbers, for the same seed
        row = next(r for r in rows if r["group"] == name and r["seed"] == seed)
        assert row["val_loss"] == here.run(name).history[-1][2]
        assert row["sequence_accuracy"] == here.scores(name).sequence_accuracy
    curves = read_csv(tmp_path / "out" / "learning_curves.csv")
    assert list(curves[0]) == CURVES_HEADER
    steps = small_config.train.curve_steps()
    assert [int(r["step"]) for r in curves if r["group"] == "one_head" and r["seed"] == "5"] == steps
    for row in rows:
        points = [(int(c["step"]), float(c["val_sequence_accuracy"])) for c in curves
                  if c["group"] == row["group"] and int(c["seed"]) == row["seed"]]
        perfect = [step for step, accuracy in points if accuracy == 1.0]
        assert row["first_perfect_step"] == (perfect[0] if perfect else None)
    # interrupted: one run is missing; the sweep trains it alone and keeps the others
    victim = next((tmp_path / "cache").glob("no_mask-*.pt"))
    kept = {p: p.stat().st_mtime_ns for p in (tmp_path / "cache").iterdir() if p != victim}
    victim.unlink()
    again, _ = run_sweep(tmp_path / "again", [seed, 5], small_config, device="cpu", cache_dir=tmp_path / "cache",
                         progress=False)
    assert all(p.stat().st_mtime_ns == t for p, t in kept.items()) and len(list((tmp_path / "cache").iterdir())) == 6
    assert [(r["group"], r["seed"]) for r in again] == [(r["group"], r["seed"]) for r in seed_rows]
    # retrained alone, in this process at its own thread count: the same run up to rounding
    assert [r["val_loss"] for r in again] == pytest.approx([r["val_loss"] for r in seed_rows], rel=1e-5)


def test_the_sweep_command_reports_bad_seeds(tmp_path):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "revformer", "sweep", "--out", str(tmp_path), "--seeds", "1,1"],
                          capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert done.returncode == 2 and "repeated" in done.stderr


def test_sweep_rows_train_a_control_configuration(small_config, tmp_path):
    """A control passes its own configuration (here one block); the rows carry the runs and their curves."""
    import dataclasses

    from revformer.config import group
    from revformer.sweep import sweep_rows

    one_block = dataclasses.replace(small_config, model=dataclasses.replace(small_config.model, num_layers=1))
    rows = sweep_rows(one_block, seeds=[3], groups=[group("four_heads")], device="cpu", cache_dir=tmp_path,
                      progress=False)
    (row,) = rows
    assert row["group"] == "four_heads" and row["seed"] == 3 and len(row["run"].model.blocks) == 1
    assert row["curve"] == row["run"].curve and row["curve"][0][0] == 0
    again = sweep_rows(one_block, seeds=[3], groups=[group("four_heads")], device="cpu", cache_dir=tmp_path,
                       progress=False)
    assert again[0]["run"].from_cache and again[0]["val_loss"] == row["val_loss"]
