import pytest
import torch

from revformer.data import EOS, encode
from revformer.generate import KVCache, generate, score
from revformer.model import make_model


def greedy_reference(model, prompts):
    """Greedy decoding by full forwards, one row at a time, without EOS handling."""
    rows = []
    for prompt in prompts:
        tokens = prompt.unsqueeze(0)
        for _ in range(7):
            logits, _ = model(tokens)
            tokens = torch.cat([tokens, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
        rows.append(tokens[0, 8:])
    return torch.stack(rows)


def test_generation_equals_greedy_argmax_and_restores_mode():
    model = make_model(seed=5)
    model.train()
    prompts = torch.tensor([encode(d)[:8] for d in [(3, 1, 4, 2, 0, 5), (0, 2, 8, 2, 2, 3), (9, 9, 9, 9, 9, 9)]])
    out = generate(model, prompts)
    assert model.training
    assert out.shape == (3, 7)
    with torch.no_grad():
        ref = greedy_reference(model.eval(), prompts)
    for row, ref_row in zip(out, ref):
        ends = (ref_row == EOS).nonzero()
        if len(ends):  # from the first EOS on, the row keeps emitting EOS
            first = int(ends[0])
            assert torch.equal(row[: first + 1], ref_row[: first + 1]) and (row[first:] == EOS).all()
        else:
            assert torch.equal(row, ref_row)


class Scripted(torch.nn.Module):
    """A stand-in model whose greedy choice at step s of row b is script[b][s]."""

    def __init__(self, script):
        super().__init__()
        self.script = torch.tensor(script)
        self.anchor = torch.nn.Parameter(torch.zeros(1))
        self.seen = []

    def forward(self, ids, causal=None):
        self.seen.append(ids.clone())
        step = ids.size(1) - 8
        logits = torch.zeros(ids.size(0), ids.size(1), 13)
        logits[torch.arange(ids.size(0)), -1, self.script[:, step]] = 1.0
        return logits, []


def test_eos_is_kept_after_eos():
    model = Scripted([[5, 0, EOS, 7, 7, 7, 7], [1, 2, 3, 4, 5, 6, 7]])
    prompts = torch.tensor([encode((1, 2, 3, 4, 5, 6))[:8]] * 2)
    out = generate(model, prompts)
    assert out.tolist() == [[5, 0, EOS, EOS, EOS, EOS, EOS], [1, 2, 3, 4, 5, 6, 7]]
    # seven forwards, each fed the prompt and the tokens generated so far, never the answer
    assert [ids.size(1) for ids in model.seen] == list(range(8, 15))
    assert torch.equal(model.seen[-1][:, 8:], out[:, :6])


def test_generation_does_not_read_the_answer():
    model = make_model(seed=3)
    a = torch.tensor([encode((1, 2, 3, 4, 5, 6))])
    out = generate(model, a[:, :8])
    assert out.shape == (1, 7)  # only the prompt goes in


@pytest.mark.parametrize("bad, words", [
    (torch.zeros(2, 7, dtype=torch.long), r"\[B,8\]"),
    (torch.tensor([encode((1, 2, 3, 4, 5, 6))])[:, :8].float(), "integer"),
    (torch.tensor([[10, 1, 2, 3, 4, 5, 6, 12]]), "SEP"),
    (torch.tensor([[11, 1, 2, 3, 4, 5, 6, 11]]), "BOS"),
    (torch.tensor([[10, 1, 2, 3, 4, 5, 12, 11]]), "digits"),
    (torch.zeros(0, 8, dtype=torch.long), "empty"),
    ([[10, 1, 2, 3, 4, 5, 6, 11]], "Tensor"),
])
def test_bad_prompts(bad, words):
    with pytest.raises(ValueError, match=words):
        generate(make_model(), bad)


def test_accuracy_worked_cases():
    answer = torch.tensor([[5, 0, 2, 4, 1, 3, EOS]] * 3)
    generated = torch.tensor([
        [5, 0, 2, 4, 1, 9, EOS],  # one wrong digit
        [5, 0, 2, 4, 1, 3, 3],  # six right digits, no EOS
        [5, 0, 2, 4, 1, 3, EOS],  # right
    ])
    one_wrong = score(generated[:1], answer[:1])
    assert one_wrong.digit_accuracy == pytest.approx(5 / 6) and one_wrong.sequence_accuracy == 0
    no_eos = score(generated[1:2], answer[1:2])
    assert no_eos.digit_accuracy == 1.0 and no_eos.sequence_accuracy == 0
    both = score(generated, answer)
    assert both.digits_correct.tolist() == [5, 6, 6]
    assert both.sequence_correct.tolist() == [False, False, True]
    assert both.digit_accuracy == pytest.approx(17 / 18) and both.sequence_accuracy == pytest.approx(1 / 3)
    with pytest.raises(ValueError):
        score(generated[:, :6], answer[:, :6])
    with pytest.raises(ValueError, match="rows"):
        score(generated[:2], answer)


def _trained_small(seed=3, steps=100):
    """A model trained briefly, so that it writes real answers and makes real mistakes."""
    from revformer.config import TrainConfig
    from revformer.data import make_splits, split_inputs_labels
    from revformer.train import batch_schedule, train_model

    config = TrainConfig(steps=steps, eval_every=steps)
    splits = make_splits()
    tx, ty = split_inputs_labels(splits.train)
    vx, vy = split_inputs_labels(splits.val[:64])
    result = train_model(make_model(seed=seed), tx, ty, vx, vy, batch_schedule(tx.size(0), config), config)
    return result.model, splits


def test_a_kv_cache_gives_the_same_tokens_and_logits():
    model, splits = _trained_small()
    prompts = splits.prompts("test")
    plain, plain_logits = generate(model, prompts, return_logits=True)
    cached, cached_logits = generate(model, prompts, kv_cache=True, return_logits=True)
    assert torch.equal(plain, cached) and plain_logits.shape == (512, 7, 13)
    # float32 rounds a product over 8 keys and one over 14 differently: close, not equal
    assert (plain_logits - cached_logits).abs().max() < 1e-5
    double = model.double()
    plain, plain_logits = generate(double, prompts, return_logits=True)
    cached, cached_logits = generate(double, prompts, kv_cache=True, return_logits=True)
    assert torch.equal(plain, cached) and (plain_logits - cached_logits).abs().max() < 1e-6
    assert len(set(plain[:, 0].tolist())) > 1  # a model that really writes different answers


def test_a_kv_cache_computes_each_position_once():
    """14 positions a row (the 8 of the prompt, then one a step) against 8 + 9 + ... + 14 = 77."""
    model = make_model(seed=4)
    read = []
    model.token_embedding.register_forward_hook(lambda m, args, out: read.append(args[0].size(1)))
    prompts = torch.tensor([encode((3, 1, 4, 2, 0, 5))[:8]])
    generate(model, prompts)
    assert sum(read) == 77
    read.clear()
    generate(model, prompts, kv_cache=True)
    assert read == [8, 1, 1, 1, 1, 1, 1] and sum(read) == 14


def test_a_kv_cache_refuses_a_model_without_the_mask():
    prompts = torch.tensor([encode((3, 1, 4, 2, 0, 5))[:8]])
    for model, causal in [(make_model(causal=False), None), (make_model(), False)]:
        with pytest.raises(ValueError, match="needs the causal mask.*stale"):
            generate(model, prompts, causal=causal, kv_cache=True)
    generate(make_model(causal=False), prompts, causal=True, kv_cache=True)  # masked for this call: fine


def test_a_kv_cache_keeps_the_score_multiplier():
    """The cache calls the projections itself, so it must meet the multiplier's hook on the queries."""
    from revformer.config import ModelConfig

    model = make_model(seed=5, config=ModelConfig(score_multiplier=3.0))
    with torch.no_grad():  # larger weights than at the start, so that the scale matters
        for p in model.parameters():
            p.mul_(4)
    prompts = torch.tensor([[10, 3, 1, 4, 2, 0, 5, 11], [10, 9, 9, 1, 0, 2, 7, 11]])
    plain, plain_logits = generate(model, prompts, return_logits=True)
    cached, cached_logits = generate(model, prompts, kv_cache=True, return_logits=True)
    assert torch.equal(plain, cached) and torch.allclose(plain_logits, cached_logits, atol=1e-4)
    for block in model.blocks:
        block.attention.q_proj._forward_hooks.clear()  # the book's scores: other logits
    _, other = generate(model, prompts, kv_cache=True, return_logits=True)
    assert (other - cached_logits).abs().max() > 1e-3


def test_a_kv_cache_reads_one_new_token_a_call():
    model = make_model(seed=6)
    prompts = torch.tensor([[10, 3, 1, 4, 2, 0, 5, 11]])
    cache = KVCache(model)
    cache.next_logits(prompts)
    with pytest.raises(ValueError, match="one new token a call: it has read 8, got 10"):
        cache.next_logits(torch.cat([prompts, prompts[:, :2]], dim=1))
