"""Chapter 9's checker: the right answer passes, each typical bug gets its own diagnosis."""
import pytest
import torch

from revformer.data import EOS
from revformer.exercises.decoding import check_greedy_decode
from revformer.model import make_model


def decode(model, prompts, position=-1, feed_back=True, keep_eos=True, steps=7, teacher=False):
    """Greedy decoding, right by default; each keyword switches on one typical bug."""
    tokens = prompts.clone()
    finished = torch.zeros(prompts.size(0), dtype=torch.bool, device=prompts.device)
    new = []
    with torch.no_grad():
        for step in range(steps):
            logits, _ = model(tokens)
            token = logits[:, position].argmax(dim=-1)
            if keep_eos:
                token = token.masked_fill(finished, EOS)
                finished |= token == EOS
            new.append(token)
            fed = prompts[:, 6 - step] if teacher and step < 6 else token
            if feed_back:
                tokens = torch.cat([tokens, fed.unsqueeze(1)], dim=1)
    return torch.stack(new, dim=1)


def teacher_one_pass(model, prompts):
    """Teacher forcing in one pass: the whole true answer goes in, positions 7-13 come out."""
    answer = prompts[:, 1:7].flip(1)
    logits, _ = model(torch.cat([prompts, answer], dim=1))
    return logits[:, 7:].argmax(dim=-1)


def run(fn, capsys, **kwargs):
    ok = check_greedy_decode(fn, **kwargs)
    return ok, capsys.readouterr().out


def test_reference_passes(capsys):
    ok, out = run(decode, capsys)
    assert ok and "all checks passed" in out and "WRONG" not in out


def test_reference_passes_with_a_trained_model(capsys):
    model = make_model(seed=11)  # any model of the book: the check compares with generate
    ok, out = run(decode, capsys, model=model)
    assert ok and "the trained model: all 16 rows" in out


@pytest.mark.parametrize("bug, words", [
    (dict(position=0), "logits[:, 0]"),
    (dict(position=-2), "logits[:, -2], one position too early"),
    (dict(position=7), "always read position 7"),
    (dict(feed_back=False), "same 8-token prompt"),
    (dict(keep_eos=False), "keep emitting EOS"),
    (dict(steps=6), "six tokens, but the answer has seven"),
    (dict(teacher=True), "teacher forcing"),
])
def test_each_bug_gets_its_diagnosis(capsys, bug, words):
    ok, out = run(lambda m, p: decode(m, p, **bug), capsys)
    assert not ok
    assert words in out, out
    assert "WRONG" in out and "not yet" in out


def test_teacher_forcing_in_one_pass(capsys):
    ok, out = run(teacher_one_pass, capsys)
    assert not ok and "teacher forcing" in out and "1 forward pass:" in out


def test_returning_the_prompt_too(capsys):
    ok, out = run(lambda m, p: torch.cat([p, decode(m, p)], dim=1), capsys)
    assert not ok and "tokens[:, 8:]" in out


def test_sampling_is_not_greedy(capsys):
    def sample(model, prompts):
        torch.manual_seed(0)
        tokens = prompts.clone()
        for _ in range(7):
            logits, _ = model(tokens)
            token = torch.multinomial(torch.softmax(logits[:, -1] * 0.1, -1), 1)
            tokens = torch.cat([tokens, token], dim=1)
        return tokens[:, 8:]

    ok, out = run(sample, capsys)
    assert not ok and "differs from step" in out


def test_wrong_type_and_dtype(capsys):
    ok, out = run(lambda m, p: decode(m, p).tolist(), capsys)
    assert not ok and "torch.Tensor" in out
    ok, out = run(lambda m, p: decode(m, p).float(), capsys)
    assert not ok and "integers" in out


def test_unfinished_reports_todo_without_raising(capsys):
    def my_greedy_decode(model, prompts):
        raise NotImplementedError("your code here")

    ok, out = run(my_greedy_decode, capsys)
    assert not ok and "TODO" in out


def test_a_crash_is_reported_not_raised(capsys):
    def broken(model, prompts):
        return model(prompts)[0][:, :, 99]

    ok, out = run(broken, capsys)
    assert not ok and "ERROR IndexError" in out
