"""Training: the loss over supervised targets, whole-set evaluation, the
shared batch schedule, the speed test that sets the budget, and the loop.
"""
from __future__ import annotations

import math
import os
import time
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
        logits.reshape(-1, logits.size(-1)), labels.reshape(-1), ignore_index=IGNORE_INDEX
    )


# The first supervised target: position 7 (SEP) predicts the first answer digit.
# Loss computations ask the model for logits from here on (``logits_from``).
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
            logits, _ = model(x, logits_from=FIRST_TARGET)  # [B,7,13]
            total += F.cross_entropy(
                logits.reshape(-1, logits.size(-1)), y[:, FIRST_TARGET:].reshape(-1),
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
    return torch.randint(train_size, (config.steps, config.batch_size), generator=generator)


def resolve_device(device: str | torch.device | None = "auto") -> torch.device:
    """``'auto'`` -> CUDA when there is a GPU, else the CPU."""
    if device is None or str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(f"device must be 'auto', 'cpu' or 'cuda', got {device!r}") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was asked for, but PyTorch sees no GPU; use 'auto' or 'cpu'")
    if device.type not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'auto', 'cpu' or 'cuda', got {str(device)!r}")
    return device


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class Adam:
    """Adam with PyTorch's default settings, over one flat vector of all gradients.

    For a parameter ``p`` with gradient ``g``, at step ``t``:

        m <- m + (1 - beta1) (g - m)          running mean of gradients
        v <- beta2 v + (1 - beta2) g^2        running mean of squared gradients
        p <- p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)

    the update of ``torch.optim.Adam(params, lr)``. Chapter 8 trains with
    ``torch.optim.Adam`` itself; this class does the same arithmetic with
    less overhead, for the package's own training:

    - Every parameter's ``.grad`` is a view into one flat buffer, so
      ``backward()`` writes all gradients into one vector of 69,709 numbers.
      Clipping and the update are then a few operations on that vector, not
      a few per parameter tensor (twenty of them), and the new weights reach
      the parameters by one list addition.
    - Building any ``torch.optim`` optimizer imports PyTorch's compiler
      (``torch._dynamo``, with sympy): a second of CPU in every process that
      trains, which this class never pays.

    Unlike ``torch.optim.Adam``, a parameter whose ``.grad`` is ``None`` at
    ``step()`` counts as a zero gradient, not as skipped: in this model
    every parameter takes part in every forward pass, so the two agree.
    """

    def __init__(self, parameters, lr: float, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8):
        if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not lr > 0:
            raise ValueError(f"learning rate must be a positive number, got {lr!r}")
        if len(betas) != 2 or not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError(f"betas must be two numbers in [0, 1), got {betas!r}")
        self.params = [p for p in parameters if p.requires_grad]
        if not self.params:
            raise ValueError("Adam got no parameters that require gradients")
        first = self.params[0]
        if any(p.device != first.device or p.dtype != first.dtype for p in self.params):
            raise ValueError("Adam needs every parameter on one device with one dtype")
        self.lr, self.betas, self.eps = float(lr), tuple(betas), float(eps)
        self.steps = 0
        total = sum(p.numel() for p in self.params)
        flat = dict(dtype=first.dtype, device=first.device)
        self.grad = torch.zeros(total, **flat)        # every .grad is a view of this
        self.exp_avg = torch.zeros(total, **flat)     # m
        self.exp_avg_sq = torch.zeros(total, **flat)  # v
        self._update = torch.zeros(total, **flat)     # the change of the weights at one step
        self._grad_views, self._update_views, offset = [], [], 0
        for p in self.params:
            n = p.numel()
            self._grad_views.append(self.grad[offset:offset + n].view_as(p))
            self._update_views.append(self._update[offset:offset + n].view_as(p))
            offset += n

    def _attach_grads(self) -> None:
        """Make every ``.grad`` its view of the flat buffer again, keeping its values."""
        for p, view in zip(self.params, self._grad_views):
            if p.grad is not view:
                if p.grad is None:
                    view.zero_()
                else:
                    view.copy_(p.grad)
                p.grad = view

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Zero every gradient (PyTorch would add the next ones to the old).

        The gradients stay in place as zeros, views of the flat buffer, so
        ``backward()`` adds into them; ``set_to_none`` is accepted for
        ``torch.optim`` compatibility and makes no difference here.
        """
        self.grad.zero_()
        self._attach_grads()

    @torch.no_grad()
    def clip_grad_norm_(self, max_norm: float, error_if_nonfinite: bool = True) -> torch.Tensor:
        """``torch.nn.utils.clip_grad_norm_`` over all gradients, with the same rounding.

        Returns the L2 norm of all gradients together (the norm of the
        per-tensor norms, as PyTorch computes it) before clipping, then
        scales every gradient by ``min(1, max_norm / (norm + 1e-6))``: one
        multiplication of the flat buffer. A NaN or inf norm raises.
        """
        self._attach_grads()
        norm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(self._grad_views)))
        if error_if_nonfinite and not bool(torch.isfinite(norm)):
            raise RuntimeError(f"the total norm of the gradients is non-finite ({norm.item()}): "
                               "training diverged")
        self.grad.mul_((max_norm / (norm + 1e-6)).clamp_(max=1.0))
        return norm

    @torch.no_grad()
    def step(self) -> None:
        """One Adam update of every parameter."""
        self._attach_grads()
        self.steps += 1
        beta1, beta2 = self.betas
        self.exp_avg.lerp_(self.grad, 1 - beta1)
        self.exp_avg_sq.mul_(beta2).addcmul_(self.grad, self.grad, value=1 - beta2)
        denom = (self.exp_avg_sq.sqrt() / (1 - beta2 ** self.steps) ** 0.5).add_(self.eps)
        step_size = self.lr / (1 - beta1 ** self.steps)
        torch.mul(self.exp_avg, -step_size, out=self._update).div_(denom)
        torch._foreach_add_(self.params, self._update_views)


def make_optimizer(model, learning_rate: float) -> Adam:
    """The optimizer of every group's training: ``Adam`` above, over all parameters."""
    return Adam(model.parameters(), learning_rate)


def _update(model, optimizer, x, y, clip_norm: float) -> torch.Tensor:
    """One step: clear gradients, forward, loss, backward, clip, Adam update."""
    optimizer.zero_grad(set_to_none=True)
    logits, _ = model(x, logits_from=FIRST_TARGET)  # [B,7,13]: the positions with targets
    loss = answer_loss(logits, y[:, FIRST_TARGET:])
    loss.backward()
    # Rescales all gradients together when their L2 norm exceeds clip_norm;
    # a NaN or inf norm raises instead of silently poisoning the weights.
    optimizer.clip_grad_norm_(clip_norm, error_if_nonfinite=True)
    optimizer.step()
    return loss


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

    @property
    def lowered(self) -> bool:
        return self.steps < self.requested_steps


def plan_budget(seconds_per_step: float, config: TrainConfig, groups: int = 3) -> Budget:
    """Full budget unless the projected time of all groups is over the limit;
    then every group's steps are lowered alike, to a multiple of ``eval_every``."""
    projected = seconds_per_step * config.steps * groups
    if projected <= config.time_limit_seconds:
        return Budget(config.steps, config.steps, seconds_per_step, projected,
                      config.time_limit_seconds, groups,
                      f"projected {projected:.0f} s for {groups} groups is within the "
                      f"{config.time_limit_seconds:.0f} s limit: full {config.steps} steps")
    affordable = config.time_limit_seconds / (seconds_per_step * groups)
    steps = max(config.eval_every, int(affordable // config.eval_every) * config.eval_every)
    return Budget(config.steps, steps, seconds_per_step, projected, config.time_limit_seconds,
                  groups,
                  f"projected {projected:.0f} s for {groups} groups is over the "
                  f"{config.time_limit_seconds:.0f} s limit: every group lowered to {steps} steps")


def speed_test(train_inputs, train_labels, config: TrainConfig, device, groups: int = 3,
               clock=time.perf_counter) -> Budget:
    """Time ``speed_test_steps`` updates of a throw-away model, then plan the budget.

    The throw-away model is seeded apart from the real ones and discarded, so
    these steps never count towards any group's training.
    """
    device = resolve_device(device)
    model = make_model(seed=config.seed + 1, device=device)
    optimizer = make_optimizer(model, config.learning_rate)
    generator = torch.Generator().manual_seed(config.batch_seed + 1)
    batches = torch.randint(train_inputs.size(0), (config.speed_test_steps + 1, config.batch_size),
                            generator=generator)
    x_all, y_all = train_inputs.to(device), train_labels.to(device)
    _update(model, optimizer, x_all[batches[0]], y_all[batches[0]], config.clip_norm)  # warm-up
    _sync(device)
    start = clock()
    for idx in batches[1:]:
        _update(model, optimizer, x_all[idx], y_all[idx], config.clip_norm)
    _sync(device)
    seconds_per_step = (clock() - start) / config.speed_test_steps
    return plan_budget(seconds_per_step, config, groups)


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
    seconds: float = 0.0
    steps: int = 0
    snapshots: list = field(default_factory=list)  # (step, state_dict), with evaluate=False


def _loss_row(model, step: int, train_inputs, train_labels, val_inputs, val_labels) -> tuple:
    """``(step, train_loss, val_loss)``; a NaN or inf loss stops the run."""
    row = (step, evaluate_loss(model, train_inputs, train_labels), evaluate_loss(model, val_inputs, val_labels))
    if not all(math.isfinite(v) for v in row[1:]):
        raise FloatingPointError(f"loss became non-finite at step {step}: {row}")
    return row


def train_model(model, train_inputs, train_labels, val_inputs, val_labels, schedule,
                config: TrainConfig | None = None, progress: bool | None = None,
                description: str = "training", evaluate: bool = True) -> TrainResult:
    """Adam on the shared ``schedule``, whole-set losses every ``eval_every`` steps.

    ``schedule`` is ``[steps,batch]`` training indices (see ``batch_schedule``).
    Records step 0 (before any update) and every ``eval_every`` steps after.

    ``evaluate=False`` evaluates step 0 only and keeps a copy of the weights
    at each later evaluation step instead (``TrainResult.snapshots``);
    ``evaluate_snapshots`` turns them into the rest of the same history
    later, perhaps in another process: that is how two cores share the work
    of three groups.
    """
    config = config or TrainConfig()
    if schedule.dim() != 2 or schedule.size(0) % config.eval_every != 0:
        raise ValueError(
            f"schedule must be [steps,batch] with steps a multiple of {config.eval_every}, "
            f"got {list(schedule.shape)}"
        )
    device = next(model.parameters()).device
    x_all, y_all = train_inputs.to(device), train_labels.to(device)
    optimizer = make_optimizer(model, config.learning_rate)
    history, snapshots = [], []

    def record(step):
        if evaluate or step == 0:
            history.append(_loss_row(model, step, x_all, y_all, val_inputs, val_labels))
        else:
            snapshots.append((step, {k: v.detach().clone() for k, v in model.state_dict().items()}))

    record(0)
    model.train()
    from tqdm.auto import tqdm  # imported here: the notebook flavour needs ipywidgets

    start = time.perf_counter()
    bar = tqdm(total=schedule.size(0), desc=description, disable=not progress_enabled(progress),
               leave=False, dynamic_ncols=True)
    try:
        schedule = schedule.to(device)
        for step, idx in enumerate(schedule, start=1):
            _update(model, optimizer, x_all[idx], y_all[idx], config.clip_norm)
            bar.update(1)
            if step % config.eval_every == 0:
                record(step)
                if evaluate:
                    bar.set_postfix(train=f"{history[-1][1]:.4f}", val=f"{history[-1][2]:.4f}")
    finally:
        bar.close()
    _sync(device)
    model.eval()
    return TrainResult(model, history, time.perf_counter() - start, schedule.size(0), snapshots)


def evaluate_snapshots(model, snapshots, train_inputs, train_labels, val_inputs, val_labels) -> list:
    """The rows of snapshots from ``train_model(evaluate=False)``: the very rows it would record.

    Loads each ``(step, state_dict)`` into ``model`` (the same architecture)
    and measures both losses; ``model`` ends holding the last snapshot.
    """
    device = next(model.parameters()).device
    x_all, y_all = train_inputs.to(device), train_labels.to(device)
    history = []
    for step, state in snapshots:
        model.load_state_dict(state)
        history.append(_loss_row(model, step, x_all, y_all, val_inputs, val_labels))
    model.eval()
    return history
