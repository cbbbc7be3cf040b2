"""Chapter 1's checker: the reference passes, each usual mistake gets its own diagnosis."""
import pytest
import torch

from revformer.data import BOS, EOS, SEP, encode
from revformer.exercises.sequences import check_encode
from revformer.exercises.solutions import ch01
from solution_helpers import as_the_books


def reference(digits):
    return [BOS] + list(digits) + [SEP] + list(digits)[::-1] + [EOS]


def as_tuple(digits):
    return tuple(reference(digits))


def as_tensor(digits):
    return torch.tensor(reference(digits))


def not_reversed(digits):
    return [BOS] + digits + [SEP] + digits + [EOS]


def prompt_reversed(digits):
    return [BOS] + digits[::-1] + [SEP] + digits + [EOS]


def reversed_in_place(digits):
    digits.reverse()  # reverses the caller's list
    return [BOS] + digits[::-1] + [SEP] + digits + [EOS]


def both_reversed(digits):
    answer = digits[::-1]
    return [BOS] + answer + [SEP] + answer + [EOS]


def no_bos(digits):
    return digits + [SEP] + digits[::-1] + [EOS]


def no_sep(digits):
    return [BOS] + digits + digits[::-1] + [EOS]


def no_eos(digits):
    return [BOS] + digits + [SEP] + digits[::-1]


def no_specials(digits):
    return digits + digits[::-1]


def bos_eos_swapped(digits):
    return [EOS] + digits + [SEP] + digits[::-1] + [BOS]


def sep_eos_swapped(digits):
    return [BOS] + digits + [EOS] + digits[::-1] + [SEP]


def sep_at_end(digits):
    return [BOS] + digits + digits[::-1] + [SEP] + [EOS]


def wrong_sep_id(digits):
    return [BOS] + digits + [0] + digits[::-1] + [EOS]


def characters(digits):
    return [str(t) for t in encode(digits)]


def names(digits):
    return ["<BOS>"] + [str(d) for d in digits] + ["<SEP>"] + [str(d) for d in digits[::-1]] + ["<EOS>"]


def text(digits):
    return " ".join(str(t) for t in encode(digits))


def nested(digits):
    return [[BOS], digits, [SEP], digits[::-1], [EOS]]


def floats(digits):
    return [float(t) for t in encode(digits)]


def no_return(digits):
    [BOS] + digits + [SEP] + digits[::-1] + [EOS]


def unfinished(digits):
    raise NotImplementedError("your code here")


@pytest.mark.parametrize("fn", [reference, as_the_books(ch01.my_encode), as_tuple, as_tensor])
def test_right_answers_pass(fn, capsys):
    assert check_encode(fn) is True
    out = " ".join(capsys.readouterr().out.split())
    assert "all checks passed" in out and "WRONG" not in out


@pytest.mark.parametrize("fn, message", [
    (not_reversed, "the answer is not reversed"),
    (prompt_reversed, "the prompt is reversed instead of the answer"),
    (reversed_in_place, "changed the caller's list"),
    (both_reversed, "both halves are reversed"),
    (no_bos, "<BOS> missing"),
    (no_sep, "<SEP> missing"),
    (no_eos, "<EOS> missing"),
    (no_specials, "<BOS> and <SEP> and <EOS> missing"),
    (bos_eos_swapped, "<BOS> and <EOS> are swapped"),
    (sep_eos_swapped, "<SEP> and <EOS> are swapped"),
    (sep_at_end, "<SEP> is after the answer"),
    (wrong_sep_id, "position 7 holds 0, it must be <SEP>, id 11"),
    (characters, "the tokens are characters"),
    (names, "the tokens are characters"),
    (text, "returned the string"),
    (nested, "the list holds lists"),
    (floats, "the ids must be ints"),
    (no_return, "is the `return` missing?"),
])
def test_each_mistake_has_its_diagnosis(fn, message, wrong_report):
    assert check_encode(fn) is False
    out = wrong_report()
    assert message in out, out


def test_unfinished_reports_todo_without_raising(capsys):
    assert check_encode(unfinished) is False
    out = " ".join(capsys.readouterr().out.split())
    assert "TODO" in out and "NotImplementedError" in out and "WRONG" not in out
