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


def test_unfinished_reports_todo_without_raising(capsys):
    assert check_attention_weights(unfinished) is False
    out = " ".join(capsys.readouterr().out.split())
    assert "TODO" in out and "NotImplementedError" in out and "WRONG" not in out and "HINT" not in out
