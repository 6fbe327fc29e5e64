"""The tables `dlperf diff` prints: a results folder's per cell (the runs, medians, ratio, its
confidence interval, the test's p-value and the verdict, then a summary line), and the figures of
two run JSONs or two cells tables. A throughput prints as the report prints it (samples/s, two
decimals: dlperf.report.fmt), B over A to four decimals, a step time in ms to the microsecond."""

from __future__ import annotations

import math

import pandas as pd

from dlperf.report.fmt import setting_percent, throughput


def format_results_diff(table: pd.DataFrame, alpha: float, threshold: float) -> list[str]:
    """The per-cell table and a summary line."""
    shown = pd.DataFrame(
        {
            "cell_id": table.cell_id,
            "ok_a": table.runs_ok_a,
            "ok_b": table.runs_ok_b,
            "median_a": table.median_a.map(throughput),
            "median_b": table.median_b.map(throughput),
            "b/a": table.b_over_a.map(_ratio),
            f"ci{setting_percent(1 - alpha)}": [
                f"[{_ratio(lo)}, {_ratio(hi)}]" if math.isfinite(lo) else "n/a"
                for lo, hi in zip(table.ci_low, table.ci_high, strict=True)
            ],
            "p": table.p_value.map(_num),
            "verdict": [
                f"{v} REGRESSION" if r else v
                for v, r in zip(table.verdict, table.regression, strict=True)
            ],
            "reason": table.reason,
        }
    )
    counts = table.verdict.value_counts()
    summary = ", ".join(f"{counts.get(v, 0)} {v}" for v in ("faster", "slower", "same", "n/a"))
    regressions = table.cell_id[table.regression].tolist()
    lines = shown.to_string(index=False).splitlines() if len(shown) else ["(no cells)"]
    lines.append(
        f"{len(table)} cells: {summary}; medians in samples/s; Mann-Whitney U at alpha {alpha:g}, "
        f"regression = significantly slower by more than {setting_percent(threshold)}"
    )
    if regressions:
        lines.append(f"regressions: {', '.join(regressions)}")
    return lines


def format_figures_diff(frame: pd.DataFrame) -> list[str]:
    """Two run JSONs' figures (dlperf.compare.diff.diff_runs: a row per metric) or two cells
    tables' medians (diff_cells: a row per cell), B over A, as printed."""
    shown = frame.copy()
    if "metric" in shown.columns:
        for side in ("a", "b"):
            shown[side] = [
                _step_ms(v) if str(metric).endswith("_ms") else throughput(v)
                for metric, v in zip(shown["metric"], shown[side], strict=True)
            ]
    for column in ("throughput_a", "throughput_b"):
        if column in shown.columns:
            shown[column] = shown[column].map(throughput)
    shown["b_over_a"] = shown["b_over_a"].map(_ratio)
    return shown.to_string(index=False).splitlines()


def _num(value: float) -> str:
    return f"{value:.4g}" if _finite(value) else "n/a"


def _ratio(value: float) -> str:
    """B over A: four decimals, so a change of 0.01 % shows (1.0004 is not '1')."""
    return f"{value:.4f}" if _finite(value) else "n/a"


def _step_ms(value: float) -> str:
    return f"{value:.3f}" if _finite(value) else "n/a"


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
