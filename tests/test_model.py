import pytest
import torch

from revformer.config import ModelConfig
from revformer.data import encode, split_inputs_labels
from revformer.model import count_parameters, make_model
from revformer.train import answer_loss


def test_parameter_counts():
    model = make_model()
    assert count_parameters(model) == 69_709
    block = model.blocks[0]
    assert count_parameters(block) == 33_472
    assert count_parameters(block.attention) == 16_640
    assert count_parameters(block.ffn) == 16_576
    assert count_parameters(block.norm1) + count_parameters(block.norm2) == 256
    assert count_parameters(make_model(num_heads=1)) == count_parameters(make_model(causal=False)) == 69_709


def test_same_seed_same_values_whatever_heads():
    a, b, c = make_model(4, seed=42), make_model(1, seed=42), make_model(4, seed=42, causal=False)
    for (name, x), y, z in zip(a.state_dict().items(), b.state_dict().values(), c.state_dict().values()):
        assert torch.equal(x, y) and torch.equal(x, z), name
    d = make_model(4, seed=43)
    assert not torch.equal(a.lm_head.weight, d.lm_head.weight)


def test_initialisation():
    model = make_model()
    weights = torch.cat([model.token_embedding.weight.flatten(), model.blocks[0].ffn.fc1.weight.flatten(),
                         model.blocks[1].attention.q_proj.weight.flatten()])
    assert abs(weights.std().item() - 0.02) < 0.001 and abs(weights.mean().item()) < 0.001
    assert all((m.bias == 0).all() for m in model.modules() if isinstance(m, torch.nn.Linear))
    assert (model.final_norm.weight == 1).all()


def test_forward_shapes():
    model = make_model()
    ids = torch.randint(0, 13, (3, 14))
    logits, weights = model(ids)
    assert logits.shape == (3, 14, 13)
    assert len(weights) == 2 and all(w.shape == (3, 4, 14, 14) for w in weights)
    assert make_model(num_heads=1)(ids)[1][0].shape == (3, 1, 14, 14)
    with pytest.raises(ValueError, match="longer than the position table"):
        model(torch.zeros(1, 16, dtype=torch.long))


@pytest.mark.parametrize("k", [0, 5, 7, 12])
def test_future_changes_leave_past_logits_unchanged(k):
    model = make_model()
    ids = torch.randint(0, 13, (4, 14))
    changed = ids.clone()
    changed[:, k + 1:] = (changed[:, k + 1:] + 1) % 13
    a, wa = model(ids)
    b, wb = model(changed)
    assert torch.equal(a[:, : k + 1], b[:, : k + 1])
    assert not torch.allclose(a[:, k + 1:], b[:, k + 1:])
    # without the mask, the past does change: every layer reads the future
    c, _ = model(ids, causal=False)
    d, _ = model(changed, causal=False)
    assert not torch.allclose(c[:, : k + 1], d[:, : k + 1])


def test_mask_reaches_every_layer():
    model = make_model(causal=False)
    _, weights = model(torch.randint(0, 13, (2, 14)), causal=True)
    assert all(torch.count_nonzero(w.triu(1)) == 0 for w in weights)


def test_prompt_embeddings_receive_gradients():
    model = make_model()
    inputs, labels = split_inputs_labels(torch.tensor([encode((3, 1, 4, 2, 0, 5))]))
    logits, _ = model(inputs)
    answer_loss(logits, labels).backward()
    grad = model.token_embedding.weight.grad
    # digit 4 appears only in the prompt inputs (position 3) and in the answer
    # input (position 11); BOS (10) appears only in the prompt and has no label
    assert grad[10].abs().sum() > 0
    assert model.position_embedding.weight.grad[1:7].abs().sum(dim=1).gt(0).all()


