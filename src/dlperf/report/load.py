"""Read the cells and runs tables and the baselines (cells or runs tables, marked by name)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from dlperf.errors import ConfigError
from dlperf.matrix import Cell
from dlperf.report import fmt
from dlperf.tables import CELL_COLUMNS, CELL_TABLE_COLUMNS, add_speedup, cell_figures

log = logging.getLogger(__name__)

MEASURED = "measured"
_TEXT_COLUMNS = (
    "cell_id",
    "framework",
    "model",
    "precision",
    "batch_size",
    "variant",
    "layout",
    "status",
    "status_detail",
    "statuses",
    "method",
    "window",
    "source",
    "trace",
    "manifest",
    "speedup_baseline_cell",
)


def read_table(path: Path) -> pd.DataFrame:
    """A TSV (or CSV) written by dlperf.tables: ids and words as text, empty text as ''."""
    sep = "," if path.suffix == ".csv" else "\t"
    dtype = dict.fromkeys(_TEXT_COLUMNS, str)
    frame = pd.read_csv(path, sep=sep, dtype=dtype, keep_default_na=True)
    for column in _TEXT_COLUMNS:
        if column in frame.columns:
            frame[column] = frame[column].fillna("")
    if "xla" in frame.columns:
        frame["xla"] = frame["xla"].map(_to_bool)
    return frame


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("true", "1", "yes", "on", "xla")


def _fill_dimensions(frame: pd.DataFrame, where: str) -> pd.DataFrame:
    """Fill cell dimensions a published table may leave out, from the cell id."""
    frame = frame.copy()
    keys = []
    for number, cell_id in enumerate(frame["cell_id"], start=2):  # line 1 is the header
        try:
            keys.append(Cell.parse(cell_id).key())
        except ValueError as err:
            raise ConfigError(f"{where}:{number}: {err}") from None
    derived = pd.DataFrame(keys, index=frame.index)
    for column in CELL_COLUMNS:
        if column not in frame.columns:
            frame[column] = derived[column]
    return frame


def cells_from_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """Aggregate a runs table to cells: median and spread of the ok runs, as dlperf.tables does."""
    rows = []
    for _, group in runs.groupby("cell_id", sort=True):
        first = group.iloc[0]
        rows.append(
            {c: first[c] for c in CELL_COLUMNS} | cell_figures(group, len(group)) | {"window": ""}
        )
    return pd.DataFrame(rows)


def load_baseline(name: str, path: Path, index: int = 0) -> pd.DataFrame:
    """A baseline as cells rows with source = name; its speedup from its own 1n1g cells."""
    where = f"baselines[{index}].path"
    if name == MEASURED:
        raise ConfigError(
            f"baselines[{index}].name: {name!r} is reserved for this suite's own results"
        )
    if not path.is_file():
        raise ConfigError(
            f"{where}: baseline table {str(path)!r} not found (relative to {Path.cwd()})"
        )
    frame = read_table(path)
    if "cell_id" not in frame.columns:
        raise ConfigError(
            f"{where}: {path} has no cell_id column; is it a dlperf cells or runs table?"
        )
    frame = _fill_dimensions(frame, str(path))
    if "throughput_median" not in frame.columns:
        if "throughput_samples_per_s" not in frame.columns or "status" not in frame.columns:
            raise ConfigError(
                f"{where}: {path} has neither throughput_median (cells table) nor "
                "throughput_samples_per_s and status (runs table)"
            )
        frame = cells_from_runs(frame)
    if "status" not in frame.columns:
        medians = frame["throughput_median"]
        frame["status"] = ["ok" if fmt.is_number(v) else "missing" for v in medians]
    frame["source"] = name
    log.info("baseline %r: %d cells from %s", name, len(frame), path)
    return add_speedup(frame.reindex(columns=CELL_TABLE_COLUMNS))


def load_cells(cells_path: Path, baselines: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """The measured cells and every baseline's cells in one frame (`source` tells them apart)."""
    measured = read_table(cells_path)
    measured["source"] = MEASURED
    frames = [measured.reindex(columns=CELL_TABLE_COLUMNS)]
    for i, baseline in enumerate(baselines):
        frames.append(load_baseline(baseline["name"], Path(baseline["path"]), i))
    nonempty = [f for f in frames if len(f)] or frames[:1]
    cells = pd.concat(nonempty, ignore_index=True)
    cells["xla"] = cells["xla"].map(_to_bool)
    for column in (
        "batch_size",
        "variant",
        "status",
        "method",
        "speedup_baseline_cell",
        "statuses",
    ):
        cells[column] = cells[column].fillna("").astype(str)
    cells["variant"] = cells["variant"].replace("", "default")
    return cells
