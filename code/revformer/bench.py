"""The speed benchmark: ``python -m revformer bench`` (``make bench``).

It measures, in one run so that ratios are fair on a shared, noisy machine:

- the reproduction (``revformer reproduce``: all three groups, 600 steps,
  every evaluation, generation, analysis and the eight files) against the
  same work done the plain way with PyTorch's own layers
  (``torch.nn.TransformerEncoderLayer``, Pre-LN, GELU), each in a fresh
  process, interleaved over several rounds; medians and their ratio;
- one training step alone, ours against the reference, per group;
- optionally the book: a clean ``make book``, an unchanged rebuild, and
  chapter 10 run cold in a fresh kernel with the results cache warm;
- the floor: the work's floating-point operations (about 6 x parameters x
  tokens to train, 2 x to evaluate) over the rate of a large matrix product
  on the same machine;
- the peak memory of the reproduction (all its processes together), in a
  separate round that is not timed.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from .config import GROUPS, ExperimentConfig
from .data import EOS, IGNORE_INDEX, PROMPT_LEN, SEQ_LEN, make_splits, split_inputs_labels
from .files import write_json
from .model import count_parameters, init_weights, make_model
from .train import batch_schedule, make_optimizer, train_step

TARGETS = {
    "reproduction_ratio": 0.5,
    "clean_book_seconds": 240.0,
    "rebuild_seconds": 30.0,
    "chapter10_cold_seconds": 20.0,
    "reproduction_peak_gb": 1.5,
}


class ReferenceModel(nn.Module):
    """The same architecture from PyTorch's own layers: 69,709 parameters."""

    def __init__(self, num_heads: int, causal: bool, seed: int = 42):
        super().__init__()
        self.token_embedding = nn.Embedding(13, 64)
        self.position_embedding = nn.Embedding(15, 64)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(64, num_heads, 128, dropout=0.0, activation="gelu",
                                       batch_first=True, norm_first=True)
            for _ in range(2))
        self.final_norm = nn.LayerNorm(64)
        self.lm_head = nn.Linear(64, 13)
        self.causal = causal
        init_weights(self, seed)

    def forward(self, ids):
        length = ids.size(1)
        x = self.token_embedding(ids) + self.position_embedding(torch.arange(length, device=ids.device))
        mask = nn.Transformer.generate_square_subsequent_mask(length, device=ids.device) if self.causal else None
        for layer in self.layers:
            x = layer(x, src_mask=mask, is_causal=self.causal)
        return self.lm_head(self.final_norm(x))


def reference_reproduction(config: ExperimentConfig | None = None) -> dict:
    """The experiment the plain way: three groups one after another, a simple loop."""
    config = config or ExperimentConfig()
    start = time.perf_counter()
    splits = make_splits(config.data, config.task)
    train_x, train_y = split_inputs_labels(splits.train)
    val_x, val_y = split_inputs_labels(splits.val)
    schedule = batch_schedule(train_x.size(0), config.train)
    prompts, answers = splits.prompts("test"), splits.answers("test")
    results = {}
    for group in GROUPS:
        model = ReferenceModel(group.num_heads, group.causal, config.train.seed)
        if count_parameters(model) != 69_709:
            raise RuntimeError(f"the reference model has {count_parameters(model)} parameters, not 69,709")
        optimizer = torch.optim.Adam(model.parameters(), lr=config.train.learning_rate)

        def evaluate(x, y):
            model.eval()
            total, count = 0.0, 0
            with torch.no_grad():
                for i in range(0, x.size(0), 1024):
                    logits = model(x[i:i + 1024])
                    total += F.cross_entropy(logits.reshape(-1, 13), y[i:i + 1024].reshape(-1),
                                             ignore_index=IGNORE_INDEX, reduction="sum").item()
                    count += (y[i:i + 1024] != IGNORE_INDEX).sum().item()
            model.train()
            return total / count

        history = [(0, evaluate(train_x, train_y), evaluate(val_x, val_y))]
        for step, idx in enumerate(schedule, start=1):
            logits = model(train_x[idx])
            loss = F.cross_entropy(logits.reshape(-1, 13), train_y[idx].reshape(-1), ignore_index=IGNORE_INDEX)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.train.clip_norm, error_if_nonfinite=True)
            optimizer.step()
            if step % config.train.eval_every == 0:
                history.append((step, evaluate(train_x, train_y), evaluate(val_x, val_y)))
        model.eval()
        with torch.no_grad():
            tokens, finished = prompts.clone(), torch.zeros(prompts.size(0), dtype=torch.bool)
            for _ in range(SEQ_LEN + 1):
                nxt = model(tokens)[:, -1].argmax(-1)
                nxt[finished] = EOS
                finished |= nxt == EOS
                tokens = torch.cat([tokens, nxt[:, None]], dim=1)
        generated = tokens[:, PROMPT_LEN:]
        right = ((generated[:, :SEQ_LEN] == answers[:, :SEQ_LEN]).all(1) & (generated[:, SEQ_LEN] == EOS))
        results[group.name] = {"val_loss": history[-1][2], "sequence_accuracy": right.float().mean().item()}
    return {"seconds": time.perf_counter() - start, "groups": results}


