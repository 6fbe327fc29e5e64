"""Read the cells and runs tables and the baselines (cells or runs tables, marked by name)."""

from __future__ import annotations

import csv
import json
import logging
import re
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from dlperf.errors import ConfigError
from dlperf.matrix import Cell, names_slug, sweep_slug
from dlperf.measure.tables import (
    CELL_COLUMNS,
    CELL_TABLE_COLUMNS,
    add_speedup,
    cell_figures,
    resolved_setting,
    stated_batch,
)
from dlperf.report import fmt
from dlperf.report.tablecheck import (
    FLAG_COLUMNS,
    SIZE_COLUMNS,
    Lines,
    check_layout,
    check_separator,
    check_table,
    is_empty,
    separator,
    shown,
    to_bool,
)
from dlperf.status import Status

log = logging.getLogger(__name__)

MEASURED = "measured"
# Columns newer tables carry (absent in older ones: read as NaN, shown as n/a, never 0).
OPTIONAL_CELL_COLUMNS = [
    "achieved_tflops",
    "mfu_pct",
    "peak_mem_mib",
    "energy_j_per_sample",
    "power_w_per_device",
    "energy_detail",
    "busbw_gb_s",
    "speedup_ceiling",
    "batch_size_resolved",
    "search_ceiling",
    "unstable",
    "outlier_runs",
    "flags",
    "note",  # a published table's remark on the cell (w/XLA, W/O clip, bsz=96)
    "latency_ms",  # a published latency per iteration, where the source prints no throughput
]
OPTIONAL_RUN_COLUMNS = ["outlier", "outlier_detail", "peak_mem_mib", "mfu_pct"]
REPORT_CELL_COLUMNS = CELL_TABLE_COLUMNS + [
    c for c in OPTIONAL_CELL_COLUMNS if c not in CELL_TABLE_COLUMNS
]
_BSZ_NOTE = re.compile(r"\bbsz\s*=\s*(\d+)\b")
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
    "energy_detail",
    "flops_method",
    "flags",
    "note",
    "outlier_detail",
    "setting",
)


def _ragged_row(path: Path, sep: str) -> str:
    """`path:line` of the first row with more fields than the header (`path` if none is found)."""
    with open(path, newline="", errors="replace") as f:
        rows = csv.reader(f, delimiter=sep)
        width = len(next(rows, []))
        for row in rows:
            if len(row) > width:
                return f"{path}:{rows.line_num}"
    return str(path)


def read_table(path: Path, check: bool = False) -> pd.DataFrame:
    """A TSV (or CSV) written by dlperf.measure.tables: ids and words as text, empty text as ''.
    With `check`, every column it carries is checked for its kind first (check_table)."""
    sep = separator(path)
    dtype = dict.fromkeys(_TEXT_COLUMNS, str)
    try:
        with warnings.catch_warnings():
            # a first row longer than the header: pandas would take its first field as an index
            # and shift the others a column left; index_col=False warns, and that is an error
            warnings.simplefilter("error", pd.errors.ParserWarning)
            frame = pd.read_csv(path, sep=sep, dtype=dtype, keep_default_na=True, index_col=False)
    except pd.errors.ParserWarning:
        raise ConfigError(f"{_ragged_row(path, sep)}: more fields than the header") from None
    except UnicodeDecodeError as err:  # UTF-16 (a spreadsheet's "Unicode text"), or binary
        raise ConfigError(
            f"{path}: not a readable table: not UTF-8 text ({err.reason} at byte {err.start}); "
            "save it as UTF-8"
        ) from None
    except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:  # binary, empty
        line = re.search(r"line (\d+)", str(err))
        where = f"{path}:{line[1]}" if line else str(path)
        raise ConfigError(f"{where}: not a readable table: {str(err).splitlines()[0]}") from None
    check_separator(list(frame.columns), path)
    if check:
        check_table(frame, path)
    for column in _TEXT_COLUMNS:
        if column in frame.columns:
            frame[column] = frame[column].fillna("")
    for column in FLAG_COLUMNS:
        if column in frame.columns:
            frame[column] = frame[column].map(to_bool)
    return frame


