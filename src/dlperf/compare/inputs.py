"""What `dlperf diff` is given, read and checked: a results folder (its tables and the manifests
of its ok runs), a runs or cells table, or a per-run JSON. Each is what it should be, or a
DiffInputError naming the path and what was expected."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from dlperf.errors import ConfigError
from dlperf.paths import RESULTS, ResultPaths
from dlperf.report.tablecheck import check_separator, check_table
from dlperf.status import Status

PERCENTILES = ("p50_ms", "p75_ms", "p90_ms", "p95_ms")
RUN_JSON_KEYS = ("throughput_samples_per_s", "percentiles_ms")
RUNS_COLUMNS = ("cell_id", "repeat", "status", "throughput_samples_per_s")
RUNS_TABLE = "a runs table (tables/runs.tsv)"
CELLS_COLUMNS = ("cell_id", "throughput_median", "status")
CELLS_TABLE = "a cells table (tables/cells.tsv)"


class DiffInputError(ValueError):
    """A diff argument is not what it should be: the message names the path and what was expected."""


@dataclass(frozen=True)
class ResultsFolder:
    """A results folder: tables/ (runs.tsv, cells.tsv) and runs/<cell>/r<k>/manifest.json, at
    the paths dlperf.paths.ResultPaths gives them."""

    root: Path

    @property
    def paths(self) -> ResultPaths:
        return ResultPaths(self.root)

    @property
    def tables(self) -> Path:
        return self.paths.tables

    @property
    def runs_table(self) -> Path:
        return self.paths.runs

    @property
    def cells_table(self) -> Path:
        return self.paths.cells

    def manifests(self) -> Iterator[Path]:
        """The manifests of the ok runs its runs table holds: what its figures come from. A run
        on disk the tables left out (a cell no longer in the suite, a repeat beyond the suite's, a
        stale record) or did not count measured something else, and is no part of either side."""
        if not self.runs_table.is_file():
            return  # cells.tsv alone: cell medians, no runs
        runs = read_runs_table(self.runs_table)
        ok = runs[runs["status"].astype(str) == Status.OK]
        for cell_id, repeat in zip(ok["cell_id"].astype(str), ok["repeat"], strict=True):
            yield self.paths.run(cell_id, int(repeat)).manifest


def results_folder(path: Path) -> ResultsFolder:
    """``path`` itself or ``path/results`` when it holds tables/; else a clear DiffInputError."""
    path = Path(path)
    expected = "expected a results folder (holding tables/runs.tsv, e.g. results/)"
    if not path.exists():
        raise DiffInputError(f"{path}: no such folder; {expected}")
    for root in (path, path / RESULTS.name):
        if ResultPaths(root).tables.is_dir():
            return ResultsFolder(root)
    if (path / "manifest.json").is_file():
        raise DiffInputError(f"{path}: is the folder of one run (manifest.json); {expected}")
    if any(path.glob("r*/manifest.json")):
        raise DiffInputError(f"{path}: is the folder of one cell (r<k>/manifest.json); {expected}")
    if any(path.glob("*/r*/manifest.json")):
        raise DiffInputError(f"{path}: is a runs folder (<cell>/r<k>/); give its parent")
    if (path / "runs.tsv").is_file() or (path / "cells.tsv").is_file():
        raise DiffInputError(f"{path}: is a tables folder; give its parent ({path.parent})")
    raise DiffInputError(f"{path}: has no tables/ or results/tables/; {expected}")


def read_table(path: Path, columns: tuple[str, ...], what: str) -> pd.DataFrame:
    """A TSV table with at least these columns, each holding its kind (check_table: an ok run
    without a throughput, a throughput that is text or negative), or a DiffInputError naming the
    path and, for a value, its line and column."""
    if not path.is_file():
        raise DiffInputError(f"{path}: no such file; expected {what}")
    try:
        frame = pd.read_csv(path, sep="\t")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as err:
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise DiffInputError(
            f"{path}: not a readable TSV table ({reason}); expected {what}"
        ) from err
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise DiffInputError(f"{path}: has no column {', '.join(missing)}; expected {what}")
    try:
        check_table(frame, path)
    except ConfigError as err:
        raise DiffInputError(str(err)) from None
    return frame


def read_runs_table(path: Path) -> pd.DataFrame:
    """A runs table, with the columns a diff reads of it (read_table)."""
    return read_table(path, RUNS_COLUMNS, RUNS_TABLE)


def read_cells_table(path: Path) -> pd.DataFrame:
    """A cells table, with the columns a diff reads of it (read_table)."""
    return read_table(path, CELLS_COLUMNS, CELLS_TABLE)


def read_run_json(path: Path) -> dict[str, Any]:
    """A per-run JSON (results/json/<cell>/r<k>.json), or a DiffInputError naming the path."""
    expected = "expected a per-run JSON (results/json/<cell>/r<k>.json)"
    if not path.is_file():
        raise DiffInputError(f"{path}: no such file; {expected}")
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise DiffInputError(f"{path}: not JSON ({err}); {expected}") from err
    if not isinstance(data, dict) or any(k not in data for k in RUN_JSON_KEYS):
        raise DiffInputError(f"{path}: has no {' and '.join(RUN_JSON_KEYS)}; {expected}")
    if not isinstance(data["percentiles_ms"], dict):
        raise DiffInputError(f"{path}: percentiles_ms is not an object (p50_ms: ...); {expected}")
    figures = {
        key: data.get(key) for key in ("throughput_samples_per_s", "nonfinite_loss_steps")
    } | {f"percentiles_ms.{q}": data["percentiles_ms"].get(q) for q in PERCENTILES}
    for key, value in figures.items():
        if value is not None and not _amount(value):
            raise DiffInputError(
                f"{path}: {key} is {value!r}, not a finite number >= 0 (or null); {expected}"
            )
    return data


def _amount(value: object) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


KIND_NAMES = {  # diff_kind's kinds, as an error names them
    "results": "results folder",
    "run_json": "per-run JSON",
    "cells_table": "cells table",
    "runs_table": "runs table",
}


def diff_kind(path: Path) -> str:
    """What a diff argument is: results (folder), run_json, cells_table or runs_table."""
    expected = "expected a results folder, a per-run JSON (.json) or a cells/runs table (.tsv)"
    if not path.exists():
        raise DiffInputError(f"{path}: no such file or folder; {expected}")
    if path.is_dir():
        return "results"
    if path.suffix == ".json":
        return "run_json"
    if path.suffix == ".tsv":
        try:
            with path.open() as handle:
                header = handle.readline().rstrip("\n").split("\t")
        except (OSError, UnicodeDecodeError) as err:
            raise DiffInputError(f"{path}: unreadable ({err}); {expected}") from err
        try:
            check_separator(header, path)
        except ConfigError as err:
            raise DiffInputError(str(err)) from None
        if "throughput_median" in header:
            return "cells_table"
        if "throughput_samples_per_s" in header:
            return "runs_table"
        raise DiffInputError(
            f"{path}: a TSV with neither throughput_median nor throughput_samples_per_s; {expected}"
        )
    raise DiffInputError(f"{path}: unknown kind of file; {expected}")