def _pss_bytes(pid: int) -> int:
    """Proportional set size: private pages plus each shared page divided by its sharers."""
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) * 1024
    return 0


def _tree_rss_bytes(pid: int) -> int:
    """Memory of a process and all its descendants (Linux /proc).

    Summed as PSS, so that the shared libraries that every worker process maps
    (PyTorch's among them) count once, not once per process, as a plain sum of
    resident sizes would.
    """
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            children.setdefault(int(stat[stat.rindex(")") + 2:].split()[1]), []).append(int(entry.name))
        except (OSError, ValueError, IndexError):
            continue
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        try:
            total += _pss_bytes(p)
        except OSError:  # the process ended meanwhile
            pass
        stack.extend(children.get(p, []))
    return total


def _timed(command: list[str], env=None, sample_memory: bool = False) -> dict:
    """Run ``command``; its wall-clock seconds, and with ``sample_memory`` its peak memory.

    Sampling reads ``/proc`` for every process every 50 ms: on a 2-core
    machine that takes CPU from the command it measures (about a tenth of
    the reproduction's time, and more from a run of several processes than
    from one), so the timed rounds do not sample, and the peak comes from a
    separate round whose time is not used.
    """
    peak = [0]
    start = time.perf_counter()
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def sample():
        while proc.poll() is None:
            peak[0] = max(peak[0], _tree_rss_bytes(proc.pid))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True) if sample_memory else None
    if sampler:
        sampler.start()
    output, _ = proc.communicate()
    seconds = time.perf_counter() - start
    if sampler:
        sampler.join()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({proc.returncode}):\n{output[-3000:]}")
    return {"seconds": seconds, "peak_bytes": peak[0] if sample_memory else None, "output": output}


def _ours_command(work: Path, round_index: int) -> list[str]:
    out, cache = work / f"ours-{round_index}", work / f"cache-{round_index}"  # an empty cache: it trains
    return [sys.executable, "-m", "revformer", "reproduce", "--out", str(out), "--cache", str(cache),
            "--device", "cpu", "--quiet"]


def _reference_command() -> list[str]:
    return [sys.executable, "-c", "import json; from revformer.bench import reference_reproduction as r; "
            "print('RESULT', json.dumps(r()))"]


