"""What each column of a dlperf cells or runs table may hold, checked before the report or the
diff reads it (check_table): every error names the file, the line and the column."""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from dlperf.errors import ConfigError
from dlperf.status import Status

# What each column a dlperf table may carry holds; an empty field is n/a in every one of them.
_AMOUNT_COLUMNS = (  # finite numbers >= 0
    "throughput_median",
    "throughput_min",
    "throughput_max",
    "throughput_cv",
    "throughput_samples_per_s",
    "ci_low",
    "ci_high",
    "speedup",
    "efficiency",
    "achieved_tflops",
    "mfu_pct",
    "peak_tflops",
    "peak_mem_mib",
    "device_mem_used_mib",
    "energy_j_per_sample",
    "power_w_per_device",
    "busbw_gb_s",
    "speedup_ceiling",
    "speedup_ceiling_overlap",
    "latency_ms",
)
_COUNT_COLUMNS = (  # whole numbers >= 0
    "runs_planned",
    "runs_done",
    "runs_ok",
    "outlier_runs",
    "batch_size_resolved",
    "search_ceiling",
    "cores_per_rank",
    "repeat",
)
SIZE_COLUMNS = ("nodes", "gpus_per_node", "devices")  # whole numbers >= 1
_FRACTION_COLUMNS = ("ci_level",)  # between 0 and 1
FLAG_COLUMNS = ("xla", "unstable", "outlier")
_FLAG_WORDS = frozenset({"true", "false", "1", "0", "1.0", "0.0", "yes", "no", "on", "off"})
_FLAG_WORDS_XLA = _FLAG_WORDS | {"xla", "noxla"}
STATUSES = tuple(str(s) for s in Status)


def separator(path: Path) -> str:
    """The field separator of a table: a .csv's commas, any other's (a .tsv's) tabs."""
    return "," if path.suffix == ".csv" else "\t"


def check_separator(columns: Sequence[Any], path: Path) -> None:
    """A header read as one field holding another separator (commas in a .tsv, tabs in a .csv,
    a spreadsheet's semicolons, spaces typed for tabs) is a ConfigError at path:1 saying what the
    file needs: it would read as a table of one column, without cell_id."""
    header = str(columns[0]) if len(columns) == 1 else ""
    if any(sep in header for sep in ",;\t") or len(header.split()) > 1:
        needs = {",": "commas", "\t": "tabs"}[separator(path)]
        raise ConfigError(
            f"{path}:1: the header is one field, {shown(header[:60])}: this table's fields must "
            f"be separated by {needs} (a .tsv table's by tabs, a .csv one's by commas)"
        )


def check_table(frame: pd.DataFrame, path: Path) -> None:
    """Every column of a cells or runs table the report or the diff reads holds its kind, else a
    ConfigError naming the file, line and column: numbers finite and not negative (counts whole,
    layouts' sizes at least 1), statuses dlperf's (dlperf.status), flags true or false; in a cells
    table min <= median <= max, the interval's low end not above its high end, each cell id on
    one line; in a runs table an ok run has a throughput. Empty fields are n/a and pass."""
    lines = Lines(path, len(frame))
    for column in frame.columns:
        kind = _kind(column)
        if kind is None:
            continue
        for row, value in enumerate(frame[column]):
            if is_empty(value):
                continue
            wrong = kind(column, value)
            if wrong:
                raise ConfigError(f"{path}:{lines[row]}: column {column}: {shown(value)} {wrong}")
    if "throughput_median" in frame.columns:
        _check_cells(frame, path, lines)
    elif {"status", "throughput_samples_per_s"} <= set(frame.columns):
        if {"cell_id", "repeat"} <= set(frame.columns):
            _check_runs_once(frame, path, lines)
        for row, (status, value) in enumerate(
            zip(frame["status"], frame["throughput_samples_per_s"], strict=True)
        ):
            if status == Status.OK and is_empty(value):
                raise ConfigError(
                    f"{path}:{lines[row]}: column throughput_samples_per_s: empty on a run "
                    "whose status is ok (an ok run has a throughput)"
                )


def _check_runs_once(frame: pd.DataFrame, path: Path, lines: Lines) -> None:
    """A runs table has one line per run: a (cell_id, repeat) given twice would be pooled
    twice into the cell's median and the diff's test."""
    first: dict[tuple[str, str], int] = {}
    for row, (cell_id, repeat) in enumerate(zip(frame["cell_id"], frame["repeat"], strict=True)):
        if is_empty(cell_id) or is_empty(repeat):
            continue
        key = (str(cell_id), shown(repeat))
        if key in first:
            raise ConfigError(
                f"{path}:{lines[row]}: column repeat: {cell_id!r} repeat {shown(repeat)} again "
                f"(first on line {lines[first[key]]}); a runs table has one line per run"
            )
        first[key] = row


