"""The experiment's settings, as small frozen dataclasses.

Every setting the book talks about lives here once. Each class checks its own
values when it is built, so a wrong setting fails at once with a message that
says what was wrong, instead of surfacing later as a shape error deep inside
training.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field

SEED_ENV = "REVFORMER_SEED"
ARTICLE_SEED = 42


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


def _positive_int(name: str, value) -> None:
    _require(
        isinstance(value, int) and not isinstance(value, bool) and value > 0,
        f"{name} must be a positive int, got {value!r}",
    )


@dataclass(frozen=True)
class TaskConfig:
    """The reversal task and its vocabulary.

    Digits 0-9 are their own token ids; three special tokens follow. One
    sample is ``BOS d0..d5 SEP d5..d0 EOS``: 15 tokens.
    """

    seq_len: int = 6
    num_digits: int = 10
    bos: int = 10
    sep: int = 11
    eos: int = 12

    def __post_init__(self):
        # The package's constants (prompt of 8, sample of 15) are written for
        # six digits; other lengths would need them rebuilt.
        _require(self.seq_len == 6, f"seq_len must be 6, got {self.seq_len!r}")
        _require(self.num_digits == 10,
                 f"num_digits must be 10, got {self.num_digits!r}")
        specials = (self.bos, self.sep, self.eos)
        _require(
            specials == (10, 11, 12),
            f"the special tokens must be BOS=10, SEP=11, EOS=12, got {specials}",
        )

    @property
    def vocab_size(self) -> int:
        return self.num_digits + 3  # 13

    @property
    def prompt_len(self) -> int:
        return self.seq_len + 2  # BOS, the digits, SEP: 8

    @property
    def full_len(self) -> int:
        return 2 * self.seq_len + 3  # 15

    @property
    def input_len(self) -> int:
        return self.full_len - 1  # 14


@dataclass(frozen=True)
class ModelConfig:
    """The decoder-only Transformer: 2 Pre-LN blocks, d_model 64, 4 heads.

    ``num_layers`` and ``score_multiplier`` are also the switches of two
    controls of "Going further": a one-block model (chapter 19) and attention
    scores scaled up or down (chapter 17).
    """

    vocab_size: int = 13
    max_positions: int = 15
    d_model: int = 64
    num_heads: int = 4
    num_layers: int = 2
    d_ff: int = 128
    dropout: float = 0.0
    causal: bool = True
    # A control of chapter 17: the attention scores are q.k / sqrt(Dh) times this
    # (2 doubles every score, so every softmax is sharper); ``make_model`` adds it
    # around the taught attention (``scale_scores``). The book's model: 1.
    score_multiplier: float = 1.0

    def __post_init__(self):
        for name in ("vocab_size", "max_positions", "d_model", "num_heads",
                     "num_layers", "d_ff"):
            _positive_int(name, getattr(self, name))
        _require(
            self.d_model % self.num_heads == 0,
            f"d_model ({self.d_model}) must be divisible by "
            f"num_heads ({self.num_heads})",
        )
        _require(
            isinstance(self.dropout, (int, float)) and 0.0 <= self.dropout < 1.0,
            f"dropout must be in [0, 1), got {self.dropout!r}",
        )
        _require(isinstance(self.causal, bool),
                 f"causal must be a bool, got {self.causal!r}")
        _require(
            isinstance(self.score_multiplier, (int, float))
            and not isinstance(self.score_multiplier, bool)
            and 0.0 < self.score_multiplier < float("inf"),
            f"score_multiplier must be a positive finite number, "
            f"got {self.score_multiplier!r}",
        )

    @property
    def head_dim(self) -> int:
        return self.d_model // self.num_heads


def default_seed() -> int:
    """The seed of the models' initial weights: ``$REVFORMER_SEED`` if set, else the
    article's 42.

    ``make book SEED=7`` sets it, so that every page of that build shows the
    run of seed 7. Only the initial weights follow it (and the speed test's
    throw-away model, seeded one above): the data and the batch order keep
    their own seeds, so every seed trains on the same batches.
    """
    text = os.environ.get(SEED_ENV, "").strip()
    if not text:
        return ARTICLE_SEED
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{SEED_ENV} must be an integer seed, got {text!r}") from None


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation, evaluation and the time budget.

    ``time_limit_seconds`` is the projected wall-clock time all three groups
    may take together; the speed test lowers every group's steps alike when
    the projection is over it.

    The learning curve (validation loss and greedy sequence accuracy on the
    validation set) is recorded every ``curve_every`` steps up to step
    ``curve_until``, where the groups learn the task, and at every evaluation
    step after; ``curve_every=0`` records none.
    """

    steps: int = 600
    batch_size: int = 64
    learning_rate: float = 3e-3
    clip_norm: float = 1.0
    eval_every: int = 50
    seed: int = field(default_factory=default_seed)
    batch_seed: int = 1234
    speed_test_steps: int = 20
    time_limit_seconds: float = 1800.0
    curve_every: int = 10
    curve_until: int = 200

    def __post_init__(self):
        for name in ("steps", "batch_size", "eval_every", "speed_test_steps"):
            _positive_int(name, getattr(self, name))
        for name in ("curve_every", "curve_until"):
            value = getattr(self, name)
            _require(
                isinstance(value, int) and not isinstance(value, bool) and value >= 0,
                f"{name} must be an int >= 0, got {value!r}",
            )
        _require(isinstance(self.seed, int) and not isinstance(self.seed, bool),
                 f"seed must be an int, got {self.seed!r}")
        for name in ("learning_rate", "clip_norm", "time_limit_seconds"):
            value = getattr(self, name)
            _require(
                isinstance(value, (int, float)) and value > 0,
                f"{name} must be a positive number, got {value!r}",
            )
        _require(
            self.steps % self.eval_every == 0,
            f"steps ({self.steps}) must be a multiple of "
            f"eval_every ({self.eval_every})",
        )

    def curve_steps(self, steps: int | None = None) -> list[int]:
        """The steps of the learning curve of a run of ``steps`` (default
        ``self.steps``), 0 first."""
        steps = self.steps if steps is None else steps
        if self.curve_every == 0:
            return []
        early = range(0, min(self.curve_until, steps) + 1, self.curve_every)
        return sorted(set(early) | set(range(0, steps + 1, self.eval_every)))


