"""Chapter 6's checker: the reference passes, each usual mistake gets its own diagnosis."""
import pytest
import torch

from revformer.exercises.heads import check_split_merge


def split(x, num_heads):
    b, t, d = x.shape
    return x.view(b, t, num_heads, d // num_heads).transpose(1, 2)


def merge(x):
    b, h, t, dh = x.shape
    return x.transpose(1, 2).reshape(b, t, h * dh)


def merge_contiguous_view(x):
    b, h, t, dh = x.shape
    return x.transpose(1, 2).contiguous().view(b, t, h * dh)


def split_permute(x, num_heads):
    b, t, d = x.shape
    return x.reshape(b, t, num_heads, -1).permute(0, 2, 1, 3)


# --- the usual mistakes -------------------------------------------------------

def split_without_transpose(x, num_heads):
    b, t, d = x.shape
    return x.reshape(b, num_heads, t, d // num_heads)


def split_missing_transpose(x, num_heads):
    b, t, d = x.shape
    return x.view(b, t, num_heads, d // num_heads)


def split_interleaved(x, num_heads):
    b, t, d = x.shape
    return x.view(b, t, d // num_heads, num_heads).permute(0, 3, 1, 2)


def split_fixed_four(x, num_heads):
    b, t, d = x.shape
    return x.view(b, t, 4, d // 4).transpose(1, 2)


def split_no_return(x, num_heads):
    x.view(x.size(0), x.size(1), num_heads, -1).transpose(1, 2)


def merge_view_after_transpose(x):
    b, h, t, dh = x.shape
    return x.transpose(1, 2).view(b, t, h * dh)


def merge_average(x):
    return x.mean(dim=1)


def merge_sum(x):
    return x.sum(dim=1)


def merge_without_transpose(x):
    b, h, t, dh = x.shape
    return x.reshape(b, t, h * dh)


def merge_interleaved(x):
    b, h, t, dh = x.shape
    return x.permute(0, 2, 3, 1).reshape(b, t, h * dh)


def merge_no_reshape(x):
    return x.transpose(1, 2)


def merge_fixed_width(x):
    b, h, t, dh = x.shape
    return x.transpose(1, 2).reshape(b, t, 64)


def unfinished_split(x, num_heads):
    raise NotImplementedError("your code here")


def unfinished_merge(x):
    raise NotImplementedError("your code here")


@pytest.mark.parametrize("split_fn, merge_fn", [
    (split, merge), (split, merge_contiguous_view), (split_permute, merge),
])
def test_right_answers_pass(split_fn, merge_fn, capsys):
    assert check_split_merge(split_fn, merge_fn) is True
    out = capsys.readouterr().out
    assert "all checks passed" in out and "WRONG" not in out
    assert "merge(split(x)) gives x back" in out


@pytest.mark.parametrize("split_fn, message", [
    (split_without_transpose, "positions are mixed: x was reshaped straight to [B,H,T,Dh]"),
    (split_without_transpose, "Your head 0, position 1 starts with feature 16 of position 0"),
    (split_missing_transpose, "the transpose is missing"),
    (split_interleaved, "the features are dealt out in turn"),
    (split_fixed_four, "use num_heads, not a fixed 4"),
    (split_no_return, "is the `return` missing?"),
])
def test_each_split_mistake_has_its_diagnosis(split_fn, message, wrong_report):
    assert check_split_merge(split_fn, merge) is False
    out = wrong_report()
    assert message in out, out
    assert "merge of [B,H,T,Dh]" in out and "undoes the split exactly" in out  # merge still checked


@pytest.mark.parametrize("merge_fn, message", [
    (merge_average, "you averaged the heads"),
    (merge_sum, "you summed the heads"),
    (merge_without_transpose, "merge does not undo split"),
    (merge_without_transpose, "your position 1 starts with feature 0 of position 4"),
    (merge_interleaved, "the heads' features are interleaved"),
    (merge_no_reshape, "reshape to [B,T,64]"),
])
def test_each_merge_mistake_has_its_diagnosis(merge_fn, message, wrong_report):
    assert check_split_merge(split, merge_fn) is False
    out = wrong_report()
    assert message in out, out


def test_view_after_transpose_is_explained(capsys):
    assert check_split_merge(split, merge_view_after_transpose) is False
    out = capsys.readouterr().out
    assert "ERROR RuntimeError" in out and "view size is not compatible" in out
    assert "HINT" in out and ".contiguous() before .view" in out and "swapped" in out


def test_a_fixed_width_crash_gets_a_hint(capsys):
    assert check_split_merge(split, merge_fixed_width) is False
    out = capsys.readouterr().out
    assert "ERROR RuntimeError" in out and "read B, T and D" in out


def test_unfinished_reports_todo_without_raising(capsys):
    assert check_split_merge(unfinished_split, unfinished_merge) is False
    out = capsys.readouterr().out
    assert "TODO  unfinished_split still raises NotImplementedError" in out
    assert "TODO  unfinished_merge still raises NotImplementedError" in out
    assert "WRONG" not in out and "HINT" not in out


def test_the_checker_leaves_no_state_behind():
    x = torch.randn(2, 5, 64)
    assert torch.equal(merge(split(x, 4)), x)
