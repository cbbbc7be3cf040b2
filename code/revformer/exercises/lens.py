"""Chapter 19's exercise: the logit lens after block 0, with a forward hook.

The reader writes ``my_logit_lens(model, ids)``: the residual stream ``[B,T,D]``
after block 0 (what ``model.blocks[0]`` returns, ``output[0]``; the block returns
``(x, weights)``), kept by a forward hook during one pass of the model, then
read through the model's final LayerNorm and head as if the model stopped
there: logits ``[B,T,13]``. The hook is removed before the function returns.

``check_logit_lens`` runs it on untrained models whose weights are drawn large
(so that every part leaves its mark on the logits) and, when given, on a
trained model, always against ``revformer.probes.logit_lens(model, ids)["after
block 0"]``. It recognises the usual mistakes by computing each one's logits:
the final LayerNorm skipped (or another LayerNorm used), the stream after block
1 (the model's own output), the attention's or the FFN's output instead of the
stream, the stream before block 0's FFN, block 0's input (a pre-hook), softmax
probabilities or log-probabilities instead of logits, the stream ``[B,T,D]``
returned without the head, and a hook left on the model.
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..data import encode
from ..i18n import Message
from ..interventions import sublayer_outputs
from ..model import make_model
from ..probes import logit_lens, residual_stream
from . import expect, run
from .hooks import judge_logits, leaves_model_as_it_was, weights_changed

_TITLE = "check_logit_lens"
_STAGE = "after block 0"
_TOL = dict(atol=1e-5, rtol=1e-4)


def _expect(checker, condition, good, bad):
    return expect(checker, condition, good, bad, width=72)


def lively_model(seed: int, num_heads: int = 4):
    """An untrained model of the book whose weights are drawn large, in eval mode.

    The book's initial weights (N(0, 0.02), LayerNorms at scale 1 and shift 0)
    make every attention row nearly uniform and every sublayer's output small,
    so two different computations can give nearly the same logits. Drawn
    larger, and with LayerNorms of their own scale and shift, each part leaves
    its own clear mark: a checker can tell the usual mistakes apart.
    """
    model = make_model(num_heads, seed=seed)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.Embedding):
                module.weight.normal_(0.0, 1.0, generator=generator)
            elif isinstance(module, nn.Linear):
                module.weight.normal_(0.0, 2.0 / module.in_features ** 0.5, generator=generator)
                module.bias.normal_(0.0, 0.3, generator=generator)
            elif isinstance(module, nn.LayerNorm):
                module.weight.normal_(1.0, 0.3, generator=generator)
                module.bias.normal_(0.0, 0.3, generator=generator)
    return model.eval()


def inputs(rows: int, seed: int) -> torch.Tensor:
    """``[rows,14]`` teacher-forced inputs of random six-digit samples."""
    generator = torch.Generator().manual_seed(seed)
    digits = torch.randint(10, (rows, 6), generator=generator)
    return torch.tensor([encode(d)[:-1] for d in digits.tolist()])


def _device(model) -> torch.device:
    return next(model.parameters()).device


@torch.no_grad()
def _mistakes(model, ids):
    """``(logits, diagnosis)`` of each usual mistake, on this model and these ids."""
    stream = residual_stream(model, ids)  # every stage [B,T,D]
    parts = sublayer_outputs(model, ids)  # (layer, "attention" | "ffn") -> [B,T,D]

    def head(x):
        return model.lm_head(model.final_norm(x))

    right = head(stream[_STAGE])
    last = f"after block {len(model.blocks) - 1}"
    found = [
        (model.lm_head(stream[_STAGE]),
         Message("the final LayerNorm was skipped: the head was trained to read the stream through "
                 "model.final_norm, so apply it first, model.lm_head(model.final_norm(x))")),
        (head(stream[last]),
         Message("you read the stream after the last block: these are the model's own logits. Hook "
                 "model.blocks[0], the first block, and keep its output")),
        (head(parts[(0, "attention")]),
         Message("you read the output of block 0's attention, what it adds to the stream, not the stream "
                 "itself: hook the block, model.blocks[0], whose output[0] is the stream with the "
                 "attention's and the FFN's outputs added")),
        (head(parts[(0, "ffn")]),
         Message("you read the output of block 0's FFN, what it adds to the stream, not the stream itself: "
                 "hook the block, model.blocks[0], whose output[0] is the stream after both additions")),
        (head(stream["after attention 0"]),
         Message("you read the stream after block 0's attention, before its FFN adds its part (what "
                 "norm2 reads): hook the block itself, model.blocks[0], and keep output[0]")),
        (head(stream["embeddings"]),
         Message("you read what block 0 reads (the embeddings), not what it returns: a forward pre-hook "
                 "sees a module's input. Use register_forward_hook, whose output[0] is the stream after "
                 "the block")),
        (torch.softmax(right, dim=-1),
         Message("these are probabilities: the softmax is one step too many. The lens returns the head's "
                 "logits, model.lm_head(model.final_norm(x)), as the model's forward does")),
        (torch.log_softmax(right, dim=-1),
         Message("these are log-probabilities: log_softmax is one step too many. The lens returns the "
                 "head's logits, model.lm_head(model.final_norm(x)), as the model's forward does")),
    ]
    if len(model.blocks) > 1:
        found.append((model.lm_head(model.blocks[1].norm1(stream[_STAGE])),
                      Message("you normalised with block 1's norm1, not the final LayerNorm: the head "
                              "reads the stream through model.final_norm")))
    found.append((model.lm_head(F.layer_norm(stream[_STAGE], stream[_STAGE].shape[-1:])),
                  Message("you normalised with a fresh LayerNorm (F.layer_norm, without the learned "
                          "scale and shift): use the model's own, model.final_norm")))
    return found


def _close(a, b) -> bool:
    return a.shape == b.shape and torch.allclose(a, b, **_TOL)


def _check_case(c, fn, case) -> bool:
    name, model, ids = case
    want = logit_lens(model, ids)[_STAGE]  # [B,T,13]
    try:
        with leaves_model_as_it_was(model) as after:
            out = c.call(fn, model, ids.clone())
    except Exception:
        if c.lines and c.lines[-1].marker == "ERROR" and "tuple" in str(c.lines[-1]):
            c.hint(Message("a block returns a tuple, (x, weights): the stream is output[0]"), width=72)
        raise
    label = name
    if after["changed"]:
        return weights_changed(c, label)
    if isinstance(out, tuple):
        return _expect(c, False, "", Message("{label}: you returned a tuple; return the lens's logits only, "
                                             "one tensor [B,T,13]", label=label))
    if not isinstance(out, torch.Tensor):
        return _expect(c, False, "", Message("return the logits as a torch.Tensor [B,T,13], got {kind}",
                                             kind=type(out).__name__))
    shape = list(out.shape)
    if out.dim() == 3 and shape[:2] == list(want.shape[:2]) and shape[2] == model.config.d_model:
        return _expect(c, False, "", Message("{label}: got shape {shape}, the stream itself [B,T,D]: read it "
                                             "through the final LayerNorm and the head, "
                                             "model.lm_head(model.final_norm(x)), to get [B,T,13]",
                                             label=label, shape=shape))
    return judge_logits(
        c, label, out, want, _close, lambda: _mistakes(model, ids),
        lambda gap: Message("the logits differ from logit_lens(model, ids)[\"after block 0\"] by up to {gap:.3g}",
                            gap=gap),
        Message("{label}: the same logits as logit_lens(model, ids)[\"after block 0\"], and no hook left behind",
                label=label),
        after["left"], "register_forward_hook")


def _cases(model=None, ids=None):
    cases = [
        (Message("an untrained model with large random weights, 8 sequences"), lively_model(3), inputs(8, 1)),
        (Message("an untrained model with large random weights and one head of 64, "
                 "5 sequences"), lively_model(8, num_heads=1), inputs(5, 2)),
    ]
    if model is not None:
        given = ids if ids is not None else inputs(32, seed=4)
        cases.append((Message("the trained model, {rows} sequences", rows=given.size(0)), model,
                      given.to(_device(model))))
    return cases


def check_logit_lens(fn, model=None, ids=None) -> bool:
    """Check the reader's ``fn(model, ids) -> [B,T,13]``, the logit lens after block 0.

    Compares it with ``revformer.probes.logit_lens(model, ids)["after block 0"]``
    on two untrained models drawn large and, when given, on ``model`` (a
    trained model of the book) with ``ids`` ``[B,T]`` (default: 32 random
    samples). Prints a report; never raises on a wrong or unfinished answer;
    removes any hook the reader's function leaves and restores any weight it
    changes. Returns True when all cases pass.
    """
    def body(c):
        for case in _cases(model, ids):
            if not _check_case(c, fn, case):
                return

    return run(_TITLE, body, off_limits=(logit_lens, residual_stream))


__all__ = ["check_logit_lens", "lively_model"]
