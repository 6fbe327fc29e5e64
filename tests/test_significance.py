"""Mann-Whitney U (exact and normal with ties), bootstrap CI of the ratio, the verdict rule."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dlperf.significance import (
    _u_counts,
    bootstrap_ratio_ci,
    compare_samples,
    mann_whitney_u,
    smallest_p_value,
)


def test_exact_distribution_by_hand():
    # m = n = 2: the 6 arrangements give U = 0, 1, 2, 2, 3, 4
    assert _u_counts(2, 2) == (1.0, 1.0, 2.0, 1.0, 1.0)
    assert sum(_u_counts(7, 7)) == math.comb(14, 7)


def test_exact_p_values_by_hand():
    separated = mann_whitney_u([1, 2, 3], [4, 5, 6])
    assert separated.method == "exact" and separated.u == 0
    assert separated.p_value == pytest.approx(2 / 20)
    assert mann_whitney_u([5, 6, 7, 8], [1, 2, 3, 4]).p_value == pytest.approx(2 / 70)
    # U = 1 with 3 vs 3: P(U <= 1) = 2 / 20
    assert mann_whitney_u([1, 2, 4], [3, 5, 6]).p_value == pytest.approx(4 / 20)
    assert mann_whitney_u([1, 4], [2, 3]).p_value == pytest.approx(1.0)


def test_normal_approximation_with_ties_by_hand():
    a, b = [1.0, 2.0, 2.0, 3.0], [2.0, 3.0, 4.0, 5.0]
    # mid-ranks: 1, 3, 3, 5.5 | 3, 5.5, 7, 8 -> U_A = 12.5 - 10 = 2.5
    # variance 4*4/12 * (9 - ((27-3) + (8-2)) / 56) = 16/12 * (9 - 30/56)
    test = mann_whitney_u(a, b)
    assert test.method == "normal" and test.u == pytest.approx(2.5)
    z = (abs(2.5 - 8) - 0.5) / math.sqrt(16 / 12 * (9 - 30 / 56))
    assert test.p_value == pytest.approx(math.erfc(z / math.sqrt(2)))
    assert mann_whitney_u([3.0, 3.0], [3.0, 3.0]).p_value == 1.0


def test_agrees_with_scipy():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(1)
    for m, n in ((3, 4), (7, 7), (5, 9)):
        a, b = rng.normal(100, 3, m), rng.normal(103, 3, n)
        want = stats.mannwhitneyu(a, b, alternative="two-sided", method="exact").pvalue
        assert mann_whitney_u(a, b).p_value == pytest.approx(want)
    a, b = np.round(rng.normal(100, 3, 60)), np.round(rng.normal(101, 3, 70))  # ties, large
    want = stats.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic").pvalue
    assert mann_whitney_u(a, b).p_value == pytest.approx(want)


def test_smallest_p():
    assert smallest_p_value(3, 3) == pytest.approx(0.1)
    assert smallest_p_value(7, 7) == pytest.approx(2 / 3432)


def test_bootstrap_ci_is_seeded_and_brackets_the_ratio():
    a = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8]
    b = [90.0, 91.0, 89.0, 90.5, 89.5, 90.2, 89.8]
    low, high = bootstrap_ratio_ci(a, b, seed=3)
    assert (low, high) == bootstrap_ratio_ci(a, b, seed=3)
    assert low <= 0.9 <= high
    assert 89 / 101 <= low and high <= 91 / 99  # only ratios of observed values


def test_compare_slower_is_a_regression_beyond_threshold():
    a = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8]
    b = [v * 0.9 for v in a]
    c = compare_samples(a, b, threshold=0.05)
    assert c.verdict == "slower" and c.significant and c.regression
    assert c.ratio == pytest.approx(0.9)
    assert c.p_value == pytest.approx(2 / 3432)
    assert c.ci_high < 1 and c.ci_level == pytest.approx(0.95)
    assert not compare_samples(a, b, threshold=0.15).regression  # slower, within 15 %
    assert compare_samples(b, a).verdict == "faster"


def test_compare_same_and_too_few_runs():
    a = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8]
    b = [100.1, 100.9, 99.1, 100.4, 99.6, 100.3, 99.7]
    same = compare_samples(a, b)
    assert same.verdict == "same" and not same.significant and not same.regression
    few = compare_samples([100.0, 101.0, 102.0], [50.0, 51.0, 52.0])
    assert few.verdict == "same" and "cannot reach" in few.reason  # 3 vs 3: smallest p 0.1
    one = compare_samples([100.0], [50.0, math.nan, 51.0])
    assert one.verdict == "n/a" and one.reason == "A has 1 ok run (need >= 2 per side)"
    assert one.n_b == 2 and one.ratio == pytest.approx(50.5 / 100)
    assert math.isnan(one.p_value)
    assert compare_samples([], []).verdict == "n/a"
