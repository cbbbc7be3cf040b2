"""The eight files that ``revformer reproduce`` writes, each written atomically."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .config import ExperimentConfig, TrainConfig
from .data import format_tokens
from .experiment import Experiment, load_experiment
from .files import atomic_path, write_csv, write_json

ARTIFACTS = (
    "config.json",
    "losses_full.csv",
    "losses_ablation.csv",
    "ablation.csv",
    "predictions.csv",
    "attention_sample0.npz",
    "head_stats.csv",
    "mask_toggle.json",
)


def _digits(row) -> str:
    return "".join(str(int(t)) for t in row)


def write_artifacts(experiment: Experiment, out_dir) -> list[Path]:
    """Write every artifact of ``experiment`` into ``out_dir``; return their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    exp = experiment

    write_json(out / "config.json", exp.config_record())

    write_csv(out / "losses_full.csv", ["step", "train_loss", "val_loss"],
              exp.run("four_heads").history)
    write_csv(out / "losses_ablation.csv", ["group", "step", "train_loss", "val_loss"],
              [(name, *row) for name, run in exp.runs.items() for row in run.history])

    ablation = exp.ablation()
    write_csv(out / "ablation.csv", list(ablation[0]), [list(r.values()) for r in ablation])

    generated, scores = exp.generated("four_heads"), exp.scores("four_heads")
    prompts, answers = exp.splits.prompts("test"), exp.splits.answers("test")
    write_csv(out / "predictions.csv",
              ["index", "prompt", "target", "prediction", "digits_correct", "sequence_correct"],
              [(i, _digits(prompts[i, 1:-1]), _digits(answers[i, :-1]), format_tokens(generated[i]),
                int(scores.digits_correct[i]), int(scores.sequence_correct[i]))
               for i in range(prompts.size(0))])

    arrays = {"tokens": exp.test_inputs[0].numpy()}
    for name in exp.runs:
        arrays[name] = exp.attention(name)
    if "four_heads" in exp.runs:
        arrays["four_heads_mask_off"] = exp.attention("four_heads", causal=False)
    with atomic_path(out / "attention_sample0.npz") as tmp:
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)

    stats = exp.head_stats()
    write_csv(out / "head_stats.csv", list(stats[0]), [list(r.values()) for r in stats])

    write_json(out / "mask_toggle.json", exp.mask_toggle())
    return [out / name for name in ARTIFACTS]


def reproduce(out_dir, device="auto", cache_dir=None, progress=None, seed: int | None = None) -> Experiment:
    """Train (or load) all three groups, analyse them and write the artifacts.

    ``seed``: the models' initial weights (``None``: the build's seed, see
    ``revformer.config.default_seed``).
    """
    train = TrainConfig() if seed is None else TrainConfig(seed=seed)
    experiment = load_experiment(ExperimentConfig(train=train), device=device, cache_dir=cache_dir,
                                 progress=progress, always_speed_test=True)
    write_artifacts(experiment, out_dir)
    return experiment
