"""Comparing two groups trained from the same seeds: ``paired(first, second, seeds)``.

Chapters 16-19 train two kinds of model from the same seeds (same initial
weights where the shapes allow, same data, same batches), so their results
come in pairs, one a seed. A pair's difference removes what the seed did to
both; the comparison looks at the differences only:

- their signs: in how many seeds the second group is above the first;
- the exact two-sided sign-flip p-value: if the two groups were exchangeable,
  each difference would be as likely negative as positive; of the ``2^n``
  ways to flip the signs of the ``n`` differences, the share whose mean is at
  least as far from 0 as the one observed. With ``n`` pairs it can never be
  below ``1/2^(n-1)`` (the observed signs and all of them flipped): 1/16 for
  five seeds, however large and consistent the effect is;
- a 95% t-interval on the mean difference, for a positive measure (a loss, a
  step count) on the mean log ratio, so that it reads as a ratio.

Five pairs can show that a difference is consistent in sign; they cannot
show a small p-value, nor that it holds for other data or batch orders.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass


def _t_density(x: float, df: int) -> float:
    log_c = (math.lgamma((df + 1) / 2) - math.lgamma(df / 2)
             - 0.5 * math.log(df * math.pi))
    return math.exp(log_c - (df + 1) / 2 * math.log1p(x * x / df))


def t_cdf(x: float, df: int) -> float:
    """P(T <= x) for Student's t with ``df`` degrees of freedom (Simpson's rule, error
    below 1e-9)."""
    if isinstance(df, bool) or not isinstance(df, int) or df < 1:
        raise ValueError(f"df must be a positive int, got {df!r}")
    if x < 0:
        return 1.0 - t_cdf(-x, df)
    # substitute x = tan(u): the density's long tail becomes a smooth function
    # on [0, atan(x)]
    top, n = math.atan(x), 2000
    f = [_t_density(math.tan(top * i / n), df) / math.cos(top * i / n) ** 2
         for i in range(n + 1)]
    area = (f[0] + f[-1] + 4 * sum(f[1:-1:2]) + 2 * sum(f[2:-1:2])) * top / (3 * n)
    return 0.5 + area


def t_quantile(p: float, df: int) -> float:
    """The ``x`` with ``t_cdf(x, df) == p`` (bisection), for 0 < p < 1."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be between 0 and 1, got {p!r}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        high *= 2
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if t_cdf(middle, df) < p else (low, middle)
    return (low + high) / 2


def sign_flip_p(differences) -> float:
    """Exact two-sided p-value of the sign-flip test: the share of sign patterns whose
    |sum| >= the observed."""
    d = [float(x) for x in differences]
    if not d:
        raise ValueError("the sign-flip test needs at least one difference")
    if len(d) > 20:
        raise ValueError(f"the exact test enumerates 2^n sign patterns; "
                         f"n = {len(d)} is over 20")
    observed = abs(sum(d))
    tolerance = 1e-12 * max(1.0, sum(abs(x) for x in d))
    hits = sum(abs(sum(s * x for s, x in zip(signs, d))) >= observed - tolerance
               for signs in itertools.product((1, -1), repeat=len(d)))
    return hits / 2 ** len(d)


@dataclass(frozen=True)
class Paired:
    """The comparison of ``second`` against ``first``, one pair a seed (see the
    module's docstring)."""

    seeds: tuple
    first: tuple
    second: tuple
    differences: tuple  # second - first; log(second / first) when log
    log: bool
    p_value: float
    p_floor: float  # the smallest p-value n pairs can give: 1 / 2^(n-1)
    mean: float  # of the differences
    low: float | None  # 95% t-interval of the mean; None with one pair
    high: float | None

    @property
    def n(self) -> int:
        return len(self.differences)

    @property
    def higher(self) -> int:
        """Seeds in which the second group is above the first."""
        return sum(d > 0 for d in self.differences)

    @property
    def lower(self) -> int:
        return sum(d < 0 for d in self.differences)

    @property
    def ties(self) -> int:
        return sum(d == 0 for d in self.differences)

    @property
    def ratio(self) -> float:
        """exp(mean log ratio): the geometric mean of second / first (log comparisons
        only)."""
        if not self.log:
            raise ValueError("ratio is defined for a log comparison "
                             "(paired(..., log=True))")
        return math.exp(self.mean)

    def summary(self, first_name: str, second_name: str, measure: str,
                digits: int = 3) -> str:
        """One sentence for a page: the signs, the mean (ratio) with its interval, the
        p-value and its floor."""
        signs = (f"{second_name} is higher in {self.higher} of {self.n} seeds, "
                 f"lower in {self.lower}"
                 + (f", equal in {self.ties}" if self.ties else ""))
        if self.log:
            middle = (f"the ratio {second_name}/{first_name} of {measure} "
                      f"is {self.ratio:.{digits}g}")
            interval = (f" (95% t-interval {math.exp(self.low):.{digits}g} "
                        f"to {math.exp(self.high):.{digits}g})"
                        if self.low is not None else "")
        else:
            middle = (f"the mean difference {second_name} - {first_name} of {measure} "
                      f"is {self.mean:+.{digits}g}")
            interval = (f" (95% t-interval {self.low:+.{digits}g} "
                        f"to {self.high:+.{digits}g})"
                        if self.low is not None else "")
        return (f"{signs}; {middle}{interval}; sign-flip p = {self.p_value:.3g} "
                f"(the smallest {self.n} pairs can give is {self.p_floor:.3g}).")


def paired(first, second, seeds=None, log: bool = False,
           confidence: float = 0.95) -> Paired:
    """Compare ``second`` with ``first``, two equal-length sequences of one value a
    seed.

    ``log=True`` compares log(second / first) (both must be positive): the
    interval is then on the mean log ratio and ``Paired.ratio`` is its
    exponential. ``seeds`` only labels the pairs.
    """
    first, second = [float(x) for x in first], [float(x) for x in second]
    if len(first) != len(second) or not first:
        raise ValueError(f"paired needs two non-empty sequences of one value a seed, "
                         f"of equal length; got {len(first)} and {len(second)}")
    seeds = tuple(range(len(first))) if seeds is None else tuple(seeds)
    if len(seeds) != len(first):
        raise ValueError(f"got {len(seeds)} seeds for {len(first)} pairs")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence!r}")
    values = first + second
    if any(not math.isfinite(v) for v in values):
        raise ValueError("every value must be a finite number")
    if log:
        if any(v <= 0 for v in values):
            raise ValueError("log=True compares ratios, "
                             "so every value must be positive")
        differences = [math.log(b / a) for a, b in zip(first, second)]
    else:
        differences = [b - a for a, b in zip(first, second)]
    n = len(differences)
    mean = sum(differences) / n
    low = high = None
    if n >= 2:
        sd = math.sqrt(sum((d - mean) ** 2 for d in differences) / (n - 1))
        half = t_quantile(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n)
        low, high = mean - half, mean + half
    return Paired(seeds, tuple(first), tuple(second), tuple(differences), log,
                  sign_flip_p(differences), 1 / 2 ** (n - 1), mean, low, high)


__all__ = ["Paired", "paired", "sign_flip_p", "t_cdf", "t_quantile"]
