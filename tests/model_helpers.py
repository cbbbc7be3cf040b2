"""Helpers the tests of probes and interventions share."""
import torch

from revformer.data import encode, split_inputs_labels


def batch(n=6, seed=0):
    """``n`` encoded samples split into teacher-forced inputs and labels, ``[n,14]`` each."""
    generator = torch.Generator().manual_seed(seed)
    digits = torch.randint(0, 10, (n, 6), generator=generator)
    return split_inputs_labels(torch.tensor([encode(d) for d in digits]))


def no_hooks_left(model):
    return all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())
