import dataclasses
import itertools

import pytest
import torch

from revformer.config import DataConfig, ExperimentConfig, TrainConfig
from revformer.data import make_splits, split_inputs_labels
from revformer.model import make_model
from revformer.train import (batch_schedule, evaluate_loss, plan_budget, speed_test,
                             train_model)


def _train(config: ExperimentConfig, heads=4):
    splits = make_splits(config.data)
    tx, ty = split_inputs_labels(splits.train)
    vx, vy = split_inputs_labels(splits.val)
    model = make_model(heads, config.train.seed)
    schedule = batch_schedule(tx.size(0), config.train)
    return train_model(model, tx, ty, vx, vy, schedule, config.train)


def test_short_training_lowers_the_loss(small_config):
    result = _train(small_config)
    steps = [row[0] for row in result.history]
    assert steps == [0, 25, 50, 75, 100]
    assert result.history[-1][1] < 0.5 * result.history[0][1]
    assert result.history[-1][2] < 0.5 * result.history[0][2]
    assert not result.model.training


def test_same_seed_same_trace_and_weights(small_config):
    a, b = _train(small_config), _train(small_config)
    assert a.history == b.history
    for x, y in zip(a.model.state_dict().values(), b.model.state_dict().values()):
        assert torch.equal(x, y)


def test_batch_schedule_is_shared_and_private():
    config = TrainConfig()
    a = batch_schedule(8000, config)
    torch.manual_seed(123)  # the global generator does not matter
    b = batch_schedule(8000, config)
    assert a.shape == (600, 64) and torch.equal(a, b)
    assert int(a.max()) < 8000 and int(a.min()) >= 0


def test_evaluation_is_whole_set_and_restores_mode(small_config):
    splits = make_splits(small_config.data)
    x, y = split_inputs_labels(splits.val)
    model = make_model()
    model.train()
    whole = evaluate_loss(model, x, y)
    chunked = evaluate_loss(model, x, y, batch_size=7)
    assert model.training
    assert whole == pytest.approx(chunked, rel=1e-5)
    with torch.no_grad():
        logits, _ = model(x)
        direct = torch.nn.functional.cross_entropy(logits.reshape(-1, 13), y.reshape(-1), ignore_index=-100)
    assert whole == pytest.approx(direct.item(), rel=1e-5)


def test_clipping_raises_on_non_finite_gradients(small_config):
    splits = make_splits(small_config.data)
    tx, ty = split_inputs_labels(splits.train)
    model = make_model()
    model.lm_head.weight.register_hook(lambda grad: grad * float("nan"))  # finite loss, NaN gradient
    with pytest.raises(RuntimeError, match="non-finite"):
        train_model(model, tx, ty, tx[:10], ty[:10], batch_schedule(tx.size(0), small_config.train),
                    small_config.train)
    broken = make_model()
    with torch.no_grad():
        broken.lm_head.weight[0, 0] = float("nan")
    with pytest.raises(FloatingPointError, match="step 0"):  # caught before the first step
        train_model(broken, tx, ty, tx[:10], ty[:10], batch_schedule(tx.size(0), small_config.train),
                    small_config.train)


def test_budget_full_when_fast_and_lowered_alike_when_slow():
    config = TrainConfig()
    fast = plan_budget(0.01, config)
    assert fast.steps == 600 and not fast.lowered
    slow = plan_budget(2.0, config)  # 3 x 600 x 2 s = 3600 s > 1800 s
    assert slow.lowered and slow.steps == 300 and "lowered" in slow.reason
    crawling = plan_budget(1000.0, config)
    assert crawling.steps == config.eval_every


def test_speed_test_with_a_faked_slow_clock(small_config):
    splits = make_splits(small_config.data)
    tx, ty = split_inputs_labels(splits.train)
    config = TrainConfig()  # 600 steps, 20 timed steps, an 1800 s limit
    ticks = itertools.count(0.0, 400.0)  # every reading of the clock is 400 s later: 20 s a step
    budget = speed_test(tx, ty, config, "cpu", clock=lambda: next(ticks))
    assert budget.seconds_per_step == pytest.approx(20.0)
    assert budget.projected_seconds == pytest.approx(20.0 * 600 * 3)
    assert budget.lowered and budget.steps == 50  # 1800 s / (3 x 20 s) = 30 steps, at least one evaluation
    real = speed_test(tx, ty, config, "cpu")  # the real clock: how fast depends on the machine's load, not asserted
    assert real.seconds_per_step > 0 and real.projected_seconds == pytest.approx(real.seconds_per_step * 600 * 3)


