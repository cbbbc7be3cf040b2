"""Samples, shifted inputs and labels, and the three data splits.

One encoded example, for the digits ``3 1 4 2 0 5``::

    position  0  1  2  3  4  5  6  7   8  9 10 11 12 13  14
    token    10  3  1  4  2  0  5  11  5  0  2  4  1  3  12
             BOS                SEP                     EOS

The model reads positions 0-13 and, at each position, predicts the token one
to the right. Only the answer is supervised: the labels of positions 0-6 are
-100 (ignored), so position 7 (SEP) predicts the first answer digit and
position 13 predicts EOS.
"""
from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral

import torch

from .config import DataConfig, TaskConfig

BOS, SEP, EOS = 10, 11, 12
VOCAB_SIZE = 13
SEQ_LEN = 6
PROMPT_LEN = SEQ_LEN + 2  # 8
FULL_LEN = 2 * SEQ_LEN + 3  # 15
IGNORE_INDEX = -100
TOKEN_NAMES = {BOS: "<BOS>", SEP: "<SEP>", EOS: "<EOS>"}


def encode(digits) -> list[int]:
    """Six digits -> the 15 token ids ``BOS d0..d5 SEP d5..d0 EOS``.

    ``digits`` is any sequence of six ints from 0 to 9 (a list, a tuple, a
    1-D tensor or array). Anything else raises ``ValueError``.
    """
    if isinstance(digits, (str, bytes)):
        raise ValueError(f"expected a sequence of {SEQ_LEN} ints 0-9, "
                         f"got the string {digits!r}")
    if isinstance(digits, torch.Tensor):
        if (digits.dim() != 1 or digits.dtype.is_floating_point
                or digits.dtype == torch.bool):
            raise ValueError(
                f"expected a 1-D integer tensor of {SEQ_LEN} digits, "
                f"got shape {tuple(digits.shape)} and dtype {digits.dtype}"
            )
        digits = digits.tolist()
    try:
        values = list(digits)
    except TypeError:
        raise ValueError(
            f"expected a sequence of {SEQ_LEN} ints 0-9, got {type(digits).__name__}"
        ) from None
    if len(values) != SEQ_LEN:
        raise ValueError(f"expected {SEQ_LEN} digits, got {len(values)}: {values!r}")
    for i, d in enumerate(values):
        if isinstance(d, bool) or not isinstance(d, Integral):
            raise ValueError(f"digit {i} must be an int 0-9, "
                             f"got {d!r} ({type(d).__name__})")
        if not 0 <= d <= 9:
            raise ValueError(f"digit {i} must be between 0 and 9, got {d}")
    values = [int(d) for d in values]
    return [BOS] + values + [SEP] + values[::-1] + [EOS]


def check_token_batch(tensor, width: int, name: str) -> None:
    """Raise ``ValueError`` unless ``tensor`` is an integer ``[B,width]`` tensor."""
    if not isinstance(tensor, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(tensor).__name__}")
    if tensor.dim() != 2 or tensor.size(1) != width:
        shape = ",".join(str(n) for n in tensor.shape)
        raise ValueError(f"`{name}` must have shape [B,{width}], got [{shape}]")
    if (tensor.dtype.is_floating_point or tensor.dtype.is_complex
            or tensor.dtype == torch.bool):
        raise ValueError(f"{name} must hold integer token ids, "
                         f"got dtype {tensor.dtype}")


def split_inputs_labels(full: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``[B,15]`` full samples -> inputs ``[B,14]`` and labels ``[B,14]``.

    Inputs are the first 14 tokens, labels the last 14: the label of
    position i is the token at i+1. The first 7 labels (prompt positions 0-6)
    are set to -100 so the loss ignores them.
    """
    check_token_batch(full, FULL_LEN, "full")
    inputs = full[:, :-1].long().contiguous()  # [B,14]
    labels = full[:, 1:].long().clone()  # [B,14]
    labels[:, : PROMPT_LEN - 1] = IGNORE_INDEX
    return inputs, labels


def token_name(token: int) -> str:
    """``3`` -> ``'3'``, ``11`` -> ``'<SEP>'``."""
    return TOKEN_NAMES.get(int(token), str(int(token)))


def position_labels(tokens) -> list[str]:
    """Axis labels such as ``'7·<SEP>'``: position, a middle dot, then token (``'10·1'``, not 101)."""
    return [f"{i}·{token_name(t)}" for i, t in enumerate(list(tokens))]


def format_tokens(tokens) -> str:
    """Tokens as text separated by spaces, with names for the special ones."""
    return " ".join(token_name(t) for t in list(tokens))


@dataclass(frozen=True)
class Splits:
    """Full samples ``[N,15]`` of the three disjoint splits, and their digits."""

    train: torch.Tensor
    val: torch.Tensor
    test: torch.Tensor

    def prompts(self, name: str = "test") -> torch.Tensor:
        """The 8-token prompts ``[N,8]`` of one split."""
        return getattr(self, name)[:, :PROMPT_LEN]

    def answers(self, name: str = "test") -> torch.Tensor:
        """The 7 answer tokens ``[N,7]`` (six digits and EOS) of one split."""
        return getattr(self, name)[:, PROMPT_LEN:]


def _digits_of(numbers: torch.Tensor, seq_len: int) -> torch.Tensor:
    """Integers 0..10^seq_len-1 -> their digits ``[N,seq_len]``, leading zeros kept."""
    powers = 10 ** torch.arange(seq_len - 1, -1, -1)
    return (numbers.unsqueeze(1) // powers) % 10


def make_splits(data: DataConfig | None = None,
                task: TaskConfig | None = None) -> Splits:
    """Draw the test, validation and training sets, disjoint, from a private generator.

    Distinct six-digit sequences are drawn without replacement (one
    permutation of all 10^6 of them), so no sequence is in two splits. The
    test set comes first so its order, and its sample 0, do not depend on
    the training and validation sizes.
    """
    data = data or DataConfig()
    task = task or TaskConfig()
    total = data.test_size + data.val_size + data.train_size
    space = task.num_digits**task.seq_len
    if total > space:
        raise ValueError(f"the splits ask for {total} distinct sequences, "
                         f"but only {space} exist")
    generator = torch.Generator().manual_seed(data.seed)
    numbers = torch.randperm(space, generator=generator)[:total]
    digits = _digits_of(numbers, task.seq_len)  # [N,6]
    n = digits.size(0)
    bos = torch.full((n, 1), task.bos)
    sep = torch.full((n, 1), task.sep)
    eos = torch.full((n, 1), task.eos)
    full = torch.cat([bos, digits, sep, digits.flip(1), eos], dim=1)  # [N,15]
    a, b = data.test_size, data.test_size + data.val_size
    return Splits(train=full[b:], val=full[a:b], test=full[:a])
