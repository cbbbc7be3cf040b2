"""Questions of other lengths: one model trained on 1 to 8 digits (chapter 21).

A sample of ``n`` digits is ``BOS d1..dn SEP dn..d1 EOS``, ``2n + 3`` tokens,
with ``SEP`` at position ``n + 1``. Samples of different lengths share a batch
by padding: every sample is written into ``MAX_LEN`` = 19 tokens, the slots
after its ``EOS`` filled with ``EOS`` again (the vocabulary has no padding
token, and with the causal mask nothing before a slot reads it), and the
labels of those slots are -100. So a padded slot is never predicted, and the
loss sees exactly the ``n + 1`` answer targets of each sample::

    n = 2:  position  0  1  2   3  4   5   6  ...  17
            input    BOS 4  7  SEP 7   4  EOS ...  EOS
            label   -100 -100 7 4  EOS -100 ... -100

The model is the book's (``ModelConfig``), with a position table of 19 rows:
the longest sample's input uses 18 of them, as the six-digit input uses 14 of
15. The package's ``TaskConfig`` knows six digits only, so the configuration
(``MixedConfig``) keeps it and records the mixed data in its ``DataConfig``
(sizes and seed) and in ``held_out_lengths``, the lengths left out of training
(chapter 21's control holds out 5): with the group name ``mixed_lengths`` and a
hash of this file, that makes the cache key of the trained model
(``revformer.cache``).
"""
from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from pathlib import Path

import torch

from . import served
from .cache import Run, cache_key, cache_path, default_cache_dir, load_run, save_run
from .config import DataConfig, ExperimentConfig, Group, ModelConfig, TrainConfig
from .data import BOS, EOS, IGNORE_INDEX, SEP
from .model import make_model
from .progress import announce, expected_seconds
from .train import (batch_schedule, progress_enabled, resolve_device, speed_test,
                    run_training)

MIN_DIGITS, MAX_DIGITS = 1, 8  # the lengths the model trains on
# 19 tokens: the longest sample, and the rows of the position table
MAX_LEN = 2 * MAX_DIGITS + 3
GROUP = Group("mixed_lengths", 4, True)


def sample(digits) -> list[int]:
    """Digits (any number of them, each 0-9) -> ``BOS d1..dn SEP dn..d1 EOS``."""
    digits = [int(d) for d in digits]
    if not digits or not all(0 <= d <= 9 for d in digits):
        raise ValueError(f"expected one or more digits 0-9, got {digits!r}")
    return [BOS] + digits + [SEP] + digits[::-1] + [EOS]


def pad(samples, width: int = MAX_LEN) -> torch.Tensor:
    """Samples of different lengths -> one ``[N,width]`` tensor, each row filled up
    with EOS."""
    rows = torch.full((len(samples), width), EOS, dtype=torch.long)
    for i, s in enumerate(samples):
        if len(s) > width:
            raise ValueError(f"a sample of {len(s)} tokens does not fit {width}")
        rows[i, :len(s)] = torch.tensor(s)
    return rows