@pytest.mark.parametrize("field, value", [("steps", 0), ("steps", 610), ("learning_rate", -1.0),
                                          ("batch_size", 2.5), ("clip_norm", 0)])
def test_bad_train_config(field, value):
    with pytest.raises(ValueError, match=field):
        dataclasses.replace(TrainConfig(), **{field: value})


def test_bad_data_config():
    with pytest.raises(ValueError, match="train_size"):
        DataConfig(train_size=0)
    with pytest.raises(ValueError, match="distinct"):
        make_splits(DataConfig(train_size=999_999))


@pytest.mark.parametrize("clip", [1.0, 1e9])  # clipping in the early steps, and never
def test_train_model_is_the_six_calls_with_torch_adam_bit_for_bit(small_config, clip):
    """The package's loop equals the step chapter 8 writes out by hand, to the last bit."""
    from revformer.train import answer_loss

    config = dataclasses.replace(small_config.train, clip_norm=clip, steps=50, eval_every=50)
    splits = make_splits(small_config.data)
    x, y = split_inputs_labels(splits.train)
    vx, vy = split_inputs_labels(splits.val)
    schedule = batch_schedule(x.size(0), config)
    ours = train_model(make_model(), x, y, vx, vy, schedule, config)
    model = make_model()
    optimizer = torch.optim.Adam(model.parameters(), lr=config.learning_rate, fused=True)
    clipped, losses = 0, []
    for idx in schedule:
        optimizer.zero_grad(set_to_none=True)
        logits, _ = model(x[idx])
        loss = answer_loss(logits, y[idx])
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), clip, error_if_nonfinite=True)
        optimizer.step()
        clipped += int(norm > clip)
        losses.append(loss.item())
    assert (clipped > 0) == (clip == 1.0)  # both cases really happen
    assert ours.batch_losses == losses
    for a, b in zip(ours.model.parameters(), model.parameters()):
        assert torch.equal(a, b)


def test_make_optimizer_is_torch_adam_with_default_settings():
    from revformer.train import make_optimizer

    optimizer = make_optimizer(make_model(), 3e-3)
    assert type(optimizer) is torch.optim.Adam
    group = optimizer.param_groups[0]
    assert (group["lr"], group["betas"], group["eps"], group["weight_decay"]) == (3e-3, (0.9, 0.999), 1e-8, 0)
    assert group["fused"] and len(group["params"]) == len(list(make_model().parameters()))


def test_batch_losses_are_recorded_for_every_step(small_config):
    result = _train(small_config)
    assert len(result.batch_losses) == small_config.train.steps
    assert all(isinstance(v, float) for v in result.batch_losses)
    assert result.batch_losses[-1] < result.batch_losses[0]


def test_the_runner_adds_a_curve_and_a_time_and_changes_no_weight(small_config):
    """run_training's progress bar, learning curve and clock sit around the taught
    loop: the losses and every weight are train_model's own, bit for bit."""
    from revformer.train import curve_point, run_training

    config = dataclasses.replace(small_config.train, curve_every=10, curve_until=20)
    splits = make_splits(small_config.data)
    tx, ty = split_inputs_labels(splits.train)
    vx, vy = split_inputs_labels(splits.val)
    schedule = batch_schedule(tx.size(0), config)
    plain = train_model(make_model(), tx, ty, vx, vy, schedule, config)
    steps_seen = []
    run = run_training(make_model(), tx, ty, vx, vy, schedule, config, progress=True,
                       on_step=steps_seen.append)
    assert run.batch_losses == plain.batch_losses and run.history == plain.history
    for a, b in zip(run.model.state_dict().values(), plain.model.state_dict().values()):
        assert torch.equal(a, b)
    assert steps_seen == list(range(1, config.steps + 1))
    assert [point[0] for point in run.curve] == config.curve_steps(config.steps)
    assert plain.curve == [] and plain.seconds == 0.0 and run.seconds > 0
    # the last point is the trained model's: its loss is the history's last
    assert run.curve[-1][1] == run.history[-1][2]
    assert run.curve[-1] == (config.steps, *curve_point(run.model, vx, vy))


@pytest.mark.parametrize("rows", [0, 30])
def test_a_schedule_of_no_steps_or_a_broken_multiple_is_refused(small_config, rows):
    splits = make_splits(small_config.data)
    tx, ty = split_inputs_labels(splits.train)
    schedule = batch_schedule(tx.size(0), small_config.train)[:rows]
    with pytest.raises(ValueError, match="positive multiple of 25"):
        train_model(make_model(), tx, ty, tx[:10], ty[:10], schedule, small_config.train)