def test_loss_mean_over_supervised_targets():
    labels = torch.tensor([[-100] * 7 + [5, 0, 2, 4, 1, 3, 12]])
    logits = torch.full((1, 14, 13), -1e4)
    logits[0, torch.arange(14), labels[0].clamp(min=0)] = 0.0
    logits[0, torch.arange(14), (labels[0].clamp(min=0) + 1) % 13] = 0.0  # two classes share p = 0.5
    loss = answer_loss(logits, labels)
    assert abs(loss.item() - 0.6931) < 1e-3  # the mean, not the sum 4.852
    logits[0, :7] = torch.randn(7, 13) * 100  # prompt positions do not count
    assert abs(answer_loss(logits, labels).item() - loss.item()) < 1e-6


def test_bad_model_config():
    with pytest.raises(ValueError, match="divisible"):
        ModelConfig(num_heads=3)
    with pytest.raises(ValueError, match="positive"):
        make_model(num_heads=0)


def test_hooks_receive_exactly_each_sublayers_output():
    """A forward hook sees the sublayer's own output: nothing adds the residual into it later."""
    model = make_model(seed=6).double()
    ids = torch.randint(0, 13, (2, 14))
    seen = {}
    for i, block in enumerate(model.blocks):
        block.attention.register_forward_hook(lambda m, inputs, out, i=i: seen.__setitem__(("attn", i), (inputs, out)))
        block.ffn.register_forward_hook(lambda m, inputs, out, i=i: seen.__setitem__(("ffn", i), (inputs, out)))
    model(ids)
    for i, block in enumerate(model.blocks):
        inputs, (out, weights) = seen[("attn", i)]
        again, again_weights = block.attention(inputs[0].clone(), *inputs[1:])
        assert torch.equal(out, again) and torch.equal(weights, again_weights)
        (h,), ffn_out = seen[("ffn", i)]
        assert torch.equal(ffn_out, block.ffn(h.clone()))


def test_no_activation_is_changed_in_place():
    """Every module's output keeps version 0: no in-place operation touched it after it was made."""
    model = make_model(seed=7)
    outputs = []

    def keep(module, inputs, out):
        outputs.extend(out if isinstance(out, tuple) else [out])

    for module in model.modules():
        module.register_forward_hook(keep)
    logits, weights = model(torch.randint(0, 13, (2, 14)))
    tensors = [t for t in outputs if isinstance(t, torch.Tensor)] + [logits, *weights]
    assert len(tensors) > 30 and all(t._version == 0 for t in tensors)


def test_the_score_multiplier_scales_every_score_and_is_validated():
    """A multiplier of 2 doubles every score before the softmax: the same weights as doubling q by hand."""
    from revformer.attention import scaled_dot_product_attention

    base = make_model(seed=3)
    doubled = make_model(seed=3, config=ModelConfig(score_multiplier=2.0))
    for x, y in zip(base.state_dict().values(), doubled.state_dict().values()):
        assert torch.equal(x, y)  # the multiplier is not a parameter: same start
    ids = torch.randint(0, 13, (2, 14))
    attention = doubled.blocks[0].attention
    h = doubled.blocks[0].norm1(doubled.token_embedding(ids) + doubled.position_embedding(torch.arange(14)))
    # the query projection's own weights, without the multiplier's hook
    q = attention.split_heads(torch.nn.functional.linear(h, attention.q_proj.weight, attention.q_proj.bias))
    k = attention.split_heads(attention.k_proj(h))
    _, expected = scaled_dot_product_attention(2 * q, k, k)
    assert torch.allclose(doubled(ids)[1][0], expected, atol=1e-6)
    assert not torch.allclose(base(ids)[1][0], expected, atol=1e-6)
    for bad in (0, -1.0, float("inf"), True, "2"):
        with pytest.raises(ValueError, match="score_multiplier must be a positive finite number"):
            ModelConfig(score_multiplier=bad)


def test_a_one_block_model():
    model = make_model(config=ModelConfig(num_layers=1))
    assert len(model.blocks) == 1 and count_parameters(model) == 69_709 - 33_472
    logits, weights = model(torch.randint(0, 13, (2, 14)))
    assert logits.shape == (2, 14, 13) and len(weights) == 1
    with pytest.raises(ValueError, match="num_layers must be a positive int"):
        ModelConfig(num_layers=0)
