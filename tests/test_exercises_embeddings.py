"""Chapter 3's checker: the reference passes, each usual mistake gets its own diagnosis."""
import math

import pytest
import torch

from revformer.exercises.embeddings import check_embed
from revformer.exercises.solutions import ch03
from solution_helpers import as_the_books


def positions_of(ids):
    return torch.arange(ids.size(1), device=ids.device)


def reference(model, ids):
    return model.token_embedding(ids) + model.position_embedding(positions_of(ids))


def by_weight(model, ids):
    return model.token_embedding.weight[ids] + model.position_embedding.weight[: ids.size(1)]


def no_positions(model, ids):
    return model.token_embedding(ids)


def positions_only(model, ids):
    return model.position_embedding(positions_of(ids)).expand(ids.size(0), -1, -1)


def from_one(model, ids):
    return model.token_embedding(ids) + model.position_embedding(positions_of(ids) + 1)


def ids_as_positions(model, ids):
    return model.token_embedding(ids) + model.position_embedding(ids)


def batch_positions(model, ids):
    rows = model.position_embedding(torch.arange(ids.size(0)))  # [B,D]
    return model.token_embedding(ids) + rows.unsqueeze(1)


def batch_positions_broadcast(model, ids):
    return model.token_embedding(ids) + model.position_embedding(torch.arange(ids.size(0)))


def fixed_length(model, ids):
    return model.token_embedding(ids) + model.position_embedding(torch.arange(14))


def concatenated(model, ids):
    pos = model.position_embedding(positions_of(ids)).expand(ids.size(0), -1, -1)
    return torch.cat([model.token_embedding(ids), pos], dim=-1)


def multiplied(model, ids):
    return model.token_embedding(ids) * model.position_embedding(positions_of(ids))


def scaled(model, ids):
    d = model.token_embedding.weight.size(1)
    return model.token_embedding(ids) * math.sqrt(d) + model.position_embedding(positions_of(ids))


def another_model(model, ids):
    from revformer.model import make_model

    other = make_model(seed=0)
    return other.token_embedding(ids) + other.position_embedding(positions_of(ids))


def no_return(model, ids):
    reference(model, ids)


def unfinished(model, ids):
    raise NotImplementedError("your code here")


@pytest.mark.parametrize("fn", [reference, by_weight, as_the_books(ch03.my_embed)])
def test_right_answers_pass(fn, capsys):
    assert check_embed(fn) is True
    out = " ".join(capsys.readouterr().out.split())
    assert "all checks passed" in out and "WRONG" not in out


@pytest.mark.parametrize("fn, message", [
    (no_positions, "no positions were added"),
    (positions_only, "the token rows are missing"),
    (from_one, "positions are counted from 1"),
    (ids_as_positions, "the ids were used as positions"),
    (batch_positions, "the position table was indexed by the batch"),
    (concatenated, "were concatenated"),
    (multiplied, "the two parts were multiplied"),
    (scaled, "multiplied by sqrt(d_model)"),
    (another_model, "use its `model` argument"),
    (no_return, "is the `return` missing?"),
])
def test_each_mistake_has_its_diagnosis(fn, message, wrong_report):
    assert check_embed(fn) is False
    out = wrong_report()
    assert message in out, out


@pytest.mark.parametrize("fn", [fixed_length, batch_positions_broadcast])
def test_a_shape_crash_is_reported_with_a_hint(fn, capsys):
    assert check_embed(fn) is False
    out = " ".join(capsys.readouterr().out.split())
    assert "ERROR RuntimeError" in out and "torch.arange(ids.size(1))" in out


def test_unfinished_reports_todo_without_raising(capsys):
    assert check_embed(unfinished) is False
    out = " ".join(capsys.readouterr().out.split())
    assert "TODO" in out and "NotImplementedError" in out and "WRONG" not in out and "HINT" not in out
