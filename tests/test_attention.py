import math

import pytest
import torch
import torch.nn.functional as F

from revformer.attention import MultiHeadSelfAttention, causal_mask, scaled_dot_product_attention


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("heads, length", [(1, 1), (4, 14), (2, 7), (8, 15)])
@pytest.mark.parametrize("causal", [True, False])
def test_matches_pytorch_reference(seed, heads, length, causal):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(3, heads, length, 16, generator=g, dtype=torch.float64) for _ in range(3))
    out, weights = scaled_dot_product_attention(q, k, v, causal=causal)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    assert out.shape == (3, heads, length, 16) and weights.shape == (3, heads, length, length)
    torch.testing.assert_close(out, ref, rtol=1e-10, atol=1e-12)


def test_gradients_match_reference():
    g = torch.Generator().manual_seed(3)
    base = [torch.randn(2, 4, 14, 16, generator=g, dtype=torch.float64) for _ in range(3)]
    probe = torch.randn(2, 4, 14, 16, generator=g, dtype=torch.float64)
    ours = [t.clone().requires_grad_() for t in base]
    theirs = [t.clone().requires_grad_() for t in base]
    (scaled_dot_product_attention(*ours)[0] * probe).sum().backward()
    (F.scaled_dot_product_attention(*theirs, is_causal=True) * probe).sum().backward()
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-10, atol=1e-12)


def test_rows_sum_to_one_and_future_is_exactly_zero():
    q, k, v = (torch.randn(2, 4, 14, 16) for _ in range(3))
    _, weights = scaled_dot_product_attention(q, k, v, causal=True)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 4, 14))
    future = torch.ones(14, 14, dtype=torch.bool).triu(1)
    assert torch.count_nonzero(weights[..., future]) == 0
    assert (weights[..., ~future] > 0).all()  # the past and the diagonal stay readable
    _, open_weights = scaled_dot_product_attention(q, k, v, causal=False)
    assert torch.count_nonzero(open_weights[..., future]) == future.sum() * 8


def test_hand_example():
    q = k = torch.eye(2).reshape(1, 1, 2, 2)
    v = torch.tensor([[10.0, 0.0], [0.0, 20.0]]).reshape(1, 1, 2, 2)
    out, weights = scaled_dot_product_attention(q, k, v, causal=True)
    assert weights[0, 0, 0].tolist() == [1.0, 0.0]
    assert out[0, 0, 0].tolist() == [10.0, 0.0]
    e = math.exp(1 / math.sqrt(2))
    torch.testing.assert_close(weights[0, 0, 1], torch.tensor([1 / (1 + e), e / (1 + e)]))
    assert [round(x, 3) for x in weights[0, 0, 1].tolist()] == [0.330, 0.670]
    assert [round(x, 3) for x in out[0, 0, 1].tolist()] == [3.302, 13.395]


def test_mask_is_upper_triangle_without_diagonal():
    m = causal_mask(5)
    assert m.dtype == torch.bool and not m.diagonal().any()
    assert m[0, 1] and not m[1, 0] and int(m.sum()) == 10


def reference_copy(ours: MultiHeadSelfAttention) -> torch.nn.MultiheadAttention:
    """PyTorch's own module holding the same weights as ``ours`` (Q, K, V stacked)."""
    ref = torch.nn.MultiheadAttention(ours.d_model, ours.num_heads, batch_first=True).double()
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight]))
        ref.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias]))
        ref.out_proj.weight.copy_(ours.out_proj.weight)
        ref.out_proj.bias.copy_(ours.out_proj.bias)
    return ref


