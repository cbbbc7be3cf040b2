"""Training: the loss over supervised targets, whole-set evaluation, the
shared batch schedule, the speed test that sets the budget, and the loop.
"""
from __future__ import annotations

import dataclasses
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from .config import TrainConfig
from .data import IGNORE_INDEX, PROMPT_LEN
from .model import make_model


def answer_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over the supervised targets only.

    ``logits`` ``[B,T,13]``, ``labels`` ``[B,T]`` with -100 where ignored.
    With 7 targets a sample the denominator is B*7, not B*14.
    """
    return F.cross_entropy(
        logits.reshape(-1, logits.size(-1)), labels.reshape(-1),
        ignore_index=IGNORE_INDEX,
    )


# The first supervised target: position 7 (SEP) predicts the first answer digit.
FIRST_TARGET = PROMPT_LEN - 1


def evaluate_loss(model, inputs, labels, batch_size: int = 512) -> float:
    """Mean cross-entropy over every supervised target of a whole set.

    In ``eval()`` mode (dropout off) and without building a graph
    (``inference_mode``): the two switches do different jobs. The model's
    train/eval mode is restored afterwards. Batches of 512 keep each layer's
    activations in the processor's cache, which is faster here than one
    huge batch.
    """
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    total, count = 0.0, 0
    with torch.inference_mode():
        for start in range(0, inputs.size(0), batch_size):
            x = inputs[start:start + batch_size].to(device)
            y = labels[start:start + batch_size].to(device)
            logits, _ = model(x)  # [B,14,13]
            total += F.cross_entropy(
                logits.reshape(-1, logits.size(-1)), y.reshape(-1),
                ignore_index=IGNORE_INDEX, reduction="sum",
            ).item()
            count += int((y != IGNORE_INDEX).sum())
    model.train(was_training)
    return total / count


def batch_schedule(train_size: int, config: TrainConfig | None = None) -> torch.Tensor:
    """The ``[steps,batch]`` training indices, drawn once from their own generator.

    Every group trains on exactly these batches in this order, so the groups
    differ only in heads or mask. A lowered budget uses the first rows.
    """
    config = config or TrainConfig()
    generator = torch.Generator().manual_seed(config.batch_seed)
    return torch.randint(train_size, (config.steps, config.batch_size),
                         generator=generator)


def resolve_device(device: str | torch.device | None = "auto") -> torch.device:
    """``'auto'`` -> CUDA when there is a GPU, else the CPU."""
    if device is None or str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(f"device must be 'auto', 'cpu' or 'cuda', "
                         f"got {device!r}") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was asked for, but PyTorch sees no GPU; "
                         "use 'auto' or 'cpu'")
    if device.type not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'auto', 'cpu' or 'cuda', got {str(device)!r}")
    return device


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def make_optimizer(model, learning_rate: float) -> torch.optim.Adam:
    """``torch.optim.Adam`` over every parameter, with PyTorch's default betas and eps.

    ``fused=True`` asks PyTorch for its one-kernel update: the same update
    rule in fewer operations, rounded differently, so the weights differ from
    the plain loop's in the last digits; it exists for parameters on a CPU or
    a CUDA GPU.
    """
    device = next(model.parameters()).device
    return torch.optim.Adam(model.parameters(), lr=learning_rate,
                            fused=device.type in ("cpu", "cuda"))


@torch.enable_grad()  # training needs gradients, even if the caller has turned them off
def train_step(model, optimizer, x, y, clip_norm: float) -> torch.Tensor:
    """One update: clear gradients, forward, loss, backward, clip, Adam step; the
    batch loss.

    ``x`` and ``y`` are ``[B,14]`` inputs and labels; the loss reads the
    positions whose label is not -100 (7-13).
    """
    optimizer.zero_grad(set_to_none=True)
    logits, _ = model(x)  # [B,14,13]
    loss = answer_loss(logits, y)
    loss.backward()
    # Rescales all gradients together when their L2 norm exceeds clip_norm;
    # a NaN or inf norm raises instead of silently poisoning the weights.
    torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm,
                                   error_if_nonfinite=True)
    optimizer.step()
    return loss.detach()


@dataclass(frozen=True)
class Budget:
    """How many steps each group trains, and why."""

    requested_steps: int
    steps: int
    seconds_per_step: float | None
    projected_seconds: float | None
    limit_seconds: float
    groups: int
    reason: str
    seconds_per_evaluation: float | None = None  # both whole-set losses, once
    # generating the validation answers, once
    seconds_per_curve_point: float | None = None

    @property
    def lowered(self) -> bool:
        return self.steps < self.requested_steps

    def seconds_per_run(self, config: TrainConfig,
                        steps: int | None = None) -> float | None:
        """About how long one run of ``steps`` (default ``self.steps``) takes here,
        evaluations included.

        From the speed test's timings (None without them): the updates, the
        whole-set evaluations and the curve points. The evaluations cost
        about as much as the updates, so the updates alone would promise half
        the time.
        """
        if self.seconds_per_step is None:
            return None
        steps = self.steps if steps is None else steps
        evaluations = steps // config.eval_every + 1
        return (
            self.seconds_per_step * steps
            + (self.seconds_per_evaluation or 0.0) * evaluations
            + (self.seconds_per_curve_point or 0.0) * len(config.curve_steps(steps))
        )


def plan_budget(seconds_per_step: float, config: TrainConfig,
                groups: int = 3) -> Budget:
    """Full budget unless the projected time of all groups is over the limit;
    then every group's steps are lowered alike, to a multiple of ``eval_every``."""
    projected = seconds_per_step * config.steps * groups
    if projected <= config.time_limit_seconds:
        return Budget(config.steps, config.steps, seconds_per_step, projected,
                      config.time_limit_seconds, groups,
                      f"projected {projected:.0f} s for {groups} groups is within the "
                      f"{config.time_limit_seconds:.0f} s limit: "
                      f"full {config.steps} steps")
    affordable = config.time_limit_seconds / (seconds_per_step * groups)
    steps = max(config.eval_every,
                int(affordable // config.eval_every) * config.eval_every)
    return Budget(config.steps, steps, seconds_per_step, projected,
                  config.time_limit_seconds, groups,
                  f"projected {projected:.0f} s for {groups} groups is over the "
                  f"{config.time_limit_seconds:.0f} s limit: "
                  f"every group lowered to {steps} steps")


def speed_test(train_inputs, train_labels, config: TrainConfig, device, groups: int = 3,
               clock=time.perf_counter, validation_rows: int = 1000,
               model_config=None) -> Budget:
    """Time ``speed_test_steps`` updates of a throw-away model, then plan the budget.

    The throw-away model is seeded apart from the real ones and discarded, so
    these steps never count towards any group's training. One evaluation and
    one curve point are timed too (on ``validation_rows`` rows, the size of
    the validation set), for the estimate of the wait (``Budget.seconds_per_run``).
    ``model_config`` is the model's (default ``ModelConfig()``).
    """
    device = resolve_device(device)
    model = make_model(seed=config.seed + 1, config=model_config, device=device)
    optimizer = make_optimizer(model, config.learning_rate)
    generator = torch.Generator().manual_seed(config.batch_seed + 1)
    batches = torch.randint(train_inputs.size(0),
                            (config.speed_test_steps + 1, config.batch_size),
                            generator=generator)
    x_all, y_all = train_inputs.to(device), train_labels.to(device)
    # warm-up
    train_step(model, optimizer, x_all[batches[0]], y_all[batches[0]], config.clip_norm)
    _sync(device)
    start = clock()
    for idx in batches[1:]:
        train_step(model, optimizer, x_all[idx], y_all[idx], config.clip_norm)
    _sync(device)
    seconds_per_step = (clock() - start) / config.speed_test_steps
    start = clock()
    evaluate_loss(model, x_all, y_all)
    evaluate_loss(model, x_all[:validation_rows], y_all[:validation_rows])
    evaluation = clock() - start
    point = None
    # generation reads the book's layout; a run without a curve never generates
    if config.curve_every:
        start = clock()
        curve_point(model, x_all[:validation_rows], y_all[:validation_rows],
                    val_loss=0.0)
        point = clock() - start
    return dataclasses.replace(plan_budget(seconds_per_step, config, groups),
                               seconds_per_evaluation=evaluation,
                               seconds_per_curve_point=point)


def progress_enabled(progress: bool | None) -> bool:
    """``None`` -> on, unless the environment variable ``REVFORMER_PROGRESS=0``."""
    if progress is None:
        return os.environ.get("REVFORMER_PROGRESS", "1") not in ("0", "false", "no")
    return bool(progress)


@dataclass
class TrainResult:
    """A trained model and its record."""

    model: torch.nn.Module
    history: list = field(default_factory=list)  # (step, train_loss, val_loss)
    # the loss of each step's batch, steps 1..N
    batch_losses: list = field(default_factory=list)
    seconds: float = 0.0
    steps: int = 0
    curve: list = field(default_factory=list)  # (step, val_loss, val_sequence_accuracy)


def curve_point(model, val_inputs, val_labels,
                val_loss: float | None = None) -> tuple[float, float]:
    """Validation loss and greedy sequence accuracy: can the model write the
    answers yet?

    The answers are generated from the prompts alone (``val_inputs[:, :8]``)
    and compared with the true ones (``val_labels[:, 7:]``: six digits and
    EOS). A model that uses the causal mask generates with a KV cache: the
    same tokens, and each step computes only its new position.
    """
    from .generate import generate, score, uses_mask

    val_loss = (evaluate_loss(model, val_inputs, val_labels) if val_loss is None
                else val_loss)
    generated = generate(model, val_inputs[:, :PROMPT_LEN], kv_cache=uses_mask(model))
    return val_loss, score(generated, val_labels[:, FIRST_TARGET:]).sequence_accuracy


def train_model(model, train_inputs, train_labels, val_inputs, val_labels, schedule,
                config: TrainConfig | None = None,
                after_step: Callable[[int, TrainResult], None] | None = None
                ) -> TrainResult:
    """Adam on the shared ``schedule``, whole-set losses every ``eval_every`` steps.

    ``schedule`` is ``[steps,batch]`` training indices (see ``batch_schedule``).
    Records step 0 (before any update) and every ``eval_every`` steps after;
    a NaN or inf loss stops the run. The losses read every position with a
    label, so data of other layouts (chapter 21's lengths) train with the same
    loop. ``after_step(step, result)``, if given, runs at step 0 and after
    every update: ``run_training`` draws its progress bar and records the
    learning curve there.
    """
    config = config or TrainConfig()
    if (schedule.dim() != 2 or schedule.size(0) == 0
            or schedule.size(0) % config.eval_every != 0):
        raise ValueError(
            f"schedule must be [steps,batch] with steps a positive multiple of "
            f"{config.eval_every}, got {list(schedule.shape)}"
        )
    device = next(model.parameters()).device
    train_x, train_y = train_inputs.to(device), train_labels.to(device)
    val_x, val_y = val_inputs.to(device), val_labels.to(device)
    optimizer = make_optimizer(model, config.learning_rate)
    result = TrainResult(model, steps=schedule.size(0))

    def evaluate(step):  # both whole-set losses, in eval mode
        row = (step, evaluate_loss(model, train_x, train_y),
               evaluate_loss(model, val_x, val_y))
        if not all(math.isfinite(loss) for loss in row[1:]):
            raise FloatingPointError(f"loss became non-finite at step {step}: {row}")
        result.history.append(row)

    evaluate(0)
    if after_step is not None:
        after_step(0, result)
    for step, idx in enumerate(schedule.to(device), start=1):
        loss = train_step(model, optimizer, train_x[idx], train_y[idx],
                          config.clip_norm)
        # a tensor: reading its value now (.item()) would make the CPU wait for a GPU
        result.batch_losses.append(loss)
        if step % config.eval_every == 0:
            evaluate(step)
        if after_step is not None:
            after_step(step, result)
    # the values, with one wait at the end
    result.batch_losses = torch.stack(result.batch_losses).tolist()
    model.eval()
    return result


def run_training(model, train_inputs, train_labels, val_inputs, val_labels, schedule,
                 config: TrainConfig | None = None, progress: bool | None = None,
                 description: str = "training",
                 on_step: Callable[[int], None] | None = None) -> TrainResult:
    """``train_model`` with what a recorded run adds around it: the learning
    curve at ``config.curve_steps``, a progress bar, the wall-clock time.

    None of it changes the training: the weights and losses are those of
    ``train_model`` alone. ``on_step(step)``, if given, is called after every
    update: a worker process reports its progress to its caller with it.
    """
    from tqdm.auto import tqdm  # imported here: the notebook flavour needs ipywidgets

    config = config or TrainConfig()
    device = next(model.parameters()).device
    val_x, val_y = val_inputs.to(device), val_labels.to(device)
    curve_steps = set(config.curve_steps(schedule.size(0)))
    curve = []

    def record(step, result):
        if step in curve_steps:  # the validation loss of this step, if it was evaluated
            val_loss = result.history[-1][2] if result.history[-1][0] == step else None
            curve.append((step, *curve_point(model, val_x, val_y, val_loss)))
        if step:
            bar.update(1)
            bar.set_postfix(train=f"{result.history[-1][1]:.4f}",
                            val=f"{result.history[-1][2]:.4f}", refresh=False)
            if on_step is not None:
                on_step(step)

    with tqdm(total=schedule.size(0), desc=description,
              disable=not progress_enabled(progress), leave=False,
              dynamic_ncols=True) as bar:
        start = time.perf_counter()
        result = train_model(model, train_inputs, train_labels, val_inputs, val_labels,
                             schedule, config, after_step=record)
        _sync(device)
        seconds = time.perf_counter() - start
    return dataclasses.replace(result, seconds=seconds, curve=curve)
