"""Chapter 11: the solution of its exercise, written with the lines of
``revformer.analysis.prefix_logit_change``."""
import torch

from ...analysis import change_future_answers
from ...data import PROMPT_LEN


def my_prefix_logit_change(model, inputs, causal=None):
    device = next(model.parameters()).device
    changed = change_future_answers(inputs)              # [B,14]: positions 8-13 differ
    with torch.no_grad():
        a, _ = model(inputs.to(device), causal=causal)   # [B,14,13]
        b, _ = model(changed.to(device), causal=causal)
    prefix = slice(0, PROMPT_LEN)                        # positions 0-7
    return (a[:, prefix] - b[:, prefix]).abs().max().item()  # largest change, a float
