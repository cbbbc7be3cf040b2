import pytest
import torch

from revformer.analysis import head_outputs, replaced_heads
from revformer.model import make_model


def test_head_outputs_are_what_each_head_hands_to_the_output_projection():
    model = make_model(seed=3).double()
    ids = torch.randint(0, 13, (5, 14))
    outputs = head_outputs(model, ids)
    assert [o.shape for o in outputs] == [(5, 4, 14, 16)] * 2
    block = model.blocks[0]
    x = block.norm1(model.token_embedding(ids) + model.position_embedding(torch.arange(14)))
    attended, _ = block.attention(x)
    torch.testing.assert_close(block.attention.out_proj(block.attention.merge_heads(outputs[0])), attended)
    assert all(not m._forward_pre_hooks for m in model.modules())  # the hooks are gone


def test_replacing_a_head_by_zeros_is_knocking_it_out_and_by_its_mean_is_not():
    model = make_model(seed=4).double()
    ids = torch.randint(0, 13, (6, 14))
    full, _ = model(ids)
    with replaced_heads(model, {(1, 2): torch.zeros(16, dtype=torch.float64)}):
        zeroed, _ = model(ids)
    knocked, _ = model(ids, knockout=[(1, 2)])
    torch.testing.assert_close(zeroed, knocked)
    mean = head_outputs(model, ids)[0][:, 3].mean(dim=0)  # [T,Dh]: layer 0, head 3, over the batch
    with replaced_heads(model, {(0, 3): mean}):
        averaged, _ = model(ids)
        last_rows, _ = model(ids, logits_from=7)  # the last block's fewer rows take the last positions
    torch.testing.assert_close(last_rows, averaged[:, 7:])
    assert not torch.allclose(averaged, full) and not torch.allclose(averaged, model(ids, knockout=[(0, 3)])[0])
    assert torch.equal(model(ids)[0], full)  # outside the block, the model is itself again
    for bad in [(2, 0), (0, 4)]:
        with pytest.raises(ValueError, match="cannot replace head"):
            with replaced_heads(model, {bad: mean}):
                pass


def test_a_mean_per_position_replaces_the_right_positions_at_every_length():
    """During generation a pass covers positions 0..t-1; the last block of training, t-p..T-1."""
    model = make_model(seed=5).double()
    ids = torch.randint(0, 13, (4, 14))
    mean = head_outputs(model, ids)[1][:, 0].mean(dim=0)  # [14,Dh]
    with replaced_heads(model, {(1, 0): mean}):
        full, _ = model(ids)
        short, _ = model(ids[:, :9])  # positions 0-8, as the second step of generation reads them
    torch.testing.assert_close(short, full[:, :9])  # the same positions get the same replacement
