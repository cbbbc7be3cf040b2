"""Chapter 2's checker: the reference passes, each usual mistake gets its own diagnosis."""
import pytest

from revformer.data import split_inputs_labels
from revformer.exercises.labels import check_split_inputs_labels
from revformer.exercises.solutions import ch02
from solution_helpers import as_the_books


def reference(full):
    # written out: calling split_inputs_labels is off limits
    labels = full[:, 1:].clone()
    labels[:, :7] = -100
    return full[:, :-1].contiguous(), labels


def ignored(labels, count, fill=-100):
    labels = labels.clone()
    labels[:, :count] = fill
    return labels


def not_shifted(full):
    return full[:, :-1], ignored(full[:, :-1], 7)


def inputs_as_labels(full):
    return full[:, :-1], full[:, :-1].clone()


def prompt_not_ignored(full):
    return full[:, :-1], full[:, 1:].clone()


def one_too_many(full):
    return full[:, :-1], ignored(full[:, 1:], 8)


def one_too_few(full):
    return full[:, :-1], ignored(full[:, 1:], 6)


def prompt_length_ignored(full):
    return full[:, :-1], ignored(full[:, 1:], 9)


def zero_fill(full):
    return full[:, :-1], ignored(full[:, 1:], 7, 0)


def answer_only(full):
    return full[:, :-1], full[:, 8:].clone()


def in_place(full):
    labels = full[:, 1:]  # a view of full
    labels[:, :7] = -100
    return full[:, :-1], labels


def inputs_from_one(full):
    return full[:, 1:], ignored(full[:, 1:], 7)


def swapped(full):
    inputs, labels = split_inputs_labels(full)
    return labels, inputs


def uncut(full):
    return full, ignored(full, 8)


def floats(full):
    inputs, labels = split_inputs_labels(full)
    return inputs.float(), labels.float()


def fixed_batch(full):
    inputs, labels = split_inputs_labels(full)
    return inputs.view(3, 14), labels.view(3, 14)


def not_contiguous(full):  # the teacher's review: passed, although the task asks for contiguous inputs
    inputs, labels = split_inputs_labels(full)
    return full[:, :-1].long(), labels


def first_sample_only(full):  # the teacher's review: the message quoted sample 0, the right one
    inputs, labels = split_inputs_labels(full)
    labels = full[:, 1:].clone()
    labels[0, :7] = -100
    return inputs, labels


def one_tensor(full):
    return full[:, :-1]


def no_return(full):
    split_inputs_labels(full)


def unfinished(full):
    raise NotImplementedError("your code here")


@pytest.mark.parametrize("fn", [reference, as_the_books(ch02.my_split_inputs_labels)])
def test_right_answers_pass(fn, capsys):
    assert check_split_inputs_labels(fn) is True
    out = " ".join(capsys.readouterr().out.split())
    assert "all checks passed" in out and "WRONG" not in out


@pytest.mark.parametrize("fn, message", [
    (not_shifted, "your labels are not shifted: position 7's label is <SEP>"),
    (inputs_as_labels, "your labels are the inputs"),
    (prompt_not_ignored, "the prompt labels are not ignored"),
    (one_too_many, "one position too many is ignored"),
    (one_too_few, "one position too few is ignored"),
    (prompt_length_ignored, "two positions too many are ignored"),
    (zero_fill, "the ignored labels are 0"),
    (answer_only, "keep one entry per input position"),
    (in_place, "changed the caller's `full`"),
    (inputs_from_one, "your inputs start at position 1"),
    (swapped, "inputs and labels are swapped"),
    (uncut, "the 15 tokens were not cut"),
    (floats, "the tensors hold floats"),
    (not_contiguous, "inputs.is_contiguous() is False"),
    (first_sample_only, "positions 0-6 hold -100 in sample 0 only; sample 1's are"),
    (one_tensor, "return two tensors"),
    (no_return, "is the `return` missing?"),
])
def test_each_mistake_has_its_diagnosis(fn, message, wrong_report):
    assert check_split_inputs_labels(fn) is False
    out = wrong_report()
    assert message in out, out


def test_a_crash_is_reported_with_a_hint(capsys):
    assert check_split_inputs_labels(fixed_batch) is False
    out = " ".join(capsys.readouterr().out.split())
    assert "ERROR RuntimeError" in out and "full.size(0)" in out


def test_unfinished_reports_todo_without_raising(capsys):
    assert check_split_inputs_labels(unfinished) is False
    out = " ".join(capsys.readouterr().out.split())
    assert "TODO" in out and "NotImplementedError" in out and "WRONG" not in out and "HINT" not in out
