"""Chapter 2: the solution of its exercise."""


def my_split_inputs_labels(full):
    # [B,14]: tokens 0-13, integer ids in rows of their own
    inputs = full[:, :-1].long().contiguous()
    # [B,14]: tokens 1-14; a copy, so -100 does not land in full
    labels = full[:, 1:].long().clone()
    labels[:, :7] = -100  # positions 0-6 predict prompt tokens: not graded
    return inputs, labels
