import os

import pytest
import torch

from revformer import bench
from revformer.model import count_parameters, make_model


@pytest.mark.parametrize("heads, causal", [(4, True), (1, True), (4, False)])
def test_reference_model_is_the_same_size_and_honours_the_mask(heads, causal):
    model = bench.ReferenceModel(heads, causal)
    assert count_parameters(model) == count_parameters(make_model(heads, causal=causal)) == 69_709
    model.eval()
    ids = torch.randint(0, 13, (2, 14))
    changed = ids.clone()
    changed[:, 8:] = (changed[:, 8:] + 1) % 13
    with torch.no_grad():
        same = torch.allclose(model(ids)[:, :8], model(changed)[:, :8], atol=1e-6)
    assert same == causal


def test_work_flops_and_targets():
    flops = bench.work_flops()
    assert flops["train"] == 6 * 69_709 * 600 * 64 * 14 * 3
    assert flops["total"] == flops["train"] + flops["evaluate"] + flops["generate"] + flops["curve"]
    assert flops["curve"] > 0  # the learning curve is part of the work
    record = {"reproduction": {"ratio": 0.4, "ours_peak_gb": 2.0}, "sweep": {"ratio": 4.5},
              "browser": {"forward_ms": 2.0, "first_draw_ms": 50.0, "export_bytes": 1_600_000}}
    rows = {name: met for name, _, _, met in bench.targets_table(record)}
    assert rows == {"reproduction, ours / PyTorch-layers reference": True,
                    "peak memory of the reproduction (GB)": False, "sweep of 5 seeds / reproduction": False,
                    "browser: one forward pass (ms)": True, "browser: playground's first drawing (ms)": True,
                    "browser: what the model adds to the site (MB)": False}


def test_process_tree_memory_and_timing():
    assert bench._tree_rss_bytes(os.getpid()) > 10_000_000
    command = ["python3", "-c", "x = bytearray(50_000_000); import time; time.sleep(0.3)"]
    result = bench._timed(command, sample_memory=True)
    assert result["peak_bytes"] > 50_000_000 and result["seconds"] >= 0.3
    timed_only = bench._timed(command)  # the timed rounds take no samples
    assert timed_only["peak_bytes"] is None and timed_only["seconds"] >= 0.3
    with pytest.raises(RuntimeError, match="failed"):
        bench._timed(["python3", "-c", "raise SystemExit(3)"])


def test_book_benchmark_refuses_a_foreign_folder(tmp_path):
    with pytest.raises(ValueError, match="repository"):
        bench.book_times(tmp_path)