@dataclass(frozen=True)
class DataConfig:
    """Sizes of the three disjoint splits and the seed that draws them.

    Why these sizes: 600 steps of 64 draw 38,400 training sequences, so a
    training set of 8,000 is seen about five times, enough for the model to
    learn a rule of positions rather than memorise answers; it is under 1% of
    the 10^6 possible sequences, so the test set measures generalisation. A
    validation set of 1,000 gives a loss whose sampling noise is small next to
    the changes the curves show, and keeps the 13 whole-set evaluations of a
    run cheap. The test set has the article's 512 sequences.
    """

    train_size: int = 8000
    val_size: int = 1000
    test_size: int = 512
    seed: int = 2024

    def __post_init__(self):
        for name in ("train_size", "val_size", "test_size"):
            _positive_int(name, getattr(self, name))
        _require(isinstance(self.seed, int), f"seed must be an int, got {self.seed!r}")


@dataclass(frozen=True)
class ExperimentConfig:
    """Everything that decides a trained model: the key of the results cache."""

    task: TaskConfig = field(default_factory=TaskConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    data: DataConfig = field(default_factory=DataConfig)

    def __post_init__(self):
        _require(
            self.model.vocab_size == self.task.vocab_size,
            f"model.vocab_size ({self.model.vocab_size}) must equal the task's "
            f"vocabulary ({self.task.vocab_size})",
        )
        _require(
            self.model.max_positions >= self.task.input_len,
            f"model.max_positions ({self.model.max_positions}) must cover the "
            f"{self.task.input_len} input positions",
        )

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, record: dict) -> "ExperimentConfig":
        """The inverse of ``to_dict`` (extra keys, such as ``config.json``'s, are
        refused)."""
        try:
            return cls(task=TaskConfig(**record["task"]),
                       model=ModelConfig(**record["model"]),
                       train=TrainConfig(**record["train"]),
                       data=DataConfig(**record["data"]))
        except (KeyError, TypeError) as error:
            raise ValueError(f"not an experiment configuration: {error}") from None


@dataclass(frozen=True)
class Group:
    """One ablation group: how many heads, and whether it trains with the mask."""

    name: str
    num_heads: int
    causal: bool


GROUPS = (
    Group("four_heads", 4, True),  # the full model of the book
    Group("one_head", 1, True),
    Group("no_mask", 4, False),
)
GROUP_NAMES = tuple(g.name for g in GROUPS)


def group(name: str) -> Group:
    for g in GROUPS:
        if g.name == name:
            return g
    raise ValueError(f"unknown group {name!r}; "
                     f"expected one of {', '.join(GROUP_NAMES)}")
