import pytest
import torch

from revformer.data import IGNORE_INDEX
from revformer.interventions import replaced_sublayers, zeroed_heads
from revformer.model import make_model
from revformer.probes import answer_scores, knockout_table, logit_lens, margins, residual_stream

from model_helpers import batch, no_hooks_left


def test_residual_stream_and_logit_lens_follow_the_forward_pass():
    model = make_model(seed=3).double()
    ids, _ = batch()
    stream = residual_stream(model, ids)
    assert list(stream) == ["embeddings", "after attention 0", "after block 0", "after attention 1", "after block 1"]
    block = model.blocks[0]
    x = model.token_embedding(ids) + model.position_embedding(torch.arange(14))
    torch.testing.assert_close(stream["embeddings"], x)
    u = x + block.attention(block.norm1(x))[0]
    torch.testing.assert_close(stream["after attention 0"], u)
    torch.testing.assert_close(stream["after block 0"], u + block.ffn(block.norm2(u)))
    lens = logit_lens(model, ids)
    torch.testing.assert_close(lens["after block 1"], model(ids)[0])
    torch.testing.assert_close(lens["after block 0"], model.lm_head(model.final_norm(stream["after block 0"])))
    assert no_hooks_left(model)
    with pytest.raises(ValueError, match=r"ids must be a \[B,T\]"):
        residual_stream(model, ids[0])
    with pytest.raises(ValueError, match=r"ids must be a \[B,T\]"):
        logit_lens(model, ids[0])


def test_margins_and_answer_scores():
    logits = torch.tensor([[[2.0, 0.5, 1.0], [0.0, 3.0, -1.0]]])  # [1,2,3]
    torch.testing.assert_close(margins(logits, torch.tensor([[0, 2]])), torch.tensor([[1.0, -4.0]]))
    labels = torch.tensor([[IGNORE_INDEX, 1]])
    s = answer_scores(logits, labels)
    assert s.margins.shape == (1, 1) and s.min_margin == pytest.approx(3.0)
    assert s.sequence_accuracy == 1.0 and s.loss == pytest.approx(torch.log1p(torch.exp(torch.tensor(-3.0))
                                                                               + torch.exp(torch.tensor(-4.0))).item())
    model = make_model(seed=8)
    ids, labels = batch()
    scored = answer_scores(model(ids)[0], labels)
    assert scored.margins.shape == (6, 7) and 0 <= scored.digit_accuracy <= 1
    with pytest.raises(ValueError, match="logits must be"):
        margins(logits[0], torch.tensor([0, 2]))
    with pytest.raises(ValueError, match="logits must be"):
        answer_scores(logits, labels[:, :1])
    with pytest.raises(ValueError, match="same, non-empty"):
        answer_scores(logits, torch.full((1, 2), IGNORE_INDEX))
    with pytest.raises(ValueError, match="same, non-empty"):
        answer_scores(torch.zeros(2, 2, 3), torch.tensor([[IGNORE_INDEX, 0], [0, 0]]))


def test_knockout_table_has_every_part_and_agrees_with_the_model():
    model = make_model(seed=9)
    ids, labels = batch(8)
    rows = knockout_table(model, ids, labels)
    assert len(rows) == 1 + 2 * 4 * 2 + 2 * 2 * 2
    assert rows[0]["part"] == "none"
    assert rows[0]["loss"] == pytest.approx(answer_scores(model(ids)[0], labels).loss)
    zero = next(r for r in rows if (r["part"], r["layer"], r["head"], r["ablation"]) == ("head", 1, 2, "zero"))
    with zeroed_heads(model, [(1, 2)]):
        assert zero["loss"] == pytest.approx(answer_scores(model(ids)[0], labels).loss)
    ffn = next(r for r in rows if (r["part"], r["layer"], r["ablation"]) == ("ffn", 0, "zero"))
    with replaced_sublayers(model, {(0, "ffn"): 0}):
        assert ffn["loss"] == pytest.approx(answer_scores(model(ids)[0], labels).loss)
    assert {(r["part"], r["ablation"]) for r in rows[1:]} == {(p, a) for p in ("head", "attention", "ffn")
                                                               for a in ("zero", "mean")}
    assert no_hooks_left(model) and model.training  # its mode is restored
    with pytest.raises(ValueError, match="inputs and labels"):
        knockout_table(model, ids, labels[:, :7])
