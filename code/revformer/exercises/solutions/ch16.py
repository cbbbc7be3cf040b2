"""Chapter 16: the solution of its exercise, the lines of
``revformer.stats.sign_flip_p``."""
import itertools


def my_sign_flip_p(differences):
    d = [float(x) for x in differences]        # a list or a 1-D tensor: n numbers
    observed = abs(sum(d))                     # how far the observed sum is from 0
    # sums that tie can differ in the last bit, by the order of the additions
    tolerance = 1e-12 * max(1.0, sum(abs(x) for x in d))
    hits = 0
    for signs in itertools.product((1, -1), repeat=len(d)):  # all 2^n assignments
        flipped = sum(s * x for s, x in zip(signs, d))
        hits += abs(flipped) >= observed - tolerance  # two-sided; ties count
    return hits / 2 ** len(d)  # never below 2/2^n: the observed and its mirror
