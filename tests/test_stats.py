"""The paired comparison of two groups over seeds, against cases computed by hand."""
import math

import pytest

from revformer.stats import paired, sign_flip_p, t_cdf, t_quantile


@pytest.mark.parametrize("df, quantile", [(1, 12.706205), (2, 4.302653), (4, 2.776445), (9, 2.262157),
                                          (30, 2.042272)])
def test_t_quantiles_match_the_printed_tables(df, quantile):
    assert t_quantile(0.975, df) == pytest.approx(quantile, abs=2e-6)
    assert t_cdf(quantile, df) == pytest.approx(0.975, abs=1e-6)  # the tables round to 6 decimals
    assert t_quantile(0.025, df) == pytest.approx(-quantile, abs=2e-6)


def test_t_cdf_is_the_cauchy_cdf_for_one_degree_of_freedom():
    for x in (-3.0, -0.5, 0.0, 0.7, 10.0):
        assert t_cdf(x, 1) == pytest.approx(0.5 + math.atan(x) / math.pi, abs=1e-9)


def test_sign_flip_p_by_hand():
    # all five the same sign: only the observed pattern and its mirror reach |sum| = 15, 2 of 32
    assert sign_flip_p([1, 2, 3, 4, 5]) == 2 / 32
    # [3, -1, 1], sum 3: the sums of the 8 patterns are 3, 1, 5, 3, -3, -5, -1, -3; six have |sum| >= 3
    assert sign_flip_p([3, -1, 1]) == 6 / 8
    assert sign_flip_p([1, -1]) == 1.0  # a mean of 0 is as extreme as every pattern
    assert sign_flip_p([0, 0, 0]) == 1.0
    # [4, 1, 1, -1], sum 5: with 4's sign kept, the other three add 3, 1 (three ways), -1 (three), -3;
    # 4 + 3 and 4 + 1 reach 5: 4 patterns, and their 4 mirrors: 8 of 16
    assert sign_flip_p([4, 1, 1, -1]) == 8 / 16


def test_paired_differences_signs_interval_and_floor():
    result = paired([1, 1, 1, 1, 1], [2, 3, 4, 5, 6], seeds=[42, 0, 1, 2, 3])
    assert result.differences == (1, 2, 3, 4, 5) and result.seeds == (42, 0, 1, 2, 3)
    assert (result.higher, result.lower, result.ties) == (5, 0, 0)
    assert result.p_value == result.p_floor == 1 / 16
    # mean 3, sd sqrt(2.5), half-width t(0.975, 4) * sd / sqrt(5) = 2.776445 * 0.707107
    assert result.mean == 3
    assert result.low == pytest.approx(3 - 1.963243, abs=1e-5)
    assert result.high == pytest.approx(3 + 1.963243, abs=1e-5)


def test_paired_log_ratio():
    first = [2.0, 4.0, 1.0]
    second = [4.0, 4.0, 0.5]  # ratios 2, 1, 1/2: log ratios ln2, 0, -ln2
    result = paired(first, second, log=True)
    assert result.differences == pytest.approx((math.log(2), 0.0, -math.log(2)))
    assert result.ratio == pytest.approx(1.0)
    assert (result.higher, result.lower, result.ties) == (1, 1, 1)
    half = t_quantile(0.975, 2) * math.log(2) / math.sqrt(3)  # sd of (ln2, 0, -ln2) is ln2
    assert result.low == pytest.approx(-half) and result.high == pytest.approx(half)
    assert result.p_value == 1.0
    sentence = result.summary("a", "b", "the loss")
    assert "higher in 1 of 3 seeds, lower in 1, equal in 1" in sentence and "ratio b/a" in sentence
    assert "smallest 3 pairs can give is 0.25" in sentence


def test_one_pair_has_no_interval():
    result = paired([1.0], [2.0])
    assert result.low is None and result.high is None and result.p_value == 1.0 == result.p_floor


@pytest.mark.parametrize("first, second, kwargs, message", [
    ([1, 2], [1], {}, "equal length"),
    ([], [], {}, "non-empty"),
    ([1, 2], [1, 0], {"log": True}, "positive"),
    ([1, float("nan")], [1, 2], {}, "finite"),
    ([1, 2], [1, 2], {"seeds": [1]}, "2 pairs"),
])
def test_bad_input_is_refused(first, second, kwargs, message):
    with pytest.raises(ValueError, match=message):
        paired(first, second, **kwargs)
    with pytest.raises(ValueError, match="ratio is defined"):
        paired([1], [2]).ratio
