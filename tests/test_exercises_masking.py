"""Chapter 5's checker: the reference passes, each usual mistake gets its own diagnosis."""
import pytest
import torch

from revformer.exercises.masking import check_masked_weights


def future_of(scores):
    t = scores.size(-1)
    return torch.ones(t, t, dtype=torch.bool, device=scores.device).triu(diagonal=1)


def reference(scores):
    return torch.softmax(scores.masked_fill(future_of(scores), float("-inf")), dim=-1)


def large_negative(scores):
    return torch.softmax(scores.masked_fill(future_of(scores), -1e9), dim=-1)


def zeroed_and_renormalised(scores):
    weights = torch.softmax(scores, dim=-1).masked_fill(future_of(scores), 0.0)
    return weights / weights.sum(-1, keepdim=True)


def zeroed_after_softmax(scores):
    return torch.softmax(scores, dim=-1).masked_fill(future_of(scores), 0.0)


def inf_after_softmax(scores):
    return torch.softmax(scores, dim=-1).masked_fill(future_of(scores), float("-inf"))


def diagonal_masked(scores):
    t = scores.size(-1)
    blocked = torch.ones(t, t, dtype=torch.bool).triu(diagonal=0)
    return torch.softmax(scores.masked_fill(blocked, float("-inf")), dim=-1)


def diagonal_masked_finite(scores):
    t = scores.size(-1)
    blocked = torch.ones(t, t, dtype=torch.bool).triu(diagonal=0)
    return torch.softmax(scores.masked_fill(blocked, -1e9), dim=-1)


def tril_swapped_in(scores, diagonal):  # the learner's review: tril() and tril(diagonal=1) got a vague NaN message
    t = scores.size(-1)
    past = torch.ones(t, t, dtype=torch.bool, device=scores.device).tril(diagonal)
    return torch.softmax(scores.masked_fill(past, float("-inf")), dim=-1)


def lower_triangle(scores):
    t = scores.size(-1)
    blocked = torch.ones(t, t, dtype=torch.bool).tril(diagonal=-1)
    return torch.softmax(scores.masked_fill(blocked, float("-inf")), dim=-1)


def no_mask(scores):
    return torch.softmax(scores, dim=-1)


def filled_with_zero(scores):
    return torch.softmax(scores.masked_fill(future_of(scores), 0.0), dim=-1)


def softmax_over_queries(scores):
    return torch.softmax(scores.masked_fill(future_of(scores), float("-inf")), dim=-2)


def no_softmax(scores):
    return scores.masked_fill(future_of(scores), float("-inf"))


def in_place(scores):
    return torch.softmax(scores.masked_fill_(future_of(scores), float("-inf")), dim=-1)


def fixed_length(scores):
    blocked = torch.ones(14, 14, dtype=torch.bool).triu(diagonal=1)
    return torch.softmax(scores.masked_fill(blocked, float("-inf")), dim=-1)


def no_return(scores):
    torch.softmax(scores.masked_fill(future_of(scores), float("-inf")), dim=-1)


def unfinished(scores):
    raise NotImplementedError("your code here")


@pytest.mark.parametrize("fn", [reference, large_negative, zeroed_and_renormalised])
def test_right_answers_pass(fn, capsys):
    assert check_masked_weights(fn) is True
    out = " ".join(capsys.readouterr().out.split())
    assert "all checks passed" in out and "WRONG" not in out


@pytest.mark.parametrize("fn, message", [
    (zeroed_after_softmax, "rows no longer sum to 1: the mask was applied after the softmax"),
    (inf_after_softmax, "the mask was applied after the softmax"),
    (diagonal_masked, "the diagonal was masked too"),
    (diagonal_masked_finite, "the diagonal was masked too"),
    (lower_triangle, "the lower triangle was masked instead of the upper one"),
    (lambda s: tril_swapped_in(s, 0), "the last row has no key left (NaN): the lower triangle, tril(),"),
    (lambda s: tril_swapped_in(s, 1), "the last two rows have no key left (NaN): the lower triangle, tril(diagonal=1)"),
    (no_mask, "no mask was applied"),
    (filled_with_zero, "set to 0, an ordinary score"),
    (softmax_over_queries, "softmax ran over the queries (dim -2)"),
    (no_softmax, "the softmax is missing"),
    (in_place, "changed in place"),
    (no_return, "is the `return` missing?"),
])
def test_each_mistake_has_its_diagnosis(fn, message, wrong_report):
    assert check_masked_weights(fn) is False
    out = wrong_report()
    assert message in out, out


def test_a_crash_is_reported_with_a_hint(capsys):
    assert check_masked_weights(fixed_length) is False
    out = " ".join(capsys.readouterr().out.split())
    assert "ERROR RuntimeError" in out and "scores.size(-1)" in out


def test_unfinished_reports_todo_without_raising(capsys):
    assert check_masked_weights(unfinished) is False
    out = " ".join(capsys.readouterr().out.split())
    assert "TODO" in out and "NotImplementedError" in out and "WRONG" not in out and "HINT" not in out
