"""Chapter 4's checker: the reference passes, each usual mistake gets its own diagnosis."""
import math

import pytest
import torch

from revformer.exercises.scores import check_attention_weights


def reference(q, k):
    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), dim=-1)


def written_out(q, k):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    exp = (scores - scores.amax(dim=-1, keepdim=True)).exp()
    return exp / exp.sum(dim=-1, keepdim=True)


def written_out_without_max(q, k):
    exp = (q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))).exp()
    return exp / exp.sum(dim=-1, keepdim=True)


def shifted_by_the_whole_max(q, k):  # the teacher's review: named "overflows", it underflows
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    exp = (scores - scores.max()).exp()
    return exp / exp.sum(dim=-1, keepdim=True)


def by_sqrt_d_model(q, k):  # the teacher's review: "differ by up to 0.287" named nothing
    return torch.softmax(q @ k.transpose(-2, -1) / 8, dim=-1)


def by_the_books_root(q, k):
    return torch.softmax(q @ k.transpose(-2, -1) / 4, dim=-1)


def no_scaling(q, k):
    return torch.softmax(q @ k.transpose(-2, -1), dim=-1)


def scaled_by_dh(q, k):
    return torch.softmax(q @ k.transpose(-2, -1) / q.size(-1), dim=-1)


def multiplied_by_sqrt(q, k):
    return torch.softmax(q @ k.transpose(-2, -1) * math.sqrt(q.size(-1)), dim=-1)


def scaled_by_length(q, k):
    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-2)), dim=-1)


def softmax_over_queries(q, k):
    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), dim=-2)


def softmax_over_heads(q, k):
    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), dim=1)


def keys_times_queries(q, k):
    return torch.softmax(k @ q.transpose(-2, -1) / math.sqrt(q.size(-1)), dim=-1)


def transpose_on_q(q, k):
    return torch.softmax(q.transpose(-2, -1) @ k / math.sqrt(q.size(-1)), dim=-1)


def wrong_axes(q, k):
    return torch.softmax(q @ k.transpose(1, 2) / math.sqrt(q.size(-1)), dim=-1)


def no_softmax(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))


def in_place(q, k):
    q /= math.sqrt(q.size(-1))
    return torch.softmax(q @ k.transpose(-2, -1), dim=-1)


def no_return(q, k):
    torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), dim=-1)


def unfinished(q, k):
    raise NotImplementedError("your code here")


def test_reference_passes(capsys):
    assert check_attention_weights(reference) is True
    out = " ".join(capsys.readouterr().out.split())
    assert "all checks passed" in out and "WRONG" not in out


def test_float64_and_other_spellings_pass(capsys):
    def spelled(q, k):
        scores = torch.einsum("bhid,bhjd->bhij", q.double(), k.double()) / q.shape[-1] ** 0.5
        return scores.softmax(-1)
    assert check_attention_weights(spelled) is True
    assert check_attention_weights(written_out) is True


def test_a_softmax_without_the_row_maximum_overflows_on_the_last_case(wrong_report):
    assert check_attention_weights(written_out_without_max) is False
    out = wrong_report()
    # the first two cases pass: the formula is right, only its float32 range is not
    assert out.count("ok ") >= 4 and "[1, 2, 6, 8]" in out
    assert "overflows float32" in out and "subtract each row's maximum" in out, out


@pytest.mark.parametrize("fn, message", [
    (shifted_by_the_whole_max, "one maximum for the whole score matrix, not each row's own"),
    (by_sqrt_d_model, "divided by 8 = sqrt(64), the square root of the model's width"),
    (by_the_books_root, "divided by 4 = sqrt(16), the book's Dh written in"),
    (no_scaling, "not scaled"),
    (scaled_by_dh, "divided by Dh = 16; divide by its square root"),
    (multiplied_by_sqrt, "multiplied by sqrt(Dh)"),
    (scaled_by_length, "divided by sqrt(T)"),
    (softmax_over_queries, "softmax ran over the queries (dim -2)"),
    (softmax_over_heads, "sum to 1 over the heads (dim 1)"),
    (keys_times_queries, "you computed k q^T"),
    (transpose_on_q, "transpose is on the wrong tensor"),
    (no_softmax, "rows do not sum to 1"),
    (in_place, "changed in place"),
    (no_return, "is the `return` missing?"),
])
def test_each_mistake_has_its_diagnosis(fn, message, wrong_report):
    assert check_attention_weights(fn) is False
    out = wrong_report()
    assert message in out, out


def test_a_crash_is_reported_with_a_hint(capsys):
    assert check_attention_weights(wrong_axes) is False
    out = " ".join(capsys.readouterr().out.split())
    assert "ERROR RuntimeError" in out and "HINT" in out and "k.transpose(-2, -1)" in out


def no_keepdim(q, k):  # the learner's review: a forgotten keepdim was hinted as a k.T mistake
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    exp = (scores - scores.amax(dim=-1)).exp()
    return exp / exp.sum(dim=-1, keepdim=True)


def sum_without_keepdim(q, k):  # the learner's second review: hinted as a k.T mistake too
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    exp = (scores - scores.amax(dim=-1, keepdim=True)).exp()
    return exp / exp.sum(dim=-1)


def test_a_sum_without_keepdim_is_hinted_as_such(capsys):
    assert check_attention_weights(sum_without_keepdim) is False
    out = " ".join(capsys.readouterr().out.split())
    assert "row's sum taken without keepdim=True" in out and "k.T" not in out, out


def test_a_maximum_without_keepdim_is_hinted_as_such(capsys):
    assert check_attention_weights(no_keepdim) is False
    out = " ".join(capsys.readouterr().out.split())
    assert "ERROR RuntimeError" in out and "without keepdim=True is [B,H,T]" in out and "k.T" not in out, out


def test_unfinished_reports_todo_without_raising(capsys):
    assert check_attention_weights(unfinished) is False
    out = " ".join(capsys.readouterr().out.split())
    assert "TODO" in out and "NotImplementedError" in out and "WRONG" not in out and "HINT" not in out
