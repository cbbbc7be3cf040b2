"""Chapter 8's checker: right steps pass, each usual mistake gets its own diagnosis."""
import pytest
import torch
import torch.nn.functional as F

from revformer.exercises import training
from revformer.exercises.solutions import ch08
from solution_helpers import as_the_books
from revformer.exercises.training import check_train_step
from revformer.train import answer_loss


def clip(model, **kwargs):
    kwargs.setdefault("error_if_nonfinite", True)
    return torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, **kwargs)


def package(model, optimizer, x, y):
    # a step written out (the chapter's solution): calling train_step is off limits
    return as_the_books(ch08.my_train_step)(model, optimizer, x, y)


def all_rows(model, optimizer, x, y):
    optimizer.zero_grad()
    logits, _ = model(x)  # [B,14,13]: the -100 labels of positions 0-6 are ignored
    loss = answer_loss(logits, y)
    loss.backward()
    clip(model)
    optimizer.step()
    return loss.item()


def zero_grad_last(model, optimizer, x, y):
    logits, _ = model(x)
    loss = F.cross_entropy(logits.reshape(-1, 13), y.reshape(-1))
    loss.backward()
    clip(model)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss


def log_softmax_first(model, optimizer, x, y):  # log_softmax twice is log_softmax: right
    optimizer.zero_grad()
    logits, _ = model(x)
    loss = answer_loss(torch.log_softmax(logits, dim=-1), y)
    loss.backward()
    clip(model)
    optimizer.step()
    return loss.detach()


@pytest.mark.parametrize("fn", [as_the_books(ch08.my_train_step), all_rows, zero_grad_last, log_softmax_first])
def test_right_steps_pass(fn, capsys):
    assert check_train_step(fn) is True
    out = capsys.readouterr().out
    assert "all checks passed" in out and "WRONG" not in out and "raises" in out


def _step(order, loss_of=None, cap=1.0, **clip_kwargs):
    """A step that runs the named calls in ``order`` ("clip_value": clip_grad_value_ at
    ``cap``)."""
    def fn(model, optimizer, x, y):
        loss = None
        for call in order:
            if call == "zero":
                optimizer.zero_grad(set_to_none=True)
            elif call == "loss":
                if loss_of is None:
                    logits, _ = model(x)
                    loss = answer_loss(logits, y)
                else:
                    loss = loss_of(model, x, y)
            elif call == "backward":
                loss.backward()
            elif call == "clip":
                clip(model, **clip_kwargs)
            elif call == "clip_value":
                torch.nn.utils.clip_grad_value_(model.parameters(), cap)
            elif call == "step":
                optimizer.step()
        return loss.detach()
    return fn


RIGHT = ("zero", "loss", "backward", "clip", "step")
BY_VALUE = ("zero", "loss", "backward", "clip_value", "step")
EACH_ENTRY = ("you clipped each entry, not the norm: clip_grad_value_ caps every "
              "gradient entry on its own")


def softmax_loss(model, x, y):
    logits, _ = model(x)
    return answer_loss(torch.softmax(logits, -1), y)


def mean_over_14(model, x, y):
    logits, _ = model(x)
    return F.cross_entropy(logits.reshape(-1, 13), y.reshape(-1), reduction="sum") / y.numel()


def labels_from_inputs(model, x, y):
    logits, _ = model(x)
    labels = torch.cat([x[:, 1:], y[:, -1:]], dim=1)
    return F.cross_entropy(logits.reshape(-1, 13), labels.reshape(-1))


def from_position_8(model, x, y):
    logits, _ = model(x)
    return answer_loss(logits[:, 8:], y[:, 8:])


def scaled_loss(model, x, y):
    logits, _ = model(x)
    return 2 * answer_loss(logits, y)


