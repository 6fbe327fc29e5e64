"""Is B faster or slower than A? A stated test on two samples of run throughputs.

The rule (one place, used by ``dlperf diff`` and the report):

- Inputs are the throughputs of the ok runs of one cell in A and in B; non-finite values are
  dropped. A side with fewer than 2 runs gives verdict ``n/a`` (with the reason): one run says
  nothing about its own noise.
- **Test**: Mann-Whitney U, two-sided, computed by ``scipy.stats.mannwhitneyu``. Exact null
  distribution when there are no ties and both sides have at most ``EXACT_MAX_N`` runs; otherwise
  the normal approximation with the tie correction of the variance and a 0.5 continuity
  correction. p = min(1, 2 * min(P(U <= u), P(U >= u))); every value equal gives p = 1.
- **Effect**: ratio of medians B / A, with a percentile bootstrap confidence interval computed by
  ``scipy.stats.bootstrap`` (independent resampling of each side, ``n_boot`` draws, a fixed seed
  so the interval is reproducible) at level 1 - alpha.
- **Verdict**: significant when p < alpha. Then ``faster`` if the ratio is above 1, ``slower`` if
  below (a significant test with a ratio of exactly 1 reads ``same``); not significant: ``same``.
  With so few runs that the test cannot reach alpha at all (3 vs 3 runs: the smallest p is 0.1)
  the verdict is ``n/a``, "not enough runs to tell", with how many per side could: never
  ``same``, however far apart the runs are.
- **Regression**: verdict ``slower`` and ratio < 1 - threshold (threshold relative, 0.03 = 3 %).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from dlperf.report.fmt import setting_percent

EXACT_MAX_N = 50
MIN_RUNS = 2
DEFAULT_N_BOOT = 2000
DEFAULT_SEED = 0


@dataclass(frozen=True)
class UTest:
    u: float  # U statistic of sample A (pairs where A beats B, ties count 1/2)
    p_value: float
    method: str  # "exact" or "normal"


@dataclass(frozen=True)
class Comparison:
    n_a: int
    n_b: int
    median_a: float
    median_b: float
    ratio: float  # median B / median A
    ci_low: float  # bootstrap CI of the ratio, at ci_level
    ci_high: float
    ci_level: float
    p_value: float
    test: str  # how p was computed
    significant: bool
    verdict: str  # faster | slower | same | n/a
    regression: bool  # significantly slower by more than the threshold
    reason: str


def mann_whitney_u(a: Sequence[float], b: Sequence[float]) -> UTest:
    """Two-sided Mann-Whitney U test of A against B (see the module's rule for the method)."""
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    m, n = len(xa), len(xb)
    if m == 0 or n == 0:
        return UTest(math.nan, math.nan, "none")
    pooled = np.concatenate([xa, xb])
    has_ties = len(np.unique(pooled)) < len(pooled)
    exact = not has_ties and max(m, n) <= EXACT_MAX_N
    result = stats.mannwhitneyu(
        xa, xb, alternative="two-sided", method="exact" if exact else "asymptotic"
    )
    # scipy's statistic is U of its first sample, A (pairs where A beats B, ties 1/2)
    return UTest(float(result.statistic), float(result.pvalue), "exact" if exact else "normal")


def smallest_p_value(m: int, n: int) -> float:
    """The smallest two-sided exact p the test can give with m and n runs: 2 / C(m + n, m)."""
    return min(1.0, 2 / math.comb(m + n, m)) if m and n else math.nan


def runs_to_tell(alpha: float) -> int:
    """The fewest runs per side with which the test can reach p < alpha at all."""
    n = MIN_RUNS
    while smallest_p_value(n, n) >= alpha:
        n += 1
    return n


def _median_ratio(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.median(b, axis=axis) / np.median(a, axis=axis)


def bootstrap_ratio_ci(
    a: Sequence[float],
    b: Sequence[float],
    level: float = 0.95,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
) -> tuple[float, float]:
    """Percentile bootstrap CI of median(B) / median(A), each side resampled on its own.

    Each side needs ``MIN_RUNS`` values, else (nan, nan). When each side's values are all equal,
    both bounds are the ratio itself. A resample of A with median 0 has an infinite (0/0: nan)
    ratio, so a bound can be inf or nan; no warning is raised.
    """
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if min(len(xa), len(xb)) < MIN_RUNS:  # scipy refuses a sample of one
        return math.nan, math.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        result = stats.bootstrap(
            (xa, xb),
            _median_ratio,
            paired=False,
            vectorized=True,
            n_resamples=n_boot,
            method="percentile",
            confidence_level=level,
            rng=seed,
        )
    ci = result.confidence_interval
    return float(ci.low), float(ci.high)


def compare_samples(
    a: Sequence[float],
    b: Sequence[float],
    alpha: float = 0.05,
    threshold: float = 0.0,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
) -> Comparison:
    """Compare B's run throughputs with A's (higher is faster); see the module's rule."""
    xa = [float(v) for v in a if math.isfinite(float(v))]
    xb = [float(v) for v in b if math.isfinite(float(v))]
    med_a = float(np.median(xa)) if xa else math.nan
    med_b = float(np.median(xb)) if xb else math.nan
    ratio = med_b / med_a if xa and xb and med_a > 0 else math.nan
    nan = math.nan
    if len(xa) < MIN_RUNS or len(xb) < MIN_RUNS:
        short = ", ".join(
            f"{side} has {len(x)} ok run{'s' * (len(x) != 1)}"
            for side, x in (("A", xa), ("B", xb))
            if len(x) < MIN_RUNS
        )
        reason = f"{short} (need >= {MIN_RUNS} per side)"
        return Comparison(
            len(xa), len(xb), med_a, med_b, ratio, nan, nan, nan, nan, "none", False, "n/a",
            False, reason,
        )  # fmt: skip
    test = mann_whitney_u(xa, xb)
    level = 1 - alpha
    ci_low, ci_high = bootstrap_ratio_ci(xa, xb, level, n_boot, seed)
    significant = test.p_value < alpha
    verdict = "same"
    if smallest_p_value(len(xa), len(xb)) >= alpha:
        verdict = "n/a"  # not enough runs to tell: "same" would read as evidence of equality
    elif significant and ratio > 1:
        verdict = "faster"
    elif significant and ratio < 1:
        verdict = "slower"
    regression = verdict == "slower" and ratio < 1 - threshold
    reason = _reason(test, alpha, len(xa), len(xb), verdict, regression, threshold)
    return Comparison(
        len(xa), len(xb), med_a, med_b, ratio, ci_low, ci_high, level, test.p_value,
        f"mann-whitney-u {test.method}", significant, verdict, regression, reason,
    )  # fmt: skip


def _reason(
    test: UTest, alpha: float, m: int, n: int, verdict: str, regression: bool, threshold: float
) -> str:
    if verdict in ("faster", "slower"):
        text = f"p={test.p_value:.3g} < {alpha:g}"
        if verdict == "slower":
            beyond = "beyond" if regression else "within"
            text += f"; slower {beyond} the {setting_percent(threshold)} threshold"
        return text
    floor = smallest_p_value(m, n)
    if floor >= alpha:
        return (
            f"not enough runs to tell: {m} vs {n} runs cannot reach p < {alpha:g} (smallest p "
            f"{floor:.3g}); {runs_to_tell(alpha)} per side could"
        )
    return f"p={test.p_value:.3g} >= {alpha:g}"
