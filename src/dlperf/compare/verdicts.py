"""The results-folder diff's table as `dlperf diff` prints it: per cell the runs, medians, ratio,
its confidence interval, the test's p-value and the verdict, then a summary line."""

from __future__ import annotations

import math

import pandas as pd

from dlperf.report.fmt import setting_percent


def format_results_diff(table: pd.DataFrame, alpha: float, threshold: float) -> list[str]:
    """The per-cell table and a summary line."""
    shown = pd.DataFrame(
        {
            "cell_id": table.cell_id,
            "ok_a": table.runs_ok_a,
            "ok_b": table.runs_ok_b,
            "median_a": table.median_a.map(_num),
            "median_b": table.median_b.map(_num),
            "b/a": table.b_over_a.map(_num),
            f"ci{setting_percent(1 - alpha)}": [
                f"[{_num(lo)}, {_num(hi)}]" if math.isfinite(lo) else "n/a"
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
        f"{len(table)} cells: {summary}; Mann-Whitney U at alpha {alpha:g}, "
        f"regression = significantly slower by more than {setting_percent(threshold)}"
    )
    if regressions:
        lines.append(f"regressions: {', '.join(regressions)}")
    return lines


def _num(value: float) -> str:
    return f"{value:.4g}" if isinstance(value, int | float) and math.isfinite(value) else "n/a"
