"""Chapter 10's checker: the right answer passes, each typical mistake gets its own diagnosis."""
import pytest
import torch

from revformer.exercises.hooks import check_mean_ablation
from revformer.exercises.solutions.ch10 import my_mean_ablated_logits
from solution_helpers import as_the_books

my_mean_ablated_logits = as_the_books(my_mean_ablated_logits)
from revformer.model import make_model


def ablate(model, ids, layer, head, mean, slice_of="columns", value="mean", every_head=False,
           leave=False, output=False, no_transpose=False, keep_return=True):
    """Mean ablation of one head with a hook, right by default; each keyword switches on one mistake."""
    attention = model.blocks[layer].attention
    heads, dh = attention.num_heads, attention.head_dim
    put = torch.zeros_like(mean) if value == "zero" else mean

    def change(x):
        x = x.clone()
        if every_head:
            x[:] = put.repeat(heads) if put.dim() == 1 else put.repeat(1, heads)
        elif no_transpose:
            x.view(x.size(0), heads, x.size(1), dh)[:, head] = put
        elif slice_of == "no_times_dh":
            x[..., head:head + dh] = put
        else:
            x[..., head * dh:(head + 1) * dh] = put
        return x

    if output:
        handle = attention.out_proj.register_forward_hook(lambda m, args, out: change(out))
    else:
        handle = attention.out_proj.register_forward_pre_hook(
            lambda m, args: (change(args[0]),) if keep_return else None)
    with torch.no_grad():
        logits, _ = model(ids)
    if not leave:
        handle.remove()
    return logits


def run(fn, capsys, **kwargs):
    ok = check_mean_ablation(fn, **kwargs)
    return ok, capsys.readouterr().out


def test_the_solution_passes(capsys):
    ok, out = run(my_mean_ablated_logits, capsys)
    assert ok and "all checks passed" in out and "WRONG" not in out


def test_the_reference_passes_with_a_trained_model(capsys):
    model = make_model(seed=11).eval()  # any model of the book: the check compares with replaced_heads
    ok, out = run(ablate, capsys, model=model)
    assert ok and "trained model" in out and "WRONG" not in out
    ok, _ = run(my_mean_ablated_logits, capsys, model=model, ids=torch.randint(10, (4, 14)))
    assert ok


@pytest.mark.parametrize("mistake, words", [
    (dict(every_head=True), "you replaced every head of layer 1, not only head 2"),
    (dict(slice_of="no_times_dh"), "you replaced columns 2 to 17: head 2's output is columns 32 to 47"),
    (dict(no_transpose=True), "without the transpose"),
    (dict(value="zero"), "you handed on zeros, not the mean"),
    (dict(output=True), "you changed what out_proj returns, not what it reads"),
    (dict(keep_return=False), "your hook changed nothing"),
    (dict(leave=True), "still registered after your function returned"),
])
def test_each_mistake_gets_its_diagnosis(wrong_report, mistake, words):
    ok = check_mean_ablation(lambda *args: ablate(*args, **mistake))
    assert not ok
    assert words in wrong_report()


def test_the_other_layer(wrong_report):
    ok = check_mean_ablation(lambda m, ids, layer, head, mean: ablate(m, ids, 1 - layer, head, mean))
    assert not ok and "not of layer 1" in wrong_report()


def test_a_left_hook_is_taken_off_and_changed_weights_put_back(wrong_report):
    model = make_model(seed=11).eval()
    ids = torch.randint(10, (4, 14))
    with torch.no_grad():
        before = model(ids)[0]

    def spoils(m, ids, layer, head, mean):
        logits = ablate(m, ids, layer, head, mean, leave=True)
        with torch.no_grad():
            m.lm_head.bias.add_(1.0)
        return logits

    assert not check_mean_ablation(spoils, model, ids)
    assert "changed the model's weights" in wrong_report()
    with torch.no_grad():
        assert torch.equal(model(ids)[0], before)
    assert not any(m._forward_pre_hooks or m._forward_hooks for m in model.modules())


def test_returning_the_tuple(wrong_report):
    def both(model, ids, layer, head, mean):
        ablate(model, ids, layer, head, mean)
        return model(ids)

    assert not check_mean_ablation(both)
    assert "return the logits only" in wrong_report()


def test_unfinished_reports_todo_without_raising(capsys):
    def my_mean_ablated_logits(model, ids, layer, head, mean):
        raise NotImplementedError("your code here")

    ok, out = run(my_mean_ablated_logits, capsys)
    assert not ok and "TODO" in out


def test_a_crash_is_reported_not_raised(capsys):
    def broken(model, ids, layer, head, mean):
        return model.blocks[layer].attention.missing

    ok, out = run(broken, capsys)
    assert not ok and "ERROR AttributeError" in out