def _fill_dimensions(frame: pd.DataFrame, path: Path) -> pd.DataFrame:
    """Fill cell dimensions a published table leaves out, a column or a row's empty field, from
    the cell id. The values it gives of what the id names (layout and its sizes, batch size,
    precision, xla) must be the id's: the report places a figure by them and computes its speedup
    and efficiency from the id; its words may differ (a table may relabel its cells' model)."""
    frame = frame.copy()
    lines = Lines(path, len(frame))
    keys = []
    for row, cell_id in enumerate(frame["cell_id"]):
        try:
            keys.append(Cell.parse(cell_id).key())
        except ValueError as err:
            raise ConfigError(f"{path}:{lines[row]}: column cell_id: {err}") from None
    derived = pd.DataFrame(keys, index=frame.index, columns=CELL_COLUMNS)
    for column in CELL_COLUMNS:
        if column not in frame.columns:
            frame[column] = derived[column]
            continue
        empty = frame[column].map(is_empty)
        frame[column] = frame[column].astype(object).where(~empty, derived[column])
        if column not in _HELD_TO_ID:
            continue
        for row, (given, own) in enumerate(zip(frame[column], derived[column], strict=True)):
            if not is_empty(given) and _held(column, given) != _held(column, own):
                said = "xla" if column == "xla" and own else "noxla" if column == "xla" else own
                raise ConfigError(
                    f"{path}:{lines[row]}: column {column}: {shown(given)} is not its cell "
                    f"id's {said} ({frame['cell_id'].iloc[row]}): correct the field, or the "
                    "cell id"
                )
    return frame


_HELD_TO_ID = (*SIZE_COLUMNS, "layout", "batch_size", "precision", "xla")


def _held(column: str, value: Any) -> Any:
    """A cell value as `_fill_dimensions` compares it with the id's: 8 and 8.0 one batch size,
    AMP and amp one precision, True and xla one xla."""
    if column == "xla":
        return to_bool(value)
    text = str(value).strip().lower()
    try:
        return float(text)
    except ValueError:
        return text


def cells_from_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """Aggregate a runs table to cells: median and spread of the ok runs, as dlperf.measure.tables
    does, and the swept option values each cell's figures are placed by (its `max` resolved)."""
    rows = []
    for _, group in runs.groupby("cell_id", sort=True):
        first = group.iloc[0]
        setting = resolved_setting(first.get("setting"), group)
        rows.append(
            {c: first[c] for c in CELL_COLUMNS}
            | {"setting": setting}
            | cell_figures(group, len(group))
            | {"window": ""}
        )
    return pd.DataFrame(rows)


def table_in(folder: Path) -> str:
    """What to give instead of a folder: the cells table it holds, where it holds one."""
    inside = [p for p in (folder / "tables" / "cells.tsv", folder / "cells.tsv") if p.is_file()]
    return f", e.g. {inside[0]}" if inside else " (a results folder's tables/cells.tsv)"


def load_baseline(name: str, path: Path, index: int = 0, where: str = "") -> pd.DataFrame:
    """A baseline as cells rows with source = name; its speedup from its own 1n1g cells."""
    where = where or f"baselines[{index}].path"
    if name == MEASURED:
        raise ConfigError(
            f"baselines[{index}].name: {name!r} is reserved for this suite's own results"
        )
    if path.is_dir():
        raise ConfigError(
            f"{where}: {path} is a folder; give a cells or runs table (.tsv or .csv)"
            f"{table_in(path)}"
        )
    if not path.is_file():
        raise ConfigError(
            f"{where}: baseline table {str(path)!r} not found (relative to {Path.cwd()})"
        )
    check_layout(path)  # hand-written: one line a row, each column once
    frame = read_table(path, check=True)
    if "cell_id" not in frame.columns:
        raise ConfigError(
            f"{where}: {path} has no cell_id column; is it a dlperf cells or runs table?"
        )
    if frame.empty:  # a header alone: a baseline that would show nothing beside the measured
        raise ConfigError(f"{where}: {path} has a header and no rows")
    frame = _fill_dimensions(frame, path)
    if "setting" in frame.columns:
        lines = Lines(path, len(frame))
        frame["setting"] = [
            _json_setting(value, str(variant), path, lines, row)
            for row, (value, variant) in enumerate(
                zip(frame["setting"], frame["variant"], strict=True)
            )
        ]
    if "throughput_median" not in frame.columns:
        if "latency_ms" in frame.columns:  # a published latency, no throughput
            frame["throughput_median"] = float("nan")
        elif "throughput_samples_per_s" not in frame.columns or "status" not in frame.columns:
            raise ConfigError(
                f"{where}: {path} has neither throughput_median nor latency_ms (cells table) nor "
                "throughput_samples_per_s and status (runs table)"
            )
        else:
            frame = cells_from_runs(frame)
    figures = frame["throughput_median"]
    if "latency_ms" in frame.columns:
        figures = figures.where(figures.map(fmt.is_number), frame["latency_ms"])
    if "status" not in frame.columns:
        frame["status"] = [Status.OK if fmt.is_number(v) else Status.MISSING for v in figures]
    lines = Lines(path, len(frame))
    settings = frame["setting"] if "setting" in frame.columns else [""] * len(frame)
    for row, (status, figure, setting) in enumerate(
        zip(frame["status"], figures, settings, strict=True)
    ):  # an ok cell shown as n/a (InsightFace's figure is its setting: the largest value)
        if status == Status.OK and not fmt.is_number(figure) and not setting:
            raise ConfigError(
                f"{path}:{lines[row]}: column throughput_median: an ok cell without a figure "
                "(give its number, or its status)"
            )
    if "note" in frame.columns and "batch_size_resolved" not in frame.columns:
        frame["batch_size_resolved"] = [_noted_batch(n) for n in frame["note"]]
    given = frame.get("batch_size_resolved", pd.Series(float("nan"), index=frame.index))
    frame["batch_size_resolved"] = [
        stated_batch(b, r) for b, r in zip(frame["batch_size"], given, strict=True)
    ]
    frame["source"] = name
    log.info("baseline %r: %d cells from %s", name, len(frame), path)
    return with_speedup(frame)