def matmul_rate(size: int = 1024, repeats: int = 20) -> float:
    """Floating-point operations per second of a large float32 matrix product here."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    a @ b
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    return 2 * size**3 * repeats / (time.perf_counter() - start)


def work_flops(config: ExperimentConfig | None = None) -> dict:
    """Floating-point operations of the reproduction: ~6 P N to train, ~2 P N to run forward."""
    config = config or ExperimentConfig()
    params = 69_709
    tokens = 2 * SEQ_LEN + 2
    groups = len(GROUPS)
    train = 6 * params * config.train.steps * config.train.batch_size * tokens * groups
    evaluations = config.train.steps // config.train.eval_every + 1
    evaluate = 2 * params * evaluations * (config.data.train_size + config.data.val_size) * tokens * groups
    prefix = sum(range(PROMPT_LEN, PROMPT_LEN + SEQ_LEN + 1))  # 8 + 9 + ... + 14 positions
    generation = 2 * params * prefix * config.data.test_size * (groups + 1)  # + the mask-off run
    return {"train": train, "evaluate": evaluate, "generate": generation,
            "total": train + evaluate + generation}


def step_times(steps: int = 100, rounds: int = 2) -> dict:
    """Seconds per training step, ours and the reference, per group (medians of rounds)."""
    config = ExperimentConfig()
    splits = make_splits(config.data, config.task)
    x, y = split_inputs_labels(splits.train)
    schedule = batch_schedule(x.size(0), config.train)
    result = {}
    for group in GROUPS:
        times = {"ours": [], "reference": []}
        for _ in range(rounds):
            for kind in ("ours", "reference"):
                if kind == "ours":
                    model = make_model(group.num_heads, 42, group.causal)
                    optimizer = make_optimizer(model, config.train.learning_rate)

                    def step(idx):
                        train_step(model, optimizer, x[idx], y[idx], 1.0)
                else:
                    model = ReferenceModel(group.num_heads, group.causal)
                    optimizer = torch.optim.Adam(model.parameters(), lr=config.train.learning_rate)

                    def step(idx):
                        logits = model(x[idx])
                        loss = F.cross_entropy(logits.reshape(-1, 13), y[idx].reshape(-1),
                                               ignore_index=IGNORE_INDEX)
                        optimizer.zero_grad()
                        loss.backward()
                        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
                        optimizer.step()
                model.train()
                for idx in schedule[:5]:
                    step(idx)
                start = time.perf_counter()
                for idx in schedule[5:5 + steps]:
                    step(idx)
                times[kind].append((time.perf_counter() - start) / steps)
        ours, ref = statistics.median(times["ours"]), statistics.median(times["reference"])
        result[group.name] = {"ours_ms": ours * 1e3, "reference_ms": ref * 1e3, "ratio": ours / ref}
    return result


def book_times(root: Path) -> dict:
    """A clean ``make book``, an unchanged rebuild, and chapter 10 cold with a warm cache."""
    if not ((root / "_config.yml").exists() and (root / "Makefile").exists()):
        raise ValueError(f"{root} is not the book's repository (no _config.yml and Makefile): "
                         "run the book benchmark from the repository's root")
    env = dict(os.environ)
    cache = root / "_build" / "revformer-cache"
    subprocess.run(["rm", "-rf", str(root / "_build")], check=True)
    clean = _timed(["make", "-C", str(root), "book"], env)
    again = _timed(["make", "-C", str(root), "book"], env)
    code = ("import time, nbformat; from nbclient import NotebookClient; t = time.perf_counter(); "
            "nb = nbformat.read('book/10_heatmaps.ipynb', 4); "
            "NotebookClient(nb, timeout=600, kernel_name='python3', resources={'metadata': {'path': 'book'}}).execute(); "
            "print('RESULT', time.perf_counter() - t)")
    env.update(REVFORMER_CACHE=str(cache), REVFORMER_PROGRESS="0")
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True)
    chapter = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"chapter 10 failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return {"clean_book_seconds": clean["seconds"], "rebuild_seconds": again["seconds"],
            "chapter10_cold_seconds": chapter}


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def run_benchmark(rounds: int = 3, book: bool = False, root: Path | None = None) -> dict:
    """Everything above; returns the JSON-able record."""
    record = {"date": time.strftime("%Y-%m-%d"), "machine": {
        "platform": platform.platform(), "processor": _cpu_name(),
        "cores": os.cpu_count(), "torch": torch.__version__, "threads": torch.get_num_threads()}}
    ours, reference = [], []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for r in range(rounds):
            order = ("ours", "reference") if r % 2 == 0 else ("reference", "ours")
            for kind in order:  # interleaved, alternating who goes first
                if kind == "ours":
                    ours.append(_timed(_ours_command(work, r)))
                else:
                    reference.append(_timed(_reference_command()))
        # the memory round: sampled, not timed
        ours_memory = _timed(_ours_command(work, rounds), sample_memory=True)
        reference_memory = _timed(_reference_command(), sample_memory=True)
    ours_s = statistics.median(t["seconds"] for t in ours)
    ref_s = statistics.median(t["seconds"] for t in reference)
    record["reproduction"] = {
        "ours_seconds": [t["seconds"] for t in ours], "reference_seconds": [t["seconds"] for t in reference],
        "ours_median": ours_s, "reference_median": ref_s, "ratio": ours_s / ref_s,
        "ours_peak_gb": ours_memory["peak_bytes"] / 1e9,
        "reference_peak_gb": reference_memory["peak_bytes"] / 1e9,
    }
    record["training_step"] = step_times(rounds=rounds)
    rate = matmul_rate()
    flops = work_flops()
    record["floor"] = {"matmul_gflops": rate / 1e9, "work_gflop": flops["total"] / 1e9,
                       "floor_seconds": flops["total"] / rate,
                       "ours_over_floor": ours_s / (flops["total"] / rate),
                       "reference_over_floor": ref_s / (flops["total"] / rate)}
    if book:
        record["book"] = book_times(root or Path.cwd())
    return record


def targets_table(record: dict) -> list[tuple[str, float, float, bool]]:
    rows = [("reproduction, ours / PyTorch-layers reference", record["reproduction"]["ratio"],
             TARGETS["reproduction_ratio"]),
            ("peak memory of the reproduction (GB)", record["reproduction"]["ours_peak_gb"],
             TARGETS["reproduction_peak_gb"])]
    if "book" in record:
        rows += [("clean make book (s)", record["book"]["clean_book_seconds"], TARGETS["clean_book_seconds"]),
                 ("unchanged rebuild (s)", record["book"]["rebuild_seconds"], TARGETS["rebuild_seconds"]),
                 ("chapter 10 cold, cache warm (s)", record["book"]["chapter10_cold_seconds"],
                  TARGETS["chapter10_cold_seconds"])]
    return [(name, value, target, value <= target) for name, value, target in rows]


def format_report(record: dict) -> str:
    rep, floor = record["reproduction"], record["floor"]
    lines = [f"benchmark of {record['date']} on {record['machine']['processor']}, "
             f"{record['machine']['cores']} cores, torch {record['machine']['torch']}", "",
             f"reproduction: ours median {rep['ours_median']:.1f} s {[round(s, 1) for s in rep['ours_seconds']]}, "
             f"reference median {rep['reference_median']:.1f} s {[round(s, 1) for s in rep['reference_seconds']]}",
             f"peak memory: ours {rep['ours_peak_gb']:.2f} GB, reference {rep['reference_peak_gb']:.2f} GB",
             "", "training step (ms)      ours   reference   ratio"]
    for name, row in record["training_step"].items():
        lines.append(f"  {name:<18} {row['ours_ms']:7.2f} {row['reference_ms']:10.2f} {row['ratio']:8.2f}")
    lines += ["", f"floor: {floor['work_gflop']:.0f} GFLOP of work at {floor['matmul_gflops']:.1f} GFLOP/s "
              f"= {floor['floor_seconds']:.1f} s; ours is {floor['ours_over_floor']:.1f}x the floor, "
              f"the reference {floor['reference_over_floor']:.1f}x", "",
              f"{'figure':<48} {'value':>8} {'target':>8}  met"]
    for name, value, target, met in targets_table(record):
        lines.append(f"{name:<48} {value:8.2f} {target:8.2f}  {'yes' if met else 'NO'}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="revformer bench", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--book", action="store_true", help="also time make book, a rebuild and chapter 10")
    parser.add_argument("--out", default="bench.json", help="where to write the JSON record")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    record = run_benchmark(args.rounds, args.book)
    write_json(args.out, record)
    print(format_report(record))
    print(f"\nwrote {args.out}")
    return 0 if all(met for *_, met in targets_table(record)) else 1


if __name__ == "__main__":
    sys.exit(main())
