"""The controls of chapters 16 and 17 (revformer.controls) and the paired layouts of revformer.seeds_plots."""
import dataclasses
import math

import matplotlib

matplotlib.use("Agg")

import pytest
import torch

from revformer.config import ExperimentConfig, group
from revformer.controls import (BATCH_SEEDS, DATA_SEEDS, answer_margins, at_learning_rate, at_step,
                                layer0_per_sample, order_and_draw, scaled_scores)
from revformer.data import make_splits, split_inputs_labels
from revformer.model import make_model
from revformer.seeds_plots import paired_table, plot_paired_slope_panels, plot_paired_slopes, plot_seed_strips
from revformer.stats import paired
from revformer.sweep import layer0_weights


def test_order_and_draw_changes_one_seed_at_a_time():
    base = ExperimentConfig()
    settings = order_and_draw(base)
    assert [label for label, _ in settings] == [
        "book's (batch 1234, data 2024)", "batch_seed 1235", "batch_seed 1236", "data seed 2025", "data seed 2026"]
    assert settings[0][1] == base
    for (label, c), b in zip(settings[1:3], BATCH_SEEDS):
        assert c.train == dataclasses.replace(base.train, batch_seed=b) and c.data == base.data and c.model == base.model
    for (label, c), d in zip(settings[3:], DATA_SEEDS):
        assert c.data == dataclasses.replace(base.data, seed=d) and c.train == base.train
    assert len({c for _, c in settings}) == 5  # five different configurations, so five cache keys
    with pytest.raises(ValueError, match="configuration's own"):
        order_and_draw(base, batch_seeds=(1234,))
    with pytest.raises(ValueError, match="configuration's own"):
        order_and_draw(base, data_seeds=(2024,))


def test_another_data_seed_draws_other_splits_and_the_same_sizes():
    base = ExperimentConfig()
    other = order_and_draw(base)[3][1]
    a, b = make_splits(base.data, base.task), make_splits(other.data, other.task)
    assert a.train.shape == b.train.shape and not torch.equal(a.train, b.train)


def test_scaled_scores_changes_the_multiplier_and_the_steps_only():
    base = ExperimentConfig()
    sharp = scaled_scores(base, 2.0, steps=100)
    assert sharp.model == dataclasses.replace(base.model, score_multiplier=2.0)
    assert sharp.train == dataclasses.replace(base.train, steps=100) and sharp.data == base.data
    assert scaled_scores(base, 0.5).train == base.train
    with pytest.raises(ValueError, match="score_multiplier"):
        scaled_scores(base, 0.0)
    with pytest.raises(ValueError, match="multiple of eval_every"):
        scaled_scores(base, 2.0, steps=120)


def test_at_learning_rate_changes_the_rate_and_the_steps_only():
    base = ExperimentConfig()
    fast = at_learning_rate(base, 1e-2, steps=100)
    assert fast.train == dataclasses.replace(base.train, learning_rate=1e-2, steps=100)
    assert fast.model == base.model and fast.data == base.data
    assert at_learning_rate(base, 1e-3).train.steps == base.train.steps
    with pytest.raises(ValueError, match="learning_rate"):
        at_learning_rate(base, 0.0)


def test_a_score_multiplier_keeps_the_initial_weights():
    """The temperature control is paired: same start, only the scores scaled."""
    base = ExperimentConfig()
    plain = make_model(4, 3, config=base.model)
    sharp = make_model(4, 3, config=scaled_scores(base, 2.0).model)
    assert all(torch.equal(p, q) for p, q in zip(plain.parameters(), sharp.parameters()))


def test_one_head_scores_are_twice_the_mean_of_four_heads_scores_for_the_same_weights():
    """The confound chapter 17 controls: q.k/8 summed over the four slices = 2 x mean of q_h.k_h/4."""
    torch.manual_seed(0)
    q, k = torch.randn(5, 64), torch.randn(5, 64)
    one = (q * k).sum(-1) / math.sqrt(64)
    four = torch.stack([(q[:, 16 * h:16 * (h + 1)] * k[:, 16 * h:16 * (h + 1)]).sum(-1) / math.sqrt(16)
                        for h in range(4)])
    assert torch.allclose(one, 2 * four.mean(0))


