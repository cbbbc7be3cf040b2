"""Chapter 12's checker: the right answer passes, each typical mistake gets its own diagnosis."""
import numpy as np
import pytest
import torch

from revformer.analysis import attention_maps
from revformer.data import encode
from revformer.exercises.alignment import check_reversal_weight
from revformer.exercises.solutions.ch12 import my_reversal_weight
from revformer.model import make_model
from solution_helpers import as_the_books

my_reversal_weight = as_the_books(my_reversal_weight)


def reversal(weights, queries=range(7, 13), key=lambda q: 13 - q, transpose=False):
    """The reversal weight, right by default; each keyword switches on one typical mistake."""
    w = np.asarray(weights)
    if transpose:
        w = np.swapaxes(w, -1, -2)
    return np.mean([w[:, :, q, key(q) % 14] for q in queries], axis=0)


def run(fn, capsys, **kwargs):
    ok = check_reversal_weight(fn, **kwargs)
    return ok, capsys.readouterr().out


def sample_weights():
    model = make_model(seed=3)
    return attention_maps(model, torch.tensor(encode([5, 0, 3, 1, 1, 2])[:14]))  # [2,4,14,14]


def test_solution_and_reference_pass(capsys):
    for fn in (my_reversal_weight, reversal):
        ok, out = run(fn, capsys, weights=sample_weights())
        assert ok and "all checks passed" in out and "WRONG" not in out
        assert "the trained model's weights [2, 4, 14, 14]: equals" in out


def test_a_torch_answer_passes(capsys):
    ok, out = run(lambda w: torch.tensor(reversal(w)), capsys)
    assert ok, out


@pytest.mark.parametrize("mistake, words", [
    (dict(key=lambda q: 12 - q), "key 12-q, one position left"),
    (dict(key=lambda q: 14 - q), "key 14-q, one position right"),
    (dict(key=lambda q: q + 1), "next-answer key"),
    (dict(queries=range(8, 14)), "one row late"),
    (dict(queries=range(0, 13)), "included the query rows of the prompt"),
    (dict(queries=range(1, 13)), "included the query rows of the prompt"),
    (dict(transpose=True), "swapped the query and key axes"),
])
def test_each_mistake_gets_its_diagnosis(capsys, mistake, words):
    ok, out = run(lambda w: reversal(w, **mistake), capsys)
    assert not ok and "WRONG" in out and "not yet" in out
    assert words in " ".join(out.split()), out


@pytest.mark.parametrize("fn, words", [
    (lambda w: np.asarray(w)[:, :, 7:13, :].mean(axis=(-1, -2)), "averaged over the keys instead of reading one"),
    (lambda w: np.asarray(w)[:, :, 7:13, 1:7].mean(axis=(-1, -2)), "averaged over the six prompt keys"),
    (lambda w: 6 * reversal(w), "added the six queries"),
    (lambda w: reversal(w).mean(axis=1), "averaged over the heads"),
    (lambda w: reversal(w).T, "one row per layer"),
    (lambda w: reversal(w)[0], "the heads of layer 0 alone"),  # the teacher's review: was "averaged over the layers"
    (lambda w: reversal(w)[1], "the heads of layer 1 alone"),
    (lambda w: np.stack([np.asarray(w)[:, :, q, 13 - q] for q in range(7, 13)], -1), "average them over the six"),
])
def test_other_mistakes(capsys, fn, words):
    ok, out = run(fn, capsys)
    assert not ok and words in " ".join(out.split()), out


def test_unfinished_and_crash_do_not_raise(capsys):
    def my_reversal_weight(weights):
        raise NotImplementedError("your code here")

    ok, out = run(my_reversal_weight, capsys)
    assert not ok and "TODO" in out
    ok, out = run(lambda w: w[99], capsys)
    assert not ok and "ERROR IndexError" in out
    ok, out = run(lambda w: None, capsys)
    assert not ok and "return" in out
