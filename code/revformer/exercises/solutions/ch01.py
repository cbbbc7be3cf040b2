"""Chapter 1: the solution of its exercise."""
from ...data import BOS, EOS, SEP


def my_encode(digits):
    # a new list: the caller's digits stay as they are
    question = [int(d) for d in digits]
    return [BOS] + question + [SEP] + question[::-1] + [EOS]  # [::-1]: a reversed copy
