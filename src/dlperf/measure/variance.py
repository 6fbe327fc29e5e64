"""Run-to-run variance: outlier runs, unstable cells, and whether a cell needs more repeats.

Rules (stated once, used by the tables and the report):

- **Outlier run**: an ok run whose throughput lies more than ``k`` robust scales from the median
  of its cell's ok runs, ``|x - median| > k * scale`` with ``k = 3`` by default (the suite's
  ``variance.outlier_mads``). The scale is the scaled MAD (``1.4826 * MAD``; 1.4826 makes the MAD
  estimate the standard deviation of a normal sample), but never less than 1 % of the median:

  - runs closer than that are timer and machine noise, never outliers, however tight the rest;
  - MAD = 0 (more than half the runs are identical, e.g. 57.0, 57.0 and 4.1) leaves the floor as
    the scale, so a run far from an identical majority is still flagged. (A fallback to the mean
    absolute deviation, as in Iglewicz and Hoaglin's modified z-score, can never flag the odd run
    of three: its own deviation inflates the scale past the limit.)
  - Fewer than 3 finite values: nothing is an outlier (with 2 runs both lie equally far from their
    median, so neither can be singled out). A median of 0 has no scale: no outliers.
  - Non-finite values (nan, inf) are never outliers and do not enter the median.

  **Policy**: an outlier stays in its cell's median and spread, flagged. The median is robust to
  one bad run (DLPerf reported the median of all runs); dropping runs would hide what happened.

- **Unstable cell**: its coefficient of variation (sample stdev / mean of its ok runs, the cells
  table's ``throughput_cv``) is above a threshold, 5 % by default (``variance.max_cv_pct``). A
  cell with one ok run has no CV (nan) and is not called unstable.

- **More repeats needed**: the distribution-free confidence interval of the median
  (:func:`dlperf.measure.stats.median_ci_ranks`) cannot reach the level with the runs there are, or is
  wider than a target width relative to the median; never beyond ``max_repeats`` runs.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dlperf.defaults import suite_default
from dlperf.measure.stats import median_ci_ranks, spread
from dlperf.status import Status

MAD_SCALE = 1.4826  # 1 / Phi^-1(3/4): MAD -> standard deviation for normal data
MIN_REL_SCALE = 0.01  # the scale is never below 1 % of the median (see the module's rules)
MIN_RUNS_FOR_OUTLIERS = 3


@dataclass(frozen=True)
class VarianceSettings:
    """The suite's `variance` key: outlier limit in robust scales, CV above which a cell is unstable."""

    outlier_mads: float
    max_cv: float  # a fraction (the config says percent)

    @classmethod
    def from_config(cls, variance: dict[str, Any] | None) -> VarianceSettings:
        """From a `variance` key, validated or not (None, or a key left out: the schema's default)."""
        variance = variance or {}

        def setting(key: str) -> float:
            return float(variance[key] if key in variance else suite_default("variance", key))

        return cls(setting("outlier_mads"), setting("max_cv_pct") / 100)


DEFAULT_VARIANCE = VarianceSettings.from_config(None)  # the schema's: 3 scales, CV 5 %


