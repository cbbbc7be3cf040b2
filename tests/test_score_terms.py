"""revformer.analysis.score_terms: a layer-0 head's scores split into token, position and bias terms."""
import math

import pytest
import torch

from revformer.analysis import SCORE_PARTS, score_terms
from revformer.config import ModelConfig
from revformer.model import make_model

NAMES = [f"{q}·{k}" for q in SCORE_PARTS for k in SCORE_PARTS]


def _model(**config) -> torch.nn.Module:
    """A fresh ``make_model()`` whose LayerNorm and projection biases are not at their initial 1 and 0,
    so that every one of the nine terms is non-zero."""
    model = make_model(seed=7, config=ModelConfig(**config)).eval()
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for block in model.blocks:
            block.norm1.weight.add_(0.3 * torch.randn(block.norm1.weight.shape, generator=generator))
            block.norm1.bias.copy_(0.5 * torch.randn(block.norm1.bias.shape, generator=generator))
            for linear in (block.attention.q_proj, block.attention.k_proj):
                linear.bias.copy_(0.5 * torch.randn(linear.bias.shape, generator=generator))
    return model


def _ids(length: int = 14) -> torch.Tensor:
    return torch.randint(0, 12, (length,), generator=torch.Generator().manual_seed(3))  # [T]


def _model_scores(model, ids: torch.Tensor) -> torch.Tensor:
    """The model's own layer-0 scaled scores ``[H,T,T]``, recorded inside its attention module."""
    attn, recorded = model.blocks[0].attention, {}

    def keep(module, args, output):
        recorded["x"] = args[0]

    handle = attn.register_forward_hook(keep)
    try:
        model(ids[None], causal=False)
    finally:
        handle.remove()
    x = recorded["x"]  # [1,T,D]: what the attention read, norm1's output
    q, k = attn.split_heads(attn.q_proj(x)), attn.split_heads(attn.k_proj(x))  # [1,H,T,Dh]
    return (q @ k.transpose(-2, -1) / math.sqrt(attn.head_dim))[0]  # [H,T,T]


def test_terms_sum_to_the_models_scores_for_every_head():
    model, ids = _model(), _ids()
    scores = _model_scores(model, ids)  # [H,T,T]
    _, weights = model(ids[None], causal=False)  # unmasked, [1,H,T,T] per layer
    for head in range(model.blocks[0].attention.num_heads):
        terms = score_terms(model, ids, layer=0, head=head)
        assert list(terms) == NAMES
        assert all(t.shape == (14, 14) for t in terms.values())
        assert all(t.abs().max() > 1e-4 for t in terms.values()), "every term takes part"
        total = sum(terms.values())
        torch.testing.assert_close(total, scores[head])
        torch.testing.assert_close(torch.softmax(total, dim=-1), weights[0][0, head])


def test_a_shorter_sample_splits_too():
    model, ids = _model(), _ids(9)
    torch.testing.assert_close(sum(score_terms(model, ids, head=3).values()), _model_scores(model, ids)[3])


def test_a_model_with_scaled_scores_is_refused():
    with pytest.raises(ValueError, match="scales its scores by 2.0.*score_multiplier=1"):
        score_terms(_model(score_multiplier=2.0), _ids())


def test_layer_1_is_refused_with_the_reason():
    model = _model()
    with pytest.raises(ValueError, match="residual stream"):
        score_terms(model, _ids(), layer=1)


@pytest.mark.parametrize("layer", [2, -1, True, 0.0, "0"])
def test_a_layer_the_model_lacks_is_refused(layer):
    with pytest.raises(ValueError, match="layer must be"):
        score_terms(_model(), _ids(), layer=layer)


@pytest.mark.parametrize("head", [4, -1, False, 1.0])
def test_a_head_the_layer_lacks_is_refused(head):
    with pytest.raises(ValueError, match="head must be 0-3"):
        score_terms(_model(), _ids(), head=head)


@pytest.mark.parametrize("ids", [torch.zeros(1, 14, dtype=torch.long), torch.tensor(3),
                                 torch.zeros(0, dtype=torch.long), torch.zeros(16, dtype=torch.long),
                                 [1, 2, 3]])
def test_ids_that_are_not_one_sample_are_refused(ids):
    with pytest.raises(ValueError, match=r"one sample, a 1-D tensor \[T\]"):
        score_terms(_model(), ids)


def test_without_a_position_table_the_position_terms_are_zero():
    model, ids = _model(), _ids()
    with torch.no_grad():
        model.position_embedding.weight.zero_()
    terms = score_terms(model, ids)
    for name, term in terms.items():
        if "position" in name:
            assert torch.count_nonzero(term) == 0, name
        else:
            assert term.abs().max() > 1e-4, name
    torch.testing.assert_close(sum(terms.values()), _model_scores(model, ids)[0])