MISTAKES = [
    (_step(("loss", "backward", "clip", "step")), "zero_grad() is missing"),
    (_step(("zero", "loss", "step", "backward", "clip")), "step() ran before backward()"),
    (_step(("zero", "loss", "backward", "step", "clip")), "clip_grad_norm_ ran after step()"),
    (_step(("zero", "loss", "backward", "step")), "the update used the unclipped gradient"),
    (_step(("zero", "loss", "clip", "backward", "step")), "the update used the unclipped gradient"),
    # the teacher's review: these two were told "step() ran before backward()", which neither did
    (_step(("zero", "loss", "backward", "clip")), "optimizer.step() is never called"),
    (_step(("zero", "loss", "backward", "zero", "clip", "step")), "zero_grad() ran between backward() and step()"),
    # the teacher's review: clip_grad_value_ was told that clip_grad_norm_ is missing
    # (no entry reaches a cap of 1: the weights of no clip) or that the weights differ
    (_step(BY_VALUE), EACH_ENTRY),
    (_step(BY_VALUE, cap=0.1), EACH_ENTRY),
    (_step(RIGHT, softmax_loss), "a softmax ran before the cross-entropy"),
    (_step(RIGHT, mean_over_14), "divided by B x 14"),
    (_step(RIGHT, labels_from_inputs), "the loss counts the prompt positions 0-6 too"),
    (_step(RIGHT, from_position_8), "the loss leaves out position 7"),
    (_step(RIGHT, scaled_loss), "your loss is"),
    (_step(RIGHT, error_if_nonfinite=False), "pass error_if_nonfinite=True"),
]


@pytest.mark.parametrize("fn, message", MISTAKES)
def test_each_mistake_has_its_diagnosis(fn, message, wrong_report):
    assert check_train_step(fn) is False
    out = wrong_report()
    assert message in out, out


def test_the_value_clip_is_watched_only_while_the_reader_steps(capsys):
    def crashes_after_clipping(model, optimizer, x, y):
        _step(BY_VALUE)(model, optimizer, x, y)
        raise ValueError("a bug after the clip")

    plain = torch.nn.utils.clip_grad_value_
    for fn in (_step(BY_VALUE), crashes_after_clipping):
        assert check_train_step(fn) is False
        assert torch.nn.utils.clip_grad_value_ is plain
        assert torch.nn.utils.clip_grad.clip_grad_value_ is plain
    assert "ERROR ValueError" in capsys.readouterr().out


def test_the_clipping_case_clips():
    # the SGD case can only see a missing clip if the gradient's norm is over the limit
    model = training.make_model(seed=training._MODEL_SEED)
    x, y = training._batches(1, seed=0)[0]
    logits, _ = model(x)
    answer_loss(logits, y).backward()
    assert clip(model).item() > 1.5


def test_mismatched_labels_get_a_hint(capsys):
    def sliced_labels(model, optimizer, x, y):
        optimizer.zero_grad()
        logits, _ = model(x)  # [B,14,13] against the 7 labels of positions 7-13: the shapes disagree
        loss = answer_loss(logits, y[:, 7:])
        loss.backward()
        clip(model)
        optimizer.step()
        return loss

    assert check_train_step(sliced_labels) is False
    out = capsys.readouterr().out
    assert "ERROR" in out and "HINT" in out and "answer_loss skips the -100 labels" in out


def test_returns(capsys):
    def no_return(model, optimizer, x, y):
        package(model, optimizer, x, y)

    assert check_train_step(no_return) is False
    assert "returned None" in capsys.readouterr().out

    def logits_back(model, optimizer, x, y):
        package(model, optimizer, x, y)
        return model(x)[0]

    assert check_train_step(logits_back) is False
    assert "not one number" in capsys.readouterr().out


def test_the_reader_model_is_not_the_checker_model(capsys):
    # the checker hands out copies: a step that breaks its model cannot break the next case
    before = [p.clone() for p in training.make_model(seed=training._MODEL_SEED).parameters()]
    check_train_step(package)
    after = list(training.make_model(seed=training._MODEL_SEED).parameters())
    assert all(torch.equal(a, b) for a, b in zip(before, after))


def test_unfinished_reports_todo_without_raising(capsys):
    def my_train_step(model, optimizer, x, y):
        raise NotImplementedError("your code here")

    assert check_train_step(my_train_step) is False
    out = capsys.readouterr().out
    assert "TODO" in out and "NotImplementedError" in out and "WRONG" not in out
