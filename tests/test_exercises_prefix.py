"""Chapter 11's checker: the right answer passes, each typical mistake gets its own diagnosis."""
import pytest
import torch

from revformer.analysis import change_future_answers
from revformer.exercises.prefix import check_prefix_logit_change
from revformer.exercises.solutions.ch11 import my_prefix_logit_change
from solution_helpers import as_the_books

my_prefix_logit_change = as_the_books(my_prefix_logit_change)
from revformer.model import make_model


def change(model, inputs, causal=None, positions=8, pass_causal=True, probabilities=False,
           signed=False, mean=False, same=False, in_place=False, as_tensor=False):
    """The prefix-logit change, right by default; each keyword switches on one typical mistake."""
    changed = inputs if same else change_future_answers(inputs)
    if in_place:
        changed = inputs
        changed[:, 8:] = (changed[:, 8:] + 1) % 10
    with torch.no_grad():
        if pass_causal:
            a, b = model(inputs, causal=causal)[0], model(changed, causal=causal)[0]
        else:
            a, b = model(inputs)[0], model(changed)[0]
    a, b = a[:, :positions], b[:, :positions]
    if probabilities:
        a, b = a.softmax(-1), b.softmax(-1)
    d = a - b
    if signed:
        return d.max().item()
    if mean:
        return d.abs().mean().item()
    return d.abs() if as_tensor else d.abs().max().item()


def run(fn, capsys, **kwargs):
    ok = check_prefix_logit_change(fn, **kwargs)
    return ok, capsys.readouterr().out


def test_the_solution_passes(capsys):
    ok, out = run(my_prefix_logit_change, capsys)
    assert ok and "all checks passed" in out and "WRONG" not in out


def test_the_reference_passes_with_a_trained_model(capsys):
    model = make_model(seed=11).eval()  # any model of the book: the check compares with prefix_logit_change
    ok, out = run(change, capsys, model=model)
    assert ok and "trained model, causal=False" in out


@pytest.mark.parametrize("mistake, words", [
    (dict(positions=14), "you compared all 14 positions"),
    (dict(positions=9), "you compared positions 0-8"),
    (dict(positions=7), "you compared positions 0-6 only"),
    (dict(pass_causal=False), "you did not pass causal=False to the model"),
    (dict(probabilities=True), "you compared probabilities (after softmax), not logits"),
    (dict(signed=True), "you took the largest signed difference"),
    (dict(mean=True), "you averaged the changes"),
    (dict(same=True), "both passes read the same input"),
    (dict(in_place=True), "changed the caller's inputs in place"),
    (dict(as_tensor=True), "return the largest change as one float"),
])
def test_each_mistake_gets_its_diagnosis(wrong_report, mistake, words):
    ok = check_prefix_logit_change(lambda m, x, causal=None: change(m, x, causal, **mistake))
    assert not ok
    assert words in wrong_report()


def test_the_inputs_are_put_back():
    model = make_model(seed=11).eval()
    inputs = torch.randint(10, (4, 14))
    kept = inputs.clone()
    check_prefix_logit_change(lambda m, x, causal=None: change(m, x, causal, in_place=True), model, inputs)
    assert torch.equal(inputs, kept)


def test_unfinished_reports_todo_without_raising(capsys):
    def my_prefix_logit_change(model, inputs, causal=None):
        raise NotImplementedError("your code here")

    ok, out = run(my_prefix_logit_change, capsys)
    assert not ok and "TODO" in out


def test_a_crash_is_reported_not_raised(capsys):
    def broken(model, inputs, causal=None):
        return model(inputs, mask=causal)

    ok, out = run(broken, capsys)
    assert not ok and "ERROR TypeError" in out