def _check_cells(frame: pd.DataFrame, path: Path, lines: Lines) -> None:
    def numbers(column: str) -> pd.Series:
        values = frame[column] if column in frame.columns else pd.Series(math.nan, frame.index)
        return pd.to_numeric(values, errors="coerce").reset_index(drop=True)

    median, low, high = (numbers(f"throughput_{c}") for c in ("median", "min", "max"))
    for row in ((low > median) | (median > high)).to_numpy().nonzero()[0]:
        raise ConfigError(
            f"{path}:{lines[row]}: column throughput_median: {median[row]:g} lies outside "
            f"throughput_min-throughput_max ({low[row]:g}-{high[row]:g})"
        )
    ci_low, ci_high = numbers("ci_low"), numbers("ci_high")
    for row in (ci_low > ci_high).to_numpy().nonzero()[0]:
        raise ConfigError(
            f"{path}:{lines[row]}: column ci_low: {ci_low[row]:g} is above ci_high {ci_high[row]:g}"
        )
    if "cell_id" in frame.columns:
        first: dict[str, int] = {}
        for row, cell_id in enumerate(frame["cell_id"]):
            if is_empty(cell_id):
                continue
            if cell_id in first:
                raise ConfigError(
                    f"{path}:{lines[row]}: column cell_id: {cell_id!r} again (first on line "
                    f"{lines[first[cell_id]]}); a cells table has one line per cell"
                )
            first[cell_id] = row


def _kind(column: str):  # noqa: ANN202
    """The check of a column's non-empty values: a reason it is wrong, or '' when right."""
    if column in _AMOUNT_COLUMNS:
        return lambda _, value: _number(value, whole=False, least=0)
    if column in _COUNT_COLUMNS:
        return lambda _, value: _number(value, whole=True, least=0)
    if column in SIZE_COLUMNS:
        return lambda _, value: _number(value, whole=True, least=1)
    if column in _FRACTION_COLUMNS:
        return lambda _, value: _number(value, whole=False, least=0, most=1)
    if column in FLAG_COLUMNS:
        return _flag
    if column == "status":
        return _status
    return None


def _number(value: Any, whole: bool, least: float, most: float = math.inf) -> str:
    if isinstance(value, bool):
        return "is not a number"
    try:
        x = float(value)
    except (TypeError, ValueError):
        return "is not a number"
    if not math.isfinite(x):
        return "is not a finite number"
    if whole and not x.is_integer():
        return "is not a whole number"
    if x < least:
        return "is negative" if least == 0 else f"is below {least:g}"
    if x > most:
        return f"is above {most:g}"
    return ""


def _flag(column: str, value: Any) -> str:
    if isinstance(value, bool):
        return ""
    words = _FLAG_WORDS_XLA if column == "xla" else _FLAG_WORDS
    if str(value).strip().lower() in words:
        return ""
    return f"is not one of {', '.join(sorted(words))} (or empty)"


def _status(_: str, value: Any) -> str:
    if value in STATUSES:
        return ""
    return f"is not a dlperf status ({', '.join(STATUSES)}; empty for missing)"


def shown(value: Any) -> str:
    """A value as the table gives it: a number as typed (pandas reads 95 as 95.0), text quoted."""
    if isinstance(value, float):
        return f"{value:g}" if value.is_integer() and abs(value) < 1e16 else repr(value)
    return repr(value) if isinstance(value, str) else str(value)


def is_empty(value: Any) -> bool:
    """pandas' n/a (NaN, None) or blank text."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return True
    return isinstance(value, str) and not value.strip()


class Lines:
    """A table row's line in its file, found only when a message needs it: pandas skips blank
    lines (and whitespace-only ones) and a quoted field may span lines, so the row's position
    plus two is not always its line."""

    def __init__(self, path: Path, rows: int) -> None:
        self.path, self.rows = path, rows
        self.found: list[int] | None = None

    def __getitem__(self, row: int) -> int:
        if self.found is None:
            self.found = self._scan()
        return self.found[row] if len(self.found) == self.rows else row + 2

    def _scan(self) -> list[int]:
        sep = separator(self.path)
        starts, start = [], 1
        try:
            with self.path.open(newline="", encoding="utf-8", errors="replace") as handle:
                reader = csv.reader(handle, delimiter=sep)
                for record in reader:
                    if record and not (len(record) == 1 and not record[0].strip()):
                        starts.append(start)
                    start = reader.line_num + 1
        except (OSError, csv.Error):
            return []
        return starts[1:]  # the first is the header


def to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if value is None or (isinstance(value, float) and value != value):
        return False
    return str(value).strip().lower() in ("true", "1", "1.0", "yes", "on", "xla")


def check_layout(path: Path) -> None:
    """A hand-written table's header names each column once, and no field swallows rows: pandas
    renames a second `throughput_median` and reads past it, and an unmatched quote takes the
    lines up to the next one into one field (rows vanish into a remark). A quoted field may run
    over lines (a note), but one that holds the separator as well holds rows. ConfigError at
    path:line."""
    sep, start = separator(path), 1
    try:
        with path.open(newline="", encoding="utf-8", errors="replace") as handle:
            reader = csv.reader(handle, delimiter=sep)
            header = next(reader, [])
            if header and header[0].startswith("#"):
                raise ConfigError(
                    f"{path}:1: a comment where the header should be ({sep.join(header)[:60]!r}): "
                    "a table's first line names its columns (cell_id, ...), and tables take no "
                    "comment lines"
                )
            twice = sorted({c for c in header if header.count(c) > 1})
            if twice:
                raise ConfigError(f"{path}:1: column {twice[0]} is named twice in the header")
            start = reader.line_num + 1
            for record in reader:
                if reader.line_num > start and any("\n" in f and sep in f for f in record):
                    raise ConfigError(
                        f"{path}:{start}: a quoted field runs on to line {reader.line_num} "
                        '(an unmatched " ?), with rows in it'
                    )
                start = reader.line_num + 1
    except csv.Error as err:
        raise ConfigError(f"{path}:{start}: {err}") from None
