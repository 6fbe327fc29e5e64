"""Mann-Whitney U (exact and normal with ties), bootstrap CI of the ratio, the verdict rule."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest

from dlperf.compare.significance import (
    EXACT_MAX_N,
    bootstrap_ratio_ci,
    compare_samples,
    mann_whitney_u,
    smallest_p_value,
)


def test_exact_distribution_by_hand():
    # m = n = 2: the 6 arrangements give U = 0, 1, 2, 2, 3, 4
    assert mann_whitney_u([1, 2], [3, 4]).p_value == pytest.approx(2 * 1 / 6)  # U = 0
    assert mann_whitney_u([1, 3], [2, 4]).p_value == pytest.approx(2 * 2 / 6)  # U = 1
    assert mann_whitney_u([2, 3], [1, 4]).p_value == pytest.approx(1.0)  # U = 2, the middle
    assert mann_whitney_u([3, 4], [1, 2]).p_value == pytest.approx(2 * 1 / 6)  # U = 4
    # 7 vs 7 separated: one arrangement of C(14, 7) at each end
    assert mann_whitney_u(range(7), range(7, 14)).p_value == pytest.approx(2 / math.comb(14, 7))


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


def _exact_p_by_enumeration(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided p from every arrangement of the ranks 1..m+n (no ties)."""
    m, n = len(a), len(b)
    ranks = {v: i + 1 for i, v in enumerate(sorted([*a, *b]))}
    u = sum(ranks[v] for v in a) - m * (m + 1) / 2
    null = [sum(pick) - m * (m + 1) / 2 for pick in itertools.combinations(range(1, m + n + 1), m)]
    below, above = sum(x <= u for x in null), sum(x >= u for x in null)
    return min(1.0, 2 * min(below, above) / len(null))


def _normal_p_by_hand(a: np.ndarray, b: np.ndarray) -> float:
    """Mid-ranks, tie-corrected variance, 0.5 continuity correction (the module's rule)."""
    pooled = [*a, *b]
    below, count = Counter(), Counter(pooled)
    for v in count:
        below[v] = sum(w < v for w in pooled)
    m, n, big_n = len(a), len(b), len(pooled)
    u = sum(below[v] + (count[v] + 1) / 2 for v in a) - m * (m + 1) / 2
    tie_term = sum(c**3 - c for c in count.values()) / (big_n * (big_n - 1))
    z = (abs(u - m * n / 2) - 0.5) / math.sqrt(m * n / 12 * ((big_n + 1) - tie_term))
    return min(1.0, math.erfc(z / math.sqrt(2)))


def test_exact_without_ties_and_few_runs_else_normal():
    rng = np.random.default_rng(1)
    for m, n in ((3, 4), (5, 5), (4, 7)):  # continuous values: no ties
        a, b = rng.normal(100, 3, m), rng.normal(103, 3, n)
        test = mann_whitney_u(a, b)
        assert test.method == "exact"
        assert test.p_value == pytest.approx(_exact_p_by_enumeration(a, b))
    a, b = np.round(rng.normal(100, 3, 60)), np.round(rng.normal(101, 3, 70))  # ties, large
    test = mann_whitney_u(a, b)
    assert test.method == "normal"
    assert test.p_value == pytest.approx(_normal_p_by_hand(a, b))
    few_with_ties = mann_whitney_u([1.0, 2.0, 2.0], [2.0, 3.0, 4.0])
    assert few_with_ties.method == "normal"
    assert few_with_ties.p_value == pytest.approx(_normal_p_by_hand([1, 2, 2], [2, 3, 4]))
    a, b = rng.normal(100, 3, EXACT_MAX_N), rng.normal(100, 3, EXACT_MAX_N + 1)
    assert mann_whitney_u(a, b[:-1]).method == "exact"
    assert mann_whitney_u(a, b).method == "normal"  # one side above EXACT_MAX_N
    assert mann_whitney_u(a, b).p_value == pytest.approx(_normal_p_by_hand(a, b))


@pytest.mark.filterwarnings("error")
def test_all_equal_or_an_empty_side():
    test = mann_whitney_u([3.0, 3.0, 3.0], [3.0, 3.0])
    assert (test.u, test.p_value, test.method) == (3.0, 1.0, "normal")  # every pair ties: U = mn/2
    empty = mann_whitney_u([], [1.0, 2.0])
    assert math.isnan(empty.u) and math.isnan(empty.p_value) and empty.method == "none"


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


@pytest.mark.filterwarnings("error")
def test_bootstrap_ci_of_degenerate_samples_without_a_warning():
    low, high = bootstrap_ratio_ci([5.0, 5.0, 5.0, 5.0], [6.0, 6.0, 6.0])  # nothing to resample
    assert low == pytest.approx(1.2) and high == pytest.approx(1.2)
    low, high = bootstrap_ratio_ci([5.0, 5.0, 5.0], [6.0, 7.0, 8.0])  # only B varies
    assert 6 / 5 <= low <= high <= 8 / 5
    low, high = bootstrap_ratio_ci([0.0, 0.0, 0.0], [6.0, 7.0, 8.0])  # median(A) = 0
    assert not math.isfinite(low) and not math.isfinite(high)
    assert all(math.isnan(x) for x in bootstrap_ratio_ci([1.0], [2.0, 3.0]))  # one run of A


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
    few = compare_samples([100.0, 101.0, 102.0], [50.0, 51.0, 52.0])  # 3 vs 3: smallest p 0.1
    assert few.verdict == "n/a" and not few.regression
    assert few.reason == (
        "not enough runs to tell: 3 vs 3 runs cannot reach p < 0.05 (smallest p 0.1); "
        "4 per side could"
    )
    # issue 20.13: a ratio of 6.5e-06 with 2 runs a side read "same"
    far = compare_samples([100.0, 101.0], [0.00065, 0.00066])
    assert far.verdict == "n/a" and "not enough runs to tell" in far.reason
    one = compare_samples([100.0], [50.0, math.nan, 51.0])
    assert one.verdict == "n/a" and one.reason == "A has 1 ok run (need >= 2 per side)"
    assert one.n_b == 2 and one.ratio == pytest.approx(50.5 / 100)
    assert math.isnan(one.p_value)
    assert compare_samples([], []).verdict == "n/a"