def _json_setting(value: Any, variant: str, path: Path, lines: Lines, row: int) -> str:
    """A baseline's `setting` (the swept option values of its cell) as the cells table writes it:
    a JSON object, keys sorted; empty for none. Each number or word is one its cell id's variant
    names (dlperf.matrix.sweep_slug), or the value a `max` it names was found to be: the special
    tables place a figure by its setting, so another value (3200000.0, or a row's neighbour's)
    put it in another row or a column of its own. (An object or list is not checked: its keys
    are sorted here, not in the order its slug was made.)"""
    if not isinstance(value, str) or not value.strip():
        return ""
    where = f"{path}:{lines[row]}"
    try:
        setting = json.loads(value)
    except json.JSONDecodeError as err:
        raise ConfigError(f"{where}: setting {value!r} is not JSON ({err.msg})") from None
    if not isinstance(setting, dict):
        raise ConfigError(f"{where}: setting {value!r} is not a JSON object (option: value)")
    for option, swept in setting.items():
        if isinstance(swept, dict | list):
            continue
        named = sweep_slug(option, swept)
        if not any(names_slug(variant, slug) for slug in (named, sweep_slug(option, "max"))):
            raise ConfigError(
                f"{where}: setting {option}: {json.dumps(swept)} is not the value its cell id "
                f"names: its variant {variant!r} has no part {named!r} (nor {option}_max)"
            )
    return json.dumps(setting, sort_keys=True)


def _noted_batch(note: str) -> float:
    """The batch per device a published table gives in its remark ("bsz=96"), else NaN."""
    found = _BSZ_NOTE.search(note or "")
    return float(found[1]) if found else float("nan")


def with_speedup(frame: pd.DataFrame) -> pd.DataFrame:
    """add_speedup, keeping the optional columns it does not know."""
    frame = frame.reindex(columns=REPORT_CELL_COLUMNS)
    computed = add_speedup(frame[CELL_TABLE_COLUMNS])
    extra = [c for c in REPORT_CELL_COLUMNS if c not in CELL_TABLE_COLUMNS]
    return pd.concat([computed, frame[extra]], axis=1)


def load_cells(cells_path: Path, baselines: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """The measured cells and every baseline's cells in one frame (`source` tells them apart)."""
    measured = read_table(cells_path, check=True)
    if "cell_id" in measured.columns:
        _fill_dimensions(measured, cells_path)  # each id a cell id, else its line
    measured["source"] = MEASURED
    frames = [measured.reindex(columns=REPORT_CELL_COLUMNS)]
    for i, baseline in enumerate(baselines):
        frames.append(load_baseline(baseline["name"], Path(baseline["path"]), i))
    nonempty = [f for f in frames if len(f)] or frames[:1]
    cells = pd.concat(nonempty, ignore_index=True)
    return _normalise(cells)


def _normalise(cells: pd.DataFrame) -> pd.DataFrame:
    cells = cells.copy()
    cells["xla"] = cells["xla"].map(to_bool)
    cells["unstable"] = cells["unstable"].map(to_bool)
    for column in (
        "batch_size",
        "variant",
        "status",
        "method",
        "speedup_baseline_cell",
        "statuses",
        "note",
        "flags",
        "energy_detail",
    ):
        # as object first: an all-empty column reads as float64, which "" cannot fill
        cells[column] = cells[column].astype(object).fillna("").astype(str)
    cells["variant"] = cells["variant"].replace("", "default")
    return cells


def load_tables(paths: Sequence[Path]) -> pd.DataFrame:
    """Cells tables given on the command line (`dlperf report`), each its own source (file stem)."""
    frames, names = [], []
    for index, path in enumerate(paths):
        name = path.stem.removesuffix(".tsv")
        if name in names or name == MEASURED:
            name = f"{name} ({index + 1})"
        names.append(name)
        frames.append(load_baseline(name, path, index, where=f"argument {index + 1}"))
    nonempty = [f for f in frames if len(f)] or frames[:1]
    return _normalise(pd.concat(nonempty, ignore_index=True))