def inputs_labels(full: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Padded samples ``[N,W]`` -> inputs and labels ``[N,W-1]``, labels -100 where
    nothing is predicted.

    Row by row, ``SEP`` sits at ``s = n + 1``; the labels of positions
    ``s .. 2s - 1`` (the ``n`` reversed digits and ``EOS``) are kept, all
    others (the question, and the padding after ``EOS``) are -100.
    """
    inputs = full[:, :-1].contiguous()  # [N,W-1]
    labels = full[:, 1:].clone()  # [N,W-1]: the label of position i is the token at i+1
    # [N,1]: each row's SEP position
    sep = (full == SEP).int().argmax(dim=1, keepdim=True)
    position = torch.arange(labels.size(1)).unsqueeze(0)  # [1,W-1]
    labels[(position < sep) | (position > 2 * sep - 1)] = IGNORE_INDEX
    return inputs, labels


def _digits(number: int, n: int) -> list[int]:
    return [(number // 10 ** (n - 1 - i)) % 10 for i in range(n)]


def _draw(generator, n: int, count: int, exclude=frozenset()) -> list[int]:
    """``count`` numbers below 10^n (repeats allowed), none of them in ``exclude``."""
    drawn: list[int] = []
    while len(drawn) < count:
        drawn += [x for x in
                  torch.randint(10 ** n, (count,), generator=generator).tolist()
                  if x not in exclude]
    return drawn[:count]


def trained_lengths(held_out_lengths=()) -> tuple[int, ...]:
    """The lengths 1-8 a model trains on once ``held_out_lengths`` are left out; a
    ValueError if that is wrong.

    Each held-out length must be one of 1-8 (nine digits are never trained
    anyway), none twice, and at least one length must be left to train on.
    """
    lengths = tuple(range(MIN_DIGITS, MAX_DIGITS + 1))
    held = tuple(held_out_lengths)
    for n in held:
        if isinstance(n, bool) or not isinstance(n, int) or n not in lengths:
            raise ValueError(f"held-out length {n!r} is not one of the trained lengths "
                             f"{MIN_DIGITS}-{MAX_DIGITS}: only a length that is "
                             "trained can be held out")
    if len(set(held)) != len(held):
        raise ValueError(f"held_out_lengths names a length twice: {held!r}")
    kept = tuple(n for n in lengths if n not in held)
    if not kept:
        raise ValueError(f"holding out {held!r} leaves no length to train on")
    return kept


@dataclass(frozen=True)
class MixedConfig(ExperimentConfig):
    """The package's ``ExperimentConfig`` and the lengths left out of training and
    validation.

    ``held_out_lengths=()`` trains on every length 1-8; ``(5,)`` on 1-4 and
    6-8 (chapter 21's control). It is part of ``to_dict``, so of the cache key.
    """

    held_out_lengths: tuple = ()

    def __post_init__(self):
        super().__post_init__()
        if (isinstance(self.held_out_lengths, (str, bytes))
                or not hasattr(self.held_out_lengths, "__iter__")):
            raise ValueError(f"held_out_lengths must be a tuple of lengths, "
                             f"got {self.held_out_lengths!r}")
        held = tuple(self.held_out_lengths)
        trained_lengths(held)  # raises on a length that is not trained, or on none left
        object.__setattr__(self, "held_out_lengths", tuple(sorted(held)))


@dataclass(frozen=True)
class MixedSplits:
    """Padded training and validation samples ``[N,19]``; per length, the test
    questions ``[M,n]``.

    ``test[n]`` holds distinct questions of ``n`` digits, for n = 1 to 9. For
    n <= 2 they are every question there is (10 and 100), so the training
    set holds them too; from n = 3 on they are held out from training and
    validation. Nine digits never occur in training, nor do ``lengths``'
    missing ones (the held-out lengths).
    """

    train: torch.Tensor
    val: torch.Tensor
    test: dict
    # the lengths in train and val
    lengths: tuple = tuple(range(MIN_DIGITS, MAX_DIGITS + 1))

    def held_out(self, n: int) -> bool:
        """Whether the test questions of ``n`` digits are kept out of training (all of
        them, n >= 3)."""
        return len(self.test[n]) < 10 ** n


def make_mixed_splits(data: DataConfig, held_out_lengths=()) -> MixedSplits:
    """Training and validation samples, an equal share of each length 1-8; test
    questions of 1-9 digits.

    ``data.test_size`` is the number of test questions per length (at most
    all of them); the draws come from a private generator seeded with
    ``data.seed``, so every seed of the weights trains on the same data.
    ``held_out_lengths`` drops those lengths' samples from training and
    validation after the same draws, so the other lengths' samples are the
    same, in the same order, as with none held out (each held-out length
    shrinks the splits by an eighth).
    """
    kept = trained_lengths(held_out_lengths)
    generator = torch.Generator().manual_seed(data.seed)
    test, exclude = {}, {}
    for n in range(MIN_DIGITS, MAX_DIGITS + 2):
        # the test would be over a fifth of all questions: take them all
        if 10 ** n < 5 * data.test_size:
            numbers = list(range(10 ** n))
            exclude[n] = frozenset()
        else:
            chosen: dict[int, None] = {}  # distinct, in the order drawn
            while len(chosen) < data.test_size:
                chosen.update(dict.fromkeys(_draw(generator, n, data.test_size)))
            numbers = list(chosen)[:data.test_size]
            exclude[n] = frozenset(numbers)
        test[n] = torch.tensor([_digits(x, n) for x in numbers], dtype=torch.long)

    def split(size):
        per_length = size // (MAX_DIGITS - MIN_DIGITS + 1)
        drawn = [(n, sample(_digits(x, n))) for n in range(MIN_DIGITS, MAX_DIGITS + 1)
                 for x in _draw(generator, n, per_length, exclude[n])]
        # lengths mixed within a batch
        order = torch.randperm(len(drawn), generator=generator).tolist()
        # held-out lengths dropped
        return pad([drawn[i][1] for i in order if drawn[i][0] in kept])

    return MixedSplits(train=split(data.train_size), val=split(data.val_size),
                       test=test, lengths=kept)


def mixed_config(steps: int = 1500, seed: int | None = None,
                 learning_rate: float = 1e-3, batch_size: int = 128,
                 held_out_lengths=()) -> MixedConfig:
    """The book's model with a position table of 19, on the mixed data;
    ``seed=None``: the build's.

    ``held_out_lengths=(5,)``: the same run without five-digit samples.

    A learning rate a third of the book's and batches twice its size: with the
    book's 3e-3 and 64, this longer task's loss jumped back up now and then
    late in training, so that a run could end on such a jump; with 1e-3 and
    128 it settled within 1,500 steps for each seed tried (42, 7 and 0-3).
    """
    train = TrainConfig(steps=steps, batch_size=batch_size, eval_every=250,
                        curve_every=0, learning_rate=learning_rate)
    if seed is not None:
        train = dataclasses.replace(train, seed=seed)
    return MixedConfig(model=ModelConfig(max_positions=MAX_LEN), train=train,
                       data=DataConfig(train_size=8000, val_size=800, test_size=200,
                                       seed=2025),
                       held_out_lengths=held_out_lengths)


def mixed_key(config: MixedConfig, device) -> str:
    """The package's cache key of the run, with this file's program folded in (its syntax tree without
    comments and docstrings, as for the training modules: ``revformer.fingerprint``)."""
    return hashlib.sha256(f"{cache_key(config, GROUP, config.train.steps, device)}"
                          f":{_own_program()}".encode()).hexdigest()


def _own_program() -> str:
    """The hash of this file's program: it decides the mixed run too."""
    from .fingerprint import _program

    return hashlib.sha256(_program(Path(__file__).read_text(encoding="utf-8")).encode()).hexdigest()


def train_mixed(config: MixedConfig | None = None, device="auto", cache_dir=None,
                progress: bool | None = None, train: bool | None = None) -> Run:
    """The model trained on mixed lengths: from the cache, the book's served runs
    (unless ``train``), or trained (and cached) here."""
    config = config or mixed_config()
    if not isinstance(config, MixedConfig):
        raise TypeError(f"train_mixed needs a MixedConfig (lengths.mixed_config()), "
                        f"got {type(config).__name__}")
    device = resolve_device(device)
    key = mixed_key(config, device)
    cache_dir = cache_dir if cache_dir is not None else default_cache_dir()
    path = cache_path(cache_dir, GROUP, key)
    steps, own = config.train.steps, _own_program()
    run = load_run(path, key, config, GROUP, device)
    if run is None and not served.wants_training(train):
        run = served.fetch_run(config, GROUP, steps, device, cache_dir, extra=own)
    if run is not None:
        served.record_load(config, GROUP, steps, key, path, device, extra=own)
        return run
    splits = make_mixed_splits(config.data, config.held_out_lengths)
    train_x, train_y = inputs_labels(splits.train)
    val_x, val_y = inputs_labels(splits.val)
    # a speed test only to say how long the wait will be (no budget to plan)
    if progress_enabled(progress):
        budget = speed_test(train_x, train_y, config.train, device, groups=1,
                            validation_rows=val_x.size(0), model_config=config.model)
        seconds = expected_seconds(
            budget.seconds_per_run(config.train, config.train.steps), 1,
            in_workers=False)
        announce([(config, GROUP)], seconds, device, path.parent, progress)
    model = make_model(GROUP.num_heads, config.train.seed, GROUP.causal, config.model,
                       device)
    result = run_training(model, train_x, train_y, val_x, val_y,
                          batch_schedule(train_x.size(0), config.train),
                          config.train, progress, description=GROUP.name)
    run = Run(GROUP, result.model, result.history, result.batch_losses, result.seconds,
              result.steps, result.curve, torch.get_num_threads())
    save_run(path, key, run)
    served.record_load(config, GROUP, steps, key, path, device, extra=own)
    return run


def prompts_of(questions: torch.Tensor) -> torch.Tensor:
    """Questions ``[B,n]`` -> prompts ``[B,n+2]``: ``BOS d1..dn SEP``."""
    b = questions.size(0)
    return torch.cat([torch.full((b, 1), BOS), questions.long(),
                      torch.full((b, 1), SEP)], dim=1)


@torch.inference_mode()
def generate_any(model, prompts: torch.Tensor,
                 steps: int | None = None) -> torch.Tensor:
    """Greedy tokens ``[B,steps]`` after prompts ``[B,n+2]`` of any one length
    (default: n + 1 steps).

    The package's ``generate`` again, without its check for eight-token
    prompts: each pass reads the whole prefix and appends the last
    position's most likely token; a row that has written EOS keeps EOS.
    """
    steps = prompts.size(1) - 1 if steps is None else steps
    was_training = model.training
    model.eval()
    try:
        tokens = prompts.to(next(model.parameters()).device)
        finished = torch.zeros(tokens.size(0), dtype=torch.bool, device=tokens.device)
        for _ in range(steps):
            logits, _ = model(tokens)  # [B,t,13]
            next_token = logits[:, -1].argmax(dim=-1).masked_fill(finished, EOS)
            finished |= next_token == EOS
            tokens = torch.cat([tokens, next_token.unsqueeze(1)], dim=1)
    finally:
        model.train(was_training)
    return tokens[:, prompts.size(1):].cpu()


@dataclass(frozen=True)
class LengthScores:
    """Greedy answers to questions of one length, compared with the reversed
    questions."""

    digit_hits: torch.Tensor  # [B,n] bool: answer digit i right
    # [B] bool: EOS right after the n digits (None: not generated)
    ends: torch.Tensor | None

    @property
    def digit_accuracy(self) -> float:
        return float(self.digit_hits.float().mean())

    @property
    def sequence_accuracy(self) -> float:
        """Rows with every digit right and, when it was generated, EOS after them."""
        right = self.digit_hits.all(dim=1)
        return float((right if self.ends is None else right & self.ends).float().mean())

    @property
    def per_position(self) -> list[float]:
        """The share of rows with answer digit i right, i = 0 .. n-1."""
        return self.digit_hits.float().mean(dim=0).tolist()


def score_any(generated: torch.Tensor, questions: torch.Tensor) -> LengthScores:
    """``[B,k]`` generated tokens against questions ``[B,n]``: digits 0..n-1, then
    EOS if k > n."""
    n = questions.size(1)
    if generated.size(0) != questions.size(0) or generated.size(1) < n:
        raise ValueError(f"generated {list(generated.shape)} must have "
                         f"{questions.size(0)} rows and at least "
                         f"{n} tokens for questions {list(questions.shape)}")
    hits = generated[:, :n] == questions.flip(1)
    return LengthScores(hits, generated[:, n] == EOS if generated.size(1) > n else None)
