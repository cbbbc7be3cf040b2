"""Chapter 1: the solution of its exercise."""
from ...data import BOS, EOS, SEP


def my_encode(digits):
    question = [int(d) for d in digits]  # a new list: the caller's digits stay as they are
    return [BOS] + question + [SEP] + question[::-1] + [EOS]  # [::-1]: a reversed copy
