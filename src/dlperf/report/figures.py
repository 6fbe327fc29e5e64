"""The newer per-cell figures (MFU, memory, energy, bus bandwidth...): which table column each comes
from and how it is written. A table without a column shows it nowhere; a NaN is n/a, never 0."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from dlperf.report import fmt


def _fixed(digits: int) -> Callable[[Any], str]:
    return lambda v: f"{float(v):.{digits}f}" if fmt.is_number(v) else fmt.NA


def _significant(v: Any) -> str:
    return f"{float(v):#.3g}".rstrip(".") if fmt.is_number(v) else fmt.NA


@dataclass(frozen=True)
class Figure:
    key: str  # catalog key under figure.* (its header, with the unit)
    column: str  # cells-table column
    format: Callable[[Any], str]


FIGURES: dict[str, Figure] = {
    f.key: f
    for f in (
        Figure("batch_resolved", "batch_size_resolved", fmt.integer),
        Figure("tflops", "achieved_tflops", _significant),  # a CPU gives thousandths
        Figure("mfu", "mfu_pct", _fixed(1)),
        Figure("peak_mem", "peak_mem_mib", fmt.integer),
        Figure("energy", "energy_j_per_sample", _significant),
        Figure("power", "power_w_per_device", _fixed(1)),
        Figure("busbw", "busbw_gb_s", _fixed(2)),
        Figure("ceiling", "speedup_ceiling", fmt.speedup),
        Figure("outlier_runs", "outlier_runs", fmt.integer),
    )
}
# What the summary shows beside throughput, speedup and efficiency, where the table has it.
HEADLINE_FIGURES = ("tflops", "mfu", "peak_mem", "energy", "power")


def figure_keys(cells: pd.DataFrame, among: Iterable[str] = FIGURES) -> tuple[str, ...]:
    """The figures with at least one number in `cells` (absent columns and all-NaN: none)."""
    keys = []
    for key in among:
        column = FIGURES[key].column
        if column in cells.columns and pd.to_numeric(cells[column], errors="coerce").notna().any():
            keys.append(key)
    return tuple(keys)


def format_figure(key: str, record: dict[str, Any]) -> str:
    return FIGURES[key].format(record.get(FIGURES[key].column))
