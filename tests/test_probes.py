import pytest
import torch

from revformer.data import IGNORE_INDEX
from revformer.generate import generate, score
from revformer.interventions import head_outputs, replaced_sublayers, sublayer_outputs, zeroed_heads
from revformer.model import make_model
from revformer.probes import (answer_scores, direct_logit_attribution, head_writes, knockout_table, logit_lens, margins,
                              residual_stream, value_readout)

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


def test_knockout_table_generation_runs_under_the_same_hooks():
    model = make_model(seed=4)
    ids, labels = batch(8)
    rows = knockout_table(model, ids, labels, generation=True)
    assert all("generated_sequence_accuracy" in r for r in rows)
    row = next(r for r in rows if (r["part"], r["layer"], r["head"], r["ablation"]) == ("head", 0, 1, "zero"))
    with zeroed_heads(model, [(0, 1)]):
        expected = score(generate(model, ids[:, :8], kv_cache=False), labels[:, 7:]).sequence_accuracy
    assert row["generated_sequence_accuracy"] == expected
    assert "generated_sequence_accuracy" not in knockout_table(model, ids, labels)[0]
    assert no_hooks_left(model)


def test_head_writes_add_up_to_the_attention_output():
    model = make_model(seed=5).double()
    ids, _ = batch()
    writes = head_writes(model, ids)
    outputs = sublayer_outputs(model, ids)
    assert len(writes) == 2 and writes[0].shape == (6, 4, 14, 64)
    for layer, w in enumerate(writes):
        bias = model.blocks[layer].attention.out_proj.bias
        torch.testing.assert_close(w.sum(dim=1) + bias, outputs[(layer, "attention")])
    with zeroed_heads(model, [(1, 3)]):  # a zeroed head writes nothing
        assert head_writes(model, ids)[1][:, 3].abs().max() == 0
    assert no_hooks_left(model)


def test_direct_logit_attribution_adds_up_to_the_margin():
    model = make_model(seed=6).double()
    with torch.no_grad():  # a non-trivial LayerNorm and head, as after training
        model.final_norm.weight.uniform_(0.5, 1.5)
        model.final_norm.bias.normal_()
        model.lm_head.bias.normal_()
    ids, labels = batch(5)
    parts = direct_logit_attribution(model, ids, labels)
    assert len(parts) == 1 + 2 * (4 + 2) + 1 and all(v.shape == (5, 7) for v in parts.values())
    assert {k[0] for k in parts} == {"embeddings", "head", "bias", "ffn", "final"}
    logits = model(ids)[0][:, 7:]
    torch.testing.assert_close(sum(parts.values()), margins(logits, labels[:, 7:]))
    # one head by hand: its write, centred, over the actual stream's scale, onto right minus rival
    x = residual_stream(model, ids)["after block 1"][:, 7:]
    sigma = (x.var(dim=-1, unbiased=False, keepdim=True) + model.final_norm.eps).sqrt()
    outs = model.blocks[0].attention.out_proj
    o = head_outputs(model, ids)[0][:, 2, 7:]  # [B,P,16]
    c = o @ outs.weight[:, 32:48].T
    y = labels[:, 7:]
    rival = logits.scatter(-1, y.unsqueeze(-1), float("-inf")).argmax(dim=-1)
    d = model.lm_head.weight[y] - model.lm_head.weight[rival]
    by_hand = (d * model.final_norm.weight * (c - c.mean(dim=-1, keepdim=True)) / sigma).sum(dim=-1)
    torch.testing.assert_close(parts[("head", 0, 2)], by_hand)
    # minus_mean: the same head's write less its batch mean, position by position (what mean ablation removes)
    centred = direct_logit_attribution(model, ids, labels, minus_mean=True)
    c = (head_outputs(model, ids)[0][:, 2] @ outs.weight[:, 32:48].T)
    c = (c - c.mean(dim=0))[:, 7:]
    by_hand = (d * model.final_norm.weight * (c - c.mean(dim=-1, keepdim=True)) / sigma).sum(dim=-1)
    torch.testing.assert_close(centred[("head", 0, 2)], by_hand)
    torch.testing.assert_close(centred[("ffn", 1, None)], parts[("ffn", 1, None)])   # only the heads change
    assert no_hooks_left(model)
    with pytest.raises(ValueError, match="ids and labels"):
        direct_logit_attribution(model, ids, labels[:, :7])


def test_direct_logit_attribution_of_a_one_block_model():
    from revformer.config import ModelConfig

    model = make_model(seed=7, config=ModelConfig(num_layers=1)).double()
    ids, labels = batch(4)
    parts = direct_logit_attribution(model, ids, labels)
    assert len(parts) == 1 + 4 + 2 + 1
    torch.testing.assert_close(sum(parts.values()), margins(model(ids)[0][:, 7:], labels[:, 7:]))
    assert len(head_writes(model, ids)) == 1


def test_value_readout_is_what_a_head_writes_from_the_key_it_reads_read_to_the_logits():
    # at query 0 the causal mask leaves one key, 0, so each head's actual write there is W_O^(h) v_h(0):
    # the readout of key 0 is that write, centred, through the final LayerNorm's gamma and lm_head
    model = make_model(seed=5).double()
    with torch.no_grad():
        model.final_norm.weight.uniform_(0.5, 1.5)  # not the initial ones: gamma must be applied
    ids, _ = batch()
    readout = value_readout(model, ids, layer=0)
    assert readout.shape == (ids.size(0), 4, ids.size(1), 13)
    write = head_writes(model, ids)[0][:, :, 0]  # [B,H,D]
    expected = ((write - write.mean(dim=-1, keepdim=True)) * model.final_norm.weight) @ model.lm_head.weight.T
    torch.testing.assert_close(readout[:, :, 0], expected)
    assert not torch.allclose(readout[:, :, 0], readout[:, :, 1])  # each key its own value
    assert no_hooks_left(model)
    for layer in (2, -1, "0"):
        with pytest.raises(ValueError, match="layer must be 0 to 1"):
            value_readout(model, ids, layer=layer)
    with pytest.raises(ValueError, match=r"ids must be a \[B,T\]"):
        value_readout(model, ids[0])
