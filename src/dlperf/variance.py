"""Run-to-run variance: outlier runs, unstable cells, and whether a cell needs more repeats.

Rules (stated once, used by the tables and the report):

- **Outlier run**: an ok run whose throughput lies more than ``k`` scaled MADs from the median of
  its cell's ok runs (``|x - median| > k * 1.4826 * MAD``; 1.4826 makes the MAD estimate the
  standard deviation of a normal sample). ``k = 3`` by default.

  - Fewer than 3 finite values: nothing is an outlier (with 2 runs both lie equally far from their
    median, so neither can be singled out).
  - MAD = 0 (more than half the runs are identical): the scale falls back to the mean absolute
    deviation from the median times 1.2533 (sqrt(pi/2), the normal-consistency factor), as in
    Iglewicz and Hoaglin's modified z-score; if that is 0 too, all runs are equal: no outliers.
  - Non-finite values (nan, inf) are never outliers and do not enter the median.

- **Unstable cell**: its coefficient of variation (sample stdev / mean of its ok runs, the cells
  table's ``throughput_cv``) is above a threshold, 0.05 by default. A cell with one ok run has no
  CV (nan) and is not called unstable.

- **More repeats needed**: the distribution-free confidence interval of the median
  (:func:`dlperf.stats.median_ci_ranks`) cannot reach the level with the runs there are, or is
  wider than a target width relative to the median; never beyond ``max_repeats`` runs.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from dlperf.stats import median_ci_ranks, spread

MAD_SCALE = 1.4826  # 1 / Phi^-1(3/4): MAD -> standard deviation for normal data
MEAN_AD_SCALE = 1.2533  # sqrt(pi / 2): mean absolute deviation -> standard deviation
DEFAULT_K = 3.0
DEFAULT_CV_THRESHOLD = 0.05
MIN_RUNS_FOR_OUTLIERS = 3


def robust_scale(values: Sequence[float]) -> float:
    """Scaled MAD of finite values; the scaled mean absolute deviation when the MAD is 0."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return math.nan
    median = statistics.median(finite)
    deviations = [abs(v - median) for v in finite]
    mad = statistics.median(deviations)
    if mad > 0:
        return MAD_SCALE * mad
    return MEAN_AD_SCALE * statistics.fmean(deviations)


def outlier_mask(values: Sequence[float], k: float = DEFAULT_K) -> list[bool]:
    """True for each value more than k robust scales from the median (see the module's rules)."""
    values = [float(v) for v in values]
    finite = [v for v in values if math.isfinite(v)]
    if len(finite) < MIN_RUNS_FOR_OUTLIERS:
        return [False] * len(values)
    median = statistics.median(finite)
    scale = robust_scale(finite)
    if not scale > 0:
        return [False] * len(values)
    return [math.isfinite(v) and abs(v - median) > k * scale for v in values]


def is_unstable(cv: float, threshold: float = DEFAULT_CV_THRESHOLD) -> bool:
    """CV above the threshold; a missing CV (nan: one run) is not instability."""
    return bool(math.isfinite(cv) and cv > threshold)


def run_outliers(runs: pd.DataFrame, k: float = DEFAULT_K) -> pd.Series:
    """Per run row (same index as ``runs``): is it an outlier among its cell's ok runs?

    Needs columns cell_id, status, throughput_samples_per_s. Runs that are not ok are False.
    """
    flags = pd.Series(False, index=runs.index, name="outlier", dtype=bool)
    ok = runs[runs["status"] == "ok"]
    for _cell, group in ok.groupby("cell_id", sort=False):
        values = pd.to_numeric(group["throughput_samples_per_s"], errors="coerce")
        flags.loc[group.index] = outlier_mask(values.tolist(), k)
    return flags


def cell_variance(
    runs: pd.DataFrame, k: float = DEFAULT_K, cv_threshold: float = DEFAULT_CV_THRESHOLD
) -> pd.DataFrame:
    """Per cell: outlier_runs (count), throughput_cv (as in the cells table) and unstable.

    One row per cell_id present in ``runs`` (cells with no ok run: 0 outliers, cv nan, stable).
    """
    outliers = run_outliers(runs, k)
    rows = []
    for cell_id, group in runs.groupby("cell_id", sort=True):
        ok = group[group["status"] == "ok"]
        values = pd.to_numeric(ok["throughput_samples_per_s"], errors="coerce").dropna()
        cv = spread(values.tolist()).cv
        rows.append(
            {
                "cell_id": cell_id,
                "outlier_runs": int(outliers.loc[group.index].sum()),
                "throughput_cv": cv,
                "unstable": is_unstable(cv, cv_threshold),
            }
        )
    return pd.DataFrame(rows, columns=["cell_id", "outlier_runs", "throughput_cv", "unstable"])


@dataclass(frozen=True)
class RepeatAdvice:
    """Whether a cell should get another run, and why."""

    more_needed: bool
    runs: int
    rel_ci_width: float  # (ci_high - ci_low) / median; nan when no CI at the level
    ci_level: float  # coverage achieved by the order-statistics interval (nan with < 2 runs)
    reason: str


def min_runs_for_level(level: float) -> int:
    """Fewest runs whose (min, max) interval covers the median with at least this probability."""
    n = 2
    while 1 - 2 * 0.5**n < level:
        n += 1
    return n


def repeats_needed(
    values: Sequence[float],
    target_rel_ci_width: float,
    level: float = 0.95,
    max_repeats: int = 20,
) -> RepeatAdvice:
    """Should a cell with these ok-run throughputs get another repeat (adaptive repeats)?

    More are needed while the distribution-free CI of the median cannot reach ``level`` (fewer
    than :func:`min_runs_for_level` runs: 6 at 95 %) or is wider than ``target_rel_ci_width``
    times the median; never once ``max_repeats`` runs are there.
    """
    finite = sorted(float(v) for v in values if math.isfinite(float(v)))
    n = len(finite)
    s = spread(finite, level)
    width = (s.ci_high - s.ci_low) / s.median if n >= 2 and s.median else math.nan
    if n >= max_repeats:
        return RepeatAdvice(False, n, width, s.ci_level, f"cap of {max_repeats} runs reached")
    _, _, coverage = median_ci_ranks(n, level)
    if n < 2 or coverage < level:
        need = min_runs_for_level(level)
        reason = f"{n} runs: a {level:.0%} CI of the median needs at least {need}"
        return RepeatAdvice(True, n, math.nan, s.ci_level, reason)
    if not math.isfinite(width) or width > target_rel_ci_width:
        reason = f"CI width {width:.2%} of the median > target {target_rel_ci_width:.2%}"
        return RepeatAdvice(True, n, width, s.ci_level, reason)
    reason = f"CI width {width:.2%} of the median <= target {target_rel_ci_width:.2%}"
    return RepeatAdvice(False, n, width, s.ci_level, reason)