def test_at_step_reads_a_recorded_step_and_refuses_another():
    curve = [(0, 2.5, 0.0), (10, 1.0, 0.25), (20, 0.5, 1.0)]
    assert at_step(curve, 10) == (1.0, 0.25)
    with pytest.raises(ValueError, match="not a recorded step"):
        at_step(curve, 15)


def test_margins_and_per_sample_weights_agree_with_the_package():
    base = ExperimentConfig()
    splits = make_splits(base.data, base.task)
    x, y = split_inputs_labels(splits.test)
    model = make_model(4, 0)
    model.train()
    margins = answer_margins(model, x[:32], y[:32])
    assert margins.shape == (32, 7) and model.training  # mode restored
    logits, _ = model.eval()(x[:32])
    right = logits[:, 7:14].gather(-1, y[:32, 7:14].unsqueeze(-1)).squeeze(-1)
    wrong = logits[:, 7:14].scatter(-1, y[:32, 7:14].unsqueeze(-1), float("-inf")).amax(-1)
    assert torch.allclose(margins, right - wrong)
    model.train()
    reversal, next_answer = layer0_per_sample(model, x[:64])
    assert reversal.shape == next_answer.shape == (64,) and model.training
    mean_reversal, mean_next = layer0_weights(model, x[:64])
    assert reversal.mean().item() == pytest.approx(mean_reversal, abs=1e-6)
    assert next_answer.mean().item() == pytest.approx(mean_next, abs=1e-6)


def test_paired_table_writes_signed_differences_ratios_and_the_p_value():
    seeds = [42, 0, 1]
    loss = paired([2.0, 2.0, 4.0], [2.2, 2.1, 4.4], seeds, log=True)
    accuracy = paired([0.5, 0.875, 0.25], [1.0, 1.0, 1.0], seeds)
    text = paired_table([("loss", loss, "ratio"), ("accuracy", accuracy, "pp")], seeds)
    lines = text.splitlines()
    assert lines[0].startswith("| second vs first | seed 42 | seed 0 | seed 1 |")
    assert lines[2].startswith("| loss | ×1.100 | ×1.050 | ×1.100 | 3 / 0 |")
    assert lines[3].startswith("| accuracy | +50.0 | +12.5 | +75.0 | 3 / 0 |")
    assert lines[3].endswith(f"| {accuracy.p_value:.3g} |") and accuracy.p_value == 0.25  # the floor for 3 pairs
    with pytest.raises(ValueError, match="differences for 2 seeds"):
        paired_table([("loss", loss, "ratio")], [42, 0])


def test_the_paired_figures_draw():
    fig = plot_paired_slopes([("four_heads", [0.4, 0.9]), ("one_head", [1.0, 1.0])], [42, 0], highlight_seed=42,
                             ylabel="accuracy")
    ax = fig.axes[0]
    assert len(ax.lines) == 2 and [t.get_text() for t in ax.get_xticklabels()] == ["four_heads", "one_head"]
    fig = plot_paired_slope_panels([("hot", [("four_heads", [0.4, 0.9]), ("one_head", [1.0, 1.0])]),
                                    ("cold", [("four_heads", [0.1, 0.2]), ("one_head", [0.5, 0.3])])],
                                   [42, 0], highlight_seed=42)
    assert [a.get_title() for a in fig.axes] == ["hot", "cold"] and all(len(a.lines) == 2 for a in fig.axes)
    rows = [{"group": g, "seed": s, "first_perfect_step": step}
            for g, steps in (("four_heads", (30, 30)), ("one_head", (20, 20))) for s, step in zip((42, 0), steps)]
    fig = plot_seed_strips(rows, ["first_perfect_step"], columns=1)
    assert list(fig.axes[0].get_yticks()) == [10, 20, 30, 40]