def robust_scale(values: Sequence[float]) -> float:
    """Scaled MAD of the finite values, floored at 1 % of their median (nan without values)."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return math.nan
    # the median absolute deviation, unscaled (scipy.stats.median_abs_deviation's default, whose
    # import would cost the tables 1 to 2 s); then MAD_SCALE, as the rule states 1.4826
    mad = float(np.median(np.abs(np.asarray(finite) - np.median(finite))))
    return max(MAD_SCALE * mad, MIN_REL_SCALE * abs(statistics.median(finite)))


def outlier_mask(values: Sequence[float], k: float = DEFAULT_VARIANCE.outlier_mads) -> list[bool]:
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


def robust_z(values: Sequence[float]) -> list[float]:
    """Each value's signed distance from the median in robust scales, ``(x - median) / scale``
    (an outlier is one with ``|z| > k``); nan for a non-finite value, and for every value where
    no run can be an outlier (fewer than 3 finite values, or no scale)."""
    values = [float(v) for v in values]
    finite = [v for v in values if math.isfinite(v)]
    scale = robust_scale(finite)
    if len(finite) < MIN_RUNS_FOR_OUTLIERS or not scale > 0:
        return [math.nan] * len(values)
    median = statistics.median(finite)
    return [(v - median) / scale if math.isfinite(v) else math.nan for v in values]


def is_unstable(cv: float, threshold: float = DEFAULT_VARIANCE.max_cv) -> bool:
    """CV above the threshold; a missing CV (nan: one run) is not instability."""
    return bool(math.isfinite(cv) and cv > threshold)


def _ok_values(runs: pd.DataFrame) -> pd.Series:
    ok = runs[runs["status"] == Status.OK]
    return pd.to_numeric(ok["throughput_samples_per_s"], errors="coerce")


def run_outliers(runs: pd.DataFrame, k: float = DEFAULT_VARIANCE.outlier_mads) -> pd.Series:
    """Per run row (same index as ``runs``): is it an outlier among its cell's ok runs?

    Needs columns cell_id, status, throughput_samples_per_s. Runs that are not ok are False.
    """
    flags = pd.Series(False, index=runs.index, name="outlier", dtype=bool)
    values = _ok_values(runs)
    for _cell, group in values.groupby(runs.loc[values.index, "cell_id"], sort=False):
        flags.loc[group.index] = outlier_mask(group.tolist(), k)
    return flags


def outlier_scores(runs: pd.DataFrame) -> pd.Series:
    """Per run row (same index as ``runs``): its :func:`robust_z` among its cell's ok runs, the
    number an outlier is stated by; nan for runs that are not ok."""
    scores = pd.Series(math.nan, index=runs.index, name="outlier_z", dtype=float)
    values = _ok_values(runs)
    for _cell, group in values.groupby(runs.loc[values.index, "cell_id"], sort=False):
        scores.loc[group.index] = robust_z(group.tolist())
    return scores


def _number(value: float) -> str:
    return f"{value:.1f}"


def outlier_details(runs: pd.DataFrame, k: float = DEFAULT_VARIANCE.outlier_mads) -> pd.DataFrame:
    """Per run row: ``outlier`` (bool) and ``outlier_detail`` (why, or '' for a run that is not).

    E.g. "4.1 vs median 57.0 samples/s: 52.9 away > 3 x scale 0.57".
    """
    out = pd.DataFrame({"outlier": run_outliers(runs, k), "outlier_detail": ""}, index=runs.index)
    values = _ok_values(runs)
    for _cell, group in values.groupby(runs.loc[values.index, "cell_id"], sort=False):
        flagged = out.loc[group.index, "outlier"]
        if not flagged.any():
            continue
        finite = [v for v in group.tolist() if math.isfinite(v)]
        median, scale = statistics.median(finite), robust_scale(finite)
        for index in flagged[flagged].index:
            value = float(group[index])
            out.loc[index, "outlier_detail"] = (
                f"{_number(value)} vs median {_number(median)} samples/s: "
                f"{_number(abs(value - median))} away > {k:g} x scale {scale:.3g}"
            )
    return out


def cell_flags(
    group: pd.DataFrame, settings: VarianceSettings = DEFAULT_VARIANCE
) -> dict[str, Any]:
    """One cell's ``unstable``, ``outlier_runs`` and ``flags`` (plain text, '' when none) from its
    runs' rows (columns status, throughput_samples_per_s, and repeat for naming the outliers).

    E.g. "unstable: CV 77.6% > 5%; outlier r1: 4.1 vs median 57.0 samples/s".
    """
    values = _ok_values(group).dropna()
    cv = spread(values.tolist()).cv
    unstable = is_unstable(cv, settings.max_cv)
    mask = outlier_mask(values.tolist(), settings.outlier_mads)
    flags = []
    if unstable:
        flags.append(f"unstable: CV {cv * 100:.1f}% > {settings.max_cv * 100:g}%")
    if any(mask):
        median = statistics.median(values.tolist())
        for index, is_outlier in zip(values.index, mask, strict=True):
            if is_outlier:
                repeat = group.loc[index, "repeat"] if "repeat" in group.columns else "?"
                flags.append(
                    f"outlier r{_repeat(repeat)}: {_number(float(values[index]))} "
                    f"vs median {_number(median)} samples/s"
                )
    return {"unstable": unstable, "outlier_runs": int(sum(mask)), "flags": "; ".join(flags)}


def _repeat(value: Any) -> str:
    try:
        return str(int(value))
    except (TypeError, ValueError):
        return str(value)


def cell_variance(
    runs: pd.DataFrame,
    k: float = DEFAULT_VARIANCE.outlier_mads,
    cv_threshold: float = DEFAULT_VARIANCE.max_cv,
) -> pd.DataFrame:
    """Per cell: outlier_runs (count), throughput_cv (as in the cells table) and unstable.

    One row per cell_id present in ``runs`` (cells with no ok run: 0 outliers, cv nan, stable).
    """
    outliers = run_outliers(runs, k)
    rows = []
    for cell_id, group in runs.groupby("cell_id", sort=True):
        values = _ok_values(group).dropna()
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
