"""Interventions through hooks (revformer.interventions), checked against models changed by hand."""
import copy

import pytest
import torch

from revformer.generate import generate
from revformer.interventions import (head_outputs, replaced_heads, replaced_sublayers, sublayer_outputs,
                                     zeroed_heads)
from revformer.model import make_model
from revformer.probes import logit_lens, residual_stream

from model_helpers import batch, no_hooks_left


def _out_proj_columns_zeroed(model, pairs):
    """A copy of ``model`` whose out_proj ignores the heads of ``pairs``: their Dh input columns set to 0."""
    copied = copy.deepcopy(model)
    with torch.no_grad():
        for layer, head in pairs:
            attention = copied.blocks[layer].attention
            dh = attention.head_dim
            attention.out_proj.weight[:, head * dh:(head + 1) * dh] = 0.0
    return copied


@pytest.mark.parametrize("pairs", [[(0, 1)], [(1, 2), (0, 3)], [(1, h) for h in range(4)]])
def test_zeroed_heads_is_the_model_with_those_out_proj_columns_zeroed_by_hand(pairs):
    model = make_model(seed=8).double()
    ids, _ = batch()
    full, full_weights = model(ids)
    by_hand, hand_weights = _out_proj_columns_zeroed(model, pairs)(ids)
    with zeroed_heads(model, pairs):
        zeroed, weights = model(ids)
    torch.testing.assert_close(zeroed, by_hand, rtol=1e-12, atol=1e-12)
    assert not torch.allclose(zeroed, full)
    for got, hand in zip(weights, hand_weights):
        torch.testing.assert_close(got, hand, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(weights[0], full_weights[0])  # the weights are what each head computed
    assert torch.equal(model(ids)[0], full) and no_hooks_left(model)  # outside the block, whole again


def test_zeroed_heads_refuses_what_the_model_does_not_have():
    model = make_model(seed=5)
    for bad, message in [((2, 0), "layers 0-1"), ((0, 4), "heads 0-3"), ((-1, 0), "layers 0-1"),
                         ((0,), "pairs"), ((0, 1.0), "pairs"), ("01", "pairs"), ((True, 0), "pairs")]:
        with pytest.raises(ValueError, match=message):
            with zeroed_heads(model, [bad]):
                pass
    with pytest.raises(ValueError, match="once"):
        with zeroed_heads(model, [(0, 2), [0, 2]]):
            pass
    with pytest.raises(ValueError, match="heads 0-0"):
        with zeroed_heads(make_model(num_heads=1), [(0, 1)]):
            pass
    assert no_hooks_left(model)


def test_zeroed_heads_also_covers_generation_without_the_cache():
    model = make_model(seed=6).double()
    ids, _ = batch(4)
    by_hand = generate(_out_proj_columns_zeroed(model, [(0, 0), (1, 3)]), ids[:, :8])
    with zeroed_heads(model, [(0, 0), (1, 3)]):
        assert torch.equal(generate(model, ids[:, :8]), by_hand)


def test_head_outputs_are_what_each_head_hands_to_the_output_projection():
    model = make_model(seed=3).double()
    ids = torch.randint(0, 13, (5, 14))
    outputs = head_outputs(model, ids)
    assert [o.shape for o in outputs] == [(5, 4, 14, 16)] * 2
    block = model.blocks[0]
    x = block.norm1(model.token_embedding(ids) + model.position_embedding(torch.arange(14)))
    attended, _ = block.attention(x)
    torch.testing.assert_close(block.attention.out_proj(block.attention.merge_heads(outputs[0])), attended)
    assert no_hooks_left(model)
    with pytest.raises(ValueError, match="ids must be"):
        head_outputs(model, "0123")


def test_replacing_a_head_by_its_mean_is_not_zeroing_it():
    model = make_model(seed=4).double()
    ids = torch.randint(0, 13, (6, 14))
    full, _ = model(ids)
    mean = head_outputs(model, ids)[0][:, 3].mean(dim=0)  # [T,Dh]: layer 0, head 3, over the batch
    with replaced_heads(model, {(0, 3): mean}):
        averaged, _ = model(ids)
        seen = head_outputs(model, ids)[0][:, 3]  # what out_proj now reads for head 3
    torch.testing.assert_close(seen, mean.expand(6, 14, 16))
    with zeroed_heads(model, [(0, 3)]):
        zeroed, _ = model(ids)
    assert not torch.allclose(averaged, full) and not torch.allclose(averaged, zeroed)
    assert torch.equal(model(ids)[0], full)
    for bad, match in [((2, 0), "cannot replace head"), ((0, 4), "cannot replace head"), (0, "pairs")]:
        with pytest.raises(ValueError, match=match):
            with replaced_heads(model, {bad: mean}):
                pass
    with pytest.raises(ValueError, match=r"must be \[16\], \[T,16\] or \[B,T,16\]"):
        with replaced_heads(model, {(0, 1): torch.zeros(14, 8)}):
            pass
    assert no_hooks_left(model)


def test_a_mean_per_position_replaces_the_right_positions_at_every_length():
    """During generation a pass covers positions 0..t-1: each takes its own positions' vectors."""
    model = make_model(seed=5).double()
    ids = torch.randint(0, 13, (4, 14))
    mean = head_outputs(model, ids)[1][:, 0].mean(dim=0)  # [14,Dh]
    with replaced_heads(model, {(1, 0): mean}):
        full, _ = model(ids)
        short, _ = model(ids[:, :9])  # positions 0-8, as the second step of generation reads them
    torch.testing.assert_close(short, full[:, :9])
    with pytest.raises(ValueError, match="has 5 positions"):
        with replaced_heads(model, {(1, 0): mean[:5]}):
            model(ids)
    assert no_hooks_left(model)


def test_resample_ablation_hands_on_each_samples_own_replacement():
    """A [B,T,Dh] replacement: sample b gets row b, at the positions of the call. Handing a head its
    own outputs changes nothing; its outputs on the previous sample give the other sample's write."""
    model = make_model(seed=5).double()
    ids = torch.randint(0, 13, (4, 14))
    own = head_outputs(model, ids)[0][:, 2]                    # [4,14,Dh]
    plain, _ = model(ids)
    with replaced_heads(model, {(0, 2): own}):
        same, _ = model(ids)
        short, _ = model(ids[:, :9])
    torch.testing.assert_close(same, plain)
    torch.testing.assert_close(short, plain[:, :9])
    with replaced_heads(model, {(0, 2): own.roll(1, dims=0)}):
        moved = head_outputs(model, ids)[0]
    assert not torch.allclose(moved[0, 2], own[0])  # head_outputs records what the head computes
    with replaced_heads(model, {(0, 2): own.roll(1, dims=0)}), pytest.raises(ValueError,
                                                                           match="has 4 samples"):
        model(ids[:2])
    assert no_hooks_left(model)


def test_sublayer_outputs_are_what_each_sublayer_adds():
    model = make_model(seed=4).double()
    ids, _ = batch()
    outputs = sublayer_outputs(model, ids)
    assert list(outputs) == [(0, "attention"), (0, "ffn"), (1, "attention"), (1, "ffn")]
    stream = residual_stream(model, ids)
    torch.testing.assert_close(stream["embeddings"] + outputs[(0, "attention")], stream["after attention 0"])
    torch.testing.assert_close(stream["after attention 1"] + outputs[(1, "ffn")], stream["after block 1"])
    assert no_hooks_left(model)
    with pytest.raises(ValueError, match="ids must be"):
        sublayer_outputs(model, "0123")


def test_zeroing_a_sublayer_passes_the_stream_on_and_a_mean_is_taken_by_position():
    model = make_model(seed=5).double()
    ids, _ = batch()
    lens = logit_lens(model, ids)
    with replaced_sublayers(model, {(1, "attention"): 0, (1, "ffn"): 0}):
        torch.testing.assert_close(model(ids)[0], lens["after block 0"])  # block 1 is now the identity
    with replaced_sublayers(model, {(1, "ffn"): torch.zeros(64, dtype=torch.float64)}):
        torch.testing.assert_close(model(ids)[0], lens["after attention 1"])
    mean = sublayer_outputs(model, ids)[(0, "ffn")].mean(dim=0)  # [T,D]
    with replaced_sublayers(model, {(0, "ffn"): mean}):
        averaged, _ = model(ids)
        prefix, _ = model(ids[:, :9])  # a shorter prefix takes the first positions' vectors
        stream = residual_stream(model, ids)
    torch.testing.assert_close(prefix, averaged[:, :9])
    torch.testing.assert_close(stream["after block 0"] - stream["after attention 0"], mean.expand(6, 14, 64))
    assert torch.equal(model(ids)[0], lens["after block 1"]) and no_hooks_left(model)


def test_replaced_sublayers_works_under_generation_without_the_cache():
    model = make_model(seed=6)
    ids, _ = batch(4)
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
    assert no_hooks_left(model)


def test_a_mean_with_too_few_positions_is_refused():
    model = make_model(seed=7)
    ids, _ = batch()
    with pytest.raises(ValueError, match="has 5 positions"):
        with replaced_sublayers(model, {(0, "ffn"): torch.zeros(5, 64)}):
            model(ids)
    assert no_hooks_left(model)


@pytest.mark.parametrize("intervention", [
    lambda model, mean: zeroed_heads(model, [(1, 0)]),
    lambda model, mean: replaced_heads(model, {(0, 2): mean}),
    lambda model, mean: replaced_sublayers(model, {(1, "attention"): 0}),
    lambda model, mean: replaced_sublayers(model, {(0, "ffn"): 0}),
])
def test_a_kv_cache_inside_an_intervention_is_refused_not_silently_wrong(intervention):
    """The cache calls the layers' parts position by position, past the hooks' view of the positions."""
    model = make_model(seed=9)
    ids, _ = batch(3)
    mean = head_outputs(model, ids)[0][:, 2].mean(dim=0)  # [14,Dh]
    with intervention(model, mean):
        with pytest.raises(ValueError, match="kv_cache=False"):
            generate(model, ids[:, :8], kv_cache=True)
        generate(model, ids[:, :8])  # the model's own forward pass is fine
    assert torch.equal(generate(model, ids[:, :8], kv_cache=True), generate(model, ids[:, :8]))
    assert no_hooks_left(model)
