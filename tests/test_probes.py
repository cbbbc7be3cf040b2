import pytest
import torch

from revformer.data import IGNORE_INDEX, encode, split_inputs_labels
from revformer.generate import generate
from revformer.model import make_model
from revformer.probes import (answer_scores, knockout_table, logit_lens, margins, replaced_sublayers,
                              residual_stream, sublayer_outputs)


def _batch(n=6, seed=0):
    generator = torch.Generator().manual_seed(seed)
    digits = torch.randint(0, 10, (n, 6), generator=generator)
    return split_inputs_labels(torch.tensor([encode(d) for d in digits]))


def _no_hooks_left(model):
    return all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())


def test_residual_stream_and_logit_lens_follow_the_forward_pass():
    model = make_model(seed=3).double()
    ids, _ = _batch()
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
    assert _no_hooks_left(model)
    with pytest.raises(ValueError, match=r"ids must be a \[B,T\]"):
        residual_stream(model, ids[0])
    with pytest.raises(ValueError, match=r"ids must be a \[B,T\]"):
        logit_lens(model, ids[0])


def test_sublayer_outputs_are_what_each_sublayer_adds():
    model = make_model(seed=4).double()
    ids, _ = _batch()
    outputs = sublayer_outputs(model, ids)
    assert list(outputs) == [(0, "attention"), (0, "ffn"), (1, "attention"), (1, "ffn")]
    stream = residual_stream(model, ids)
    torch.testing.assert_close(stream["embeddings"] + outputs[(0, "attention")], stream["after attention 0"])
    torch.testing.assert_close(stream["after attention 1"] + outputs[(1, "ffn")], stream["after block 1"])
    assert _no_hooks_left(model)
    with pytest.raises(ValueError, match="ids must be"):
        sublayer_outputs(model, "0123")


def test_zeroing_a_sublayer_passes_the_stream_on_and_a_mean_is_taken_by_position():
    model = make_model(seed=5).double()
    ids, _ = _batch()
    lens = logit_lens(model, ids)
    with replaced_sublayers(model, {(1, "attention"): 0, (1, "ffn"): 0}):
        torch.testing.assert_close(model(ids)[0], lens["after block 0"])  # block 1 is now the identity
    with replaced_sublayers(model, {(1, "ffn"): torch.zeros(64, dtype=torch.float64)}):
        torch.testing.assert_close(model(ids)[0], lens["after attention 1"])
    mean = sublayer_outputs(model, ids)[(0, "ffn")].mean(dim=0)  # [T,D]
    with replaced_sublayers(model, {(0, "ffn"): mean}):
        averaged, _ = model(ids)
        last_rows, _ = model(ids, logits_from=7)  # the last block computes rows 7-13 only
        prefix, _ = model(ids[:, :9])  # a shorter prefix takes the first positions' vectors
        stream = residual_stream(model, ids)
    torch.testing.assert_close(last_rows, averaged[:, 7:])
    torch.testing.assert_close(prefix, averaged[:, :9])
    torch.testing.assert_close(stream["after block 0"] - stream["after attention 0"], mean.expand(6, 14, 64))
    assert torch.equal(model(ids)[0], lens["after block 1"]) and _no_hooks_left(model)


def test_replaced_sublayers_works_under_generation_without_the_cache():
    model = make_model(seed=6)
    ids, _ = _batch(4)
    mean = sublayer_outputs(model, ids)[(1, "attention")].mean(dim=0)
    with replaced_sublayers(model, {(1, "attention"): mean}):
        tokens, read = generate(model, ids[:, :8], return_logits=True)  # 7 steps, prefixes of 8 to 14
        full, _ = model(torch.cat([ids[:, :8], tokens[:, :-1]], dim=1))  # the same 14 tokens at once
    torch.testing.assert_close(read, full[:, 7:])  # each step read its own positions' means


@pytest.mark.parametrize("replacements, match", [
    ({(2, "ffn"): 0}, "a sublayer is"),
    ({(0, "mlp"): 0}, "a sublayer is"),
    ({0: 0}, "a sublayer is"),
    ({(0, "ffn"): 1.5}, "must be 0"),
    ({(0, "ffn"): torch.zeros(32)}, "must be 0"),
    ({(0, "attention"): torch.zeros(2, 3, 64)}, "must be 0"),
])
def test_replaced_sublayers_refuses_bad_input(replacements, match):
    model = make_model(seed=7)
    with pytest.raises(ValueError, match=match):
        with replaced_sublayers(model, replacements):
            pass
    assert _no_hooks_left(model)


def test_a_mean_with_too_few_positions_is_refused():
    model = make_model(seed=7)
    ids, _ = _batch()
    with pytest.raises(ValueError, match="has 5 positions"):
        with replaced_sublayers(model, {(0, "ffn"): torch.zeros(5, 64)}):
            model(ids)
    assert _no_hooks_left(model)


def test_margins_and_answer_scores():
    logits = torch.tensor([[[2.0, 0.5, 1.0], [0.0, 3.0, -1.0]]])  # [1,2,3]
    torch.testing.assert_close(margins(logits, torch.tensor([[0, 2]])), torch.tensor([[1.0, -4.0]]))
    labels = torch.tensor([[IGNORE_INDEX, 1]])
    s = answer_scores(logits, labels)
    assert s.margins.shape == (1, 1) and s.min_margin == pytest.approx(3.0)
    assert s.sequence_accuracy == 1.0 and s.loss == pytest.approx(torch.log1p(torch.exp(torch.tensor(-3.0))
                                                                               + torch.exp(torch.tensor(-4.0))).item())
    model = make_model(seed=8)
    ids, labels = _batch()
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
    ids, labels = _batch(8)
    rows = knockout_table(model, ids, labels)
    assert len(rows) == 1 + 2 * 4 * 2 + 2 * 2 * 2
    assert rows[0]["part"] == "none"
    assert rows[0]["loss"] == pytest.approx(answer_scores(model(ids)[0], labels).loss)
    zero = next(r for r in rows if (r["part"], r["layer"], r["head"], r["ablation"]) == ("head", 1, 2, "zero"))
    assert zero["loss"] == pytest.approx(answer_scores(model(ids, knockout=[(1, 2)])[0], labels).loss)
    ffn = next(r for r in rows if (r["part"], r["layer"], r["ablation"]) == ("ffn", 0, "zero"))
    with replaced_sublayers(model, {(0, "ffn"): 0}):
        assert ffn["loss"] == pytest.approx(answer_scores(model(ids)[0], labels).loss)
    assert {(r["part"], r["ablation"]) for r in rows[1:]} == {(p, a) for p in ("head", "attention", "ffn")
                                                               for a in ("zero", "mean")}
    assert _no_hooks_left(model) and model.training  # its mode is restored
    with pytest.raises(ValueError, match="inputs and labels"):
        knockout_table(model, ids, labels[:, :7])