@pytest.mark.parametrize("heads", [1, 4])
@pytest.mark.parametrize("causal", [True, False])
def test_module_matches_nn_multihead_attention(heads, causal):
    torch.manual_seed(heads)
    ours = MultiHeadSelfAttention(64, heads, causal=causal).double()
    ref = reference_copy(ours)
    x = torch.randn(2, 14, 64, dtype=torch.float64)
    out, weights = ours(x)
    mask = causal_mask(14) if causal else None
    ref_out, ref_weights = ref(x, x, x, attn_mask=mask, need_weights=True, average_attn_weights=False)
    assert out.shape == (2, 14, 64) and weights.shape == (2, heads, 14, 14)
    torch.testing.assert_close(out, ref_out, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(weights, ref_weights, rtol=1e-10, atol=1e-12)


def test_module_gradients_match_nn_multihead_attention():
    torch.manual_seed(5)
    ours = MultiHeadSelfAttention(64, 4).double()
    ref = reference_copy(ours)
    x = torch.randn(2, 14, 64, dtype=torch.float64)
    probe = torch.randn(2, 14, 64, dtype=torch.float64)
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    (ours(xa)[0] * probe).sum().backward()
    (ref(xb, xb, xb, attn_mask=causal_mask(14), need_weights=False)[0] * probe).sum().backward()
    torch.testing.assert_close(xa.grad, xb.grad, rtol=1e-10, atol=1e-12)
    grad_in = torch.cat([ours.q_proj.weight.grad, ours.k_proj.weight.grad, ours.v_proj.weight.grad])
    torch.testing.assert_close(grad_in, ref.in_proj_weight.grad, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(ours.out_proj.weight.grad, ref.out_proj.weight.grad, rtol=1e-10, atol=1e-12)


def test_module_override_of_mask_per_call():
    attention = MultiHeadSelfAttention(64, 4, causal=True)
    x = torch.randn(1, 6, 64)
    _, on = attention(x)
    _, off = attention(x, causal=False)
    assert torch.count_nonzero(on.triu(1)) == 0 and torch.count_nonzero(off.triu(1)) > 0


@pytest.mark.parametrize("d_model, heads", [(64, 3), (64, 0), (64, -4), (0, 4), (64, 2.0)])
def test_module_rejects_bad_sizes(d_model, heads):
    with pytest.raises(ValueError):
        MultiHeadSelfAttention(d_model, heads)


def test_bad_shapes_rejected():
    with pytest.raises(ValueError, match="must have shape"):
        scaled_dot_product_attention(torch.randn(1, 1, 3, 4), torch.randn(1, 1, 3, 4), torch.randn(1, 1, 3, 5))
    with pytest.raises(ValueError, match=r"\[B,T,64\]"):
        MultiHeadSelfAttention()(torch.randn(2, 14, 32))


def test_unmasked_fewer_queries_are_the_last_rows_and_the_mask_needs_them_all():
    """Chapter 20's newest query: alone and unmasked, it reads what the last row of
    the masked attention reads; with the mask, q must hold every position."""
    g = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(2, 4, 14, 16, generator=g, dtype=torch.float64) for _ in range(3))
    full_out, full_w = scaled_dot_product_attention(q, k, v, causal=True)
    out, w = scaled_dot_product_attention(q[:, :, -1:], k, v, causal=False)
    assert w.shape == (2, 4, 1, 14)
    torch.testing.assert_close(out, full_out[:, :, -1:], rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(w, full_w[:, :, -1:], rtol=1e-12, atol=1e-12)
    open_out, _ = scaled_dot_product_attention(q, k, v, causal=False)
    out, _ = scaled_dot_product_attention(q[:, :, 7:], k, v, causal=False)
    torch.testing.assert_close(out, open_out[:, :, 7:], rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="without the mask, q may hold fewer"):
        scaled_dot_product_attention(q[:, :, 7:], k, v, causal=True)
    with pytest.raises(ValueError, match="must have shape"):
        scaled_dot_product_attention(torch.randn(1, 1, 15, 4), torch.randn(1, 1, 14, 4), torch.randn(1, 1, 14, 4))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_softmax_over_keys_is_torch_softmax(dtype):
    """The written-out softmax is the library's, with masked keys and rows far apart."""
    from revformer.attention import softmax_over_keys

    g = torch.Generator().manual_seed(7)
    scores = torch.randn(2, 3, 14, 14, generator=g, dtype=dtype) * 4
    scores[0, 1, 5] -= 60.0       # a whole row far down: the maximum moves with it
    scores[1, 0, 9, 2] += 900.0   # one key far above the rest: exp would overflow unshifted
    scores[0, 2, 6, :6] -= 900.0  # every other key far below: their terms underflow to 0
    scores = scores.masked_fill(causal_mask(14), float("-inf"))
    ours = softmax_over_keys(scores)
    torch.testing.assert_close(ours, torch.softmax(scores, dim=-1))
    assert torch.isfinite(ours).all() and torch.count_nonzero(ours[..., causal_mask(14)]) == 0
    torch.testing.assert_close(ours.sum(-1), torch.ones(2, 3, 14, dtype=dtype))


def test_softmax_over_keys_gradient_matches_torch_softmax():
    from revformer.attention import softmax_over_keys

    g = torch.Generator().manual_seed(8)
    base = torch.randn(2, 4, 14, 14, generator=g, dtype=torch.float64).masked_fill(causal_mask(14), float("-inf"))
    probe = torch.randn(2, 4, 14, 14, generator=g, dtype=torch.float64)
    ours, theirs = base.clone().requires_grad_(), base.clone().requires_grad_()
    (softmax_over_keys(ours) * probe).sum().backward()
    (torch.softmax(theirs, dim=-1) * probe).sum().backward()
    torch.testing.assert_close(ours.grad, theirs.grad, rtol=1e-10, atol=1e-12)


def test_a_querys_weights_ignore_later_rows_bit_for_bit():
    """Causality holds exactly, not only up to rounding: row i is computed from row i alone."""
    from revformer.attention import softmax_over_keys

    g = torch.Generator().manual_seed(9)
    mask = causal_mask(14)
    scores = torch.randn(8, 4, 14, 14, generator=g) * 5
    changed = scores.clone()
    changed[..., 10:, :11] = torch.randn(8, 4, 4, 11, generator=g) * 50  # rows 10-13 only
    a = softmax_over_keys(scores.masked_fill(mask, float("-inf")))
    b = softmax_over_keys(changed.masked_fill(mask, float("-inf")))
    assert torch.equal(a[..., :10, :], b[..., :10, :])
    assert not torch.equal(a[..., 10:, :], b[..., 10:, :])
