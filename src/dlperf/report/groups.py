"""The results tables: cells grouped by model, precision and batch size, one column per framework
setting and source, one row per layout, with their footnotes, spread details and plot points."""

from __future__ import annotations

import dataclasses
import fnmatch
import math
import re
from collections.abc import Set as AbstractSet
from typing import Any

import pandas as pd

from dlperf.i18n import Text
from dlperf.matrix import Cell, Layout
from dlperf.report import fmt
from dlperf.report.figures import figure_keys, format_figure
from dlperf.report.load import MEASURED
from dlperf.report.model import ABSENT, Column, Detail, Footnote, Group, PlotPoint, Row, TableCell
from dlperf.report.names import column_label
from dlperf.report.order import Order, layout_key
from dlperf.report.reasons import CellRuns, Limits, cell_flags, recorded, runs_reasons
from dlperf.status import Status
from dlperf.vocabulary import PRECISION_NAMES, display_name

# shown with a footnote giving the runs' reasons (OOM speaks for itself, as in DLPerf's tables)
NOTED_STATUSES = (Status.FAILED, Status.TIMEOUT, Status.PARSE_ERROR, Status.SKIPPED, Status.STALE)
GROUP_KEYS = ["model", "precision", "table_batch"]
# a cell's figures that come from its throughput: none where the cell has no figure
_THROUGHPUT_FIGURES = (
    "throughput_median",
    "throughput_min",
    "throughput_max",
    "throughput_cv",
    "ci_low",
    "ci_high",
    "ci_level",
    "speedup",
    "efficiency",
    "achieved_tflops",
    "mfu_pct",
    "energy_j_per_sample",
)
COLUMN_KEYS = ["source", "framework", "xla", "variant", "batch_size"]


def table_keys(cells: pd.DataFrame) -> pd.DataFrame:
    """`cells` with `table_batch`: the batch size of the table each cell is shown in.

    A cell's own batch size, except a fallback: DLPerf shows NGC TensorFlow's bsz=224 in its
    bsz=256 table because 256 ran out of memory. A column's numeric batch b joins the table of its
    next larger batch B when every cell at B is OOM, B was tried at 1 device only, b ran at more
    than one device (the column B would have been; a one-device batch sweep keeps its tables) and
    b >= B/2 (a step down, not a different setting).
    """
    cells = cells.assign(table_batch=cells["batch_size"].astype(str))
    same = ["source", "framework", "model", "precision", "xla", "variant"]
    for _, frame in cells.groupby(same, sort=False):
        oom_sizes = [
            int(b)
            for b, at in frame.groupby("batch_size")
            if str(b).isdigit()
            and (at["status"] == Status.OOM).all()
            and (at["devices"].astype(int) == 1).all()
        ]
        scaled = {
            str(b) for b, at in frame.groupby("batch_size") if (at["devices"].astype(int) > 1).any()
        }
        for index, row in frame.iterrows():
            b = str(row["batch_size"])
            if not b.isdigit() or int(b) in oom_sizes or b not in scaled:
                continue
            larger = [size for size in oom_sizes if int(b) < size <= 2 * int(b)]
            if larger:
                cells.loc[index, "table_batch"] = str(min(larger))
    return cells


class GroupBuilder:
    """Builds the results tables of one report: what every table shares (the runs, the
    configured footnotes, the order, the suite's limits)."""

    def __init__(
        self,
        runs: pd.DataFrame,
        footnote_patterns: dict[str, str],
        order: Order,
        several_sources: bool,
        limits: Limits,
        doubted: AbstractSet[tuple[str, str]] = frozenset(),
    ) -> None:
        """`doubted`: (cell id, source) of the figures to doubt (caveats.doubted)."""
        self.runs_of = CellRuns(runs)
        self.patterns = footnote_patterns
        self.order = order
        self.several_sources = several_sources
        self.limits = limits
        self.doubted = doubted

    def groups(self, cells: pd.DataFrame) -> list[Group]:
        """One results table per model, precision and (table) batch size, in the report's order."""
        grouped = table_keys(cells).groupby(GROUP_KEYS, sort=False)
        ordered = sorted(grouped, key=lambda kv: self.order.group(kv[0]))
        return _unique_slugs([self.group(key, frame) for key, frame in ordered])

    def group(self, key: tuple[Any, ...], frame: pd.DataFrame) -> Group:
        model, precision, table_batch = key
        by_column = {k: f for k, f in frame.groupby(COLUMN_KEYS, sort=False)}
        keys = sorted(by_column, key=self.order.column)
        # a larger batch that ran out of memory is told in the footnotes of its fallback columns
        fallen = {(k[0], k[1], k[2], k[3]) for k in keys if str(k[4]) != str(table_batch)}
        keys = [k for k in keys if not (str(k[4]) == str(table_batch) and k[:4] in fallen)]
        notes = _Notes(self.runs_of, self.patterns, self.limits, self.doubted)
        columns = [self._column(k, by_column[k], frame, str(table_batch), notes) for k in keys]
        records = {k: {r["layout"]: r for r in by_column[k].to_dict("records")} for k in keys}
        layouts = (
            sorted(set().union(*(set(r) for r in records.values())), key=layout_key) if keys else []
        )
        rows = []
        for layout in layouts:
            parsed = Layout.parse(layout)
            cells = tuple(notes.cell(records[k].get(layout)) for k in keys)
            rows.append(Row(parsed.nodes, parsed.devices, layout, cells))
        shown = pd.concat([by_column[k] for k in keys]) if keys else frame
        extra = figure_keys(shown)
        details, points = [], []
        for column, k in zip(columns, keys, strict=True):
            for layout in layouts:
                record = records[k].get(layout)
                if record is None:
                    continue
                details.append(self._detail(column, record, extra))
                if record["status"] == Status.OK and fmt.is_number(record["throughput_median"]):
                    doubted = (record["cell_id"], record["source"]) in self.doubted
                    points.append(_point(column, record, doubted))
        return Group(
            slug=_slug(model, precision, str(table_batch)),
            model=model,
            model_name=display_name(model),
            precision=precision,
            precision_name=PRECISION_NAMES.get(precision, precision),
            xla=False,
            batch_size=str(table_batch),
            variant="default",
            columns=tuple(columns),
            rows=tuple(rows),
            details=tuple(details),
            footnotes=notes.footnotes(),
            points=tuple(points),
            figure_keys=extra,
        )

    def _column(
        self,
        key: tuple[Any, ...],
        mine: pd.DataFrame,
        frame: pd.DataFrame,
        table_batch: str,
        notes: _Notes,
    ) -> Column:
        numbers = [notes.column_note(n) for n in _column_remarks(key, frame, table_batch)]
        label = column_label(key, table_batch, _resolved_batch(mine), self.several_sources)
        return Column(
            framework=key[1],
            source=key[0],
            label=label,
            xla=bool(key[2]),
            variant=key[3],
            batch_size=str(key[4]),
            notes=tuple(numbers),
        )

    def _detail(self, column: Column, record: dict[str, Any], figures: tuple[str, ...]) -> Detail:
        counts = [record[k] for k in ("runs_ok", "runs_done", "runs_planned")]
        runs = "/".join(fmt.integer(c) for c in counts) if all(map(fmt.is_number, counts)) else "-"
        status = record["status"] or Status.MISSING
        if status != Status.OK:
            # no figure for a cell without one, as its table shows (a published table may give a
            # failed cell's number): its status says why
            record = record | dict.fromkeys(_THROUGHPUT_FIGURES, math.nan)
        low, high = record["throughput_min"], record["throughput_max"]
        return Detail(
            column=column.label,
            layout=record["layout"],
            cell_id=record["cell_id"],
            status=status,
            runs=runs,
            median=fmt.throughput(record["throughput_median"]),
            min_max=_span(low, high),
            cv=fmt.percent(record["throughput_cv"]),
            ci=_span(record["ci_low"], record["ci_high"]),
            ci_level=fmt.percent(record["ci_level"]),
            speedup=fmt.speedup(record["speedup"]),
            efficiency=fmt.percent(record["efficiency"]),
            speedup_baseline_cell=fmt.text(record["speedup_baseline_cell"]),
            methods=tuple(m for m in fmt.text(record["method"]).split(",") if m),
            figures=tuple(format_figure(key, record) for key in figures),
            flags=cell_flags(record, self.runs_of(record), self.limits),
        )


def _span(low: Any, high: Any) -> str:
    return f"{fmt.throughput(low)}-{fmt.throughput(high)}" if fmt.is_number(low) else fmt.NA


def _resolved_batch(frame: pd.DataFrame) -> str:
    """The batch per device behind `max`, when the column's cells agree on one."""
    values = pd.to_numeric(frame.get("batch_size_resolved"), errors="coerce").dropna().unique()
    return fmt.integer(values[0]) if len(values) == 1 else ""


def _slug(model: str, precision: str, batch_size: str) -> str:
    """The table's name in file names (its plots): a published table's own words for a model
    ("ResNet-50 v1.5 (ours)", "../x") kept to letters, digits, '.', '_' and '-', and short."""
    cell = Cell("", model, precision, False, batch_size, Layout(1, 1), "default")
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", cell.group_id.replace(".noxla", ""))[:120].strip(".")


def _unique_slugs(groups: list[Group]) -> list[Group]:
    """Each table its own slug (its plots' files, its anchor): two tables whose model words
    differ only in what a slug leaves out ('ResNet 50', 'ResNet_50'; case, on a filesystem that
    ignores it) would share one plot file, each showing the last one's; the later get -2, -3."""
    seen: set[str] = set()
    unique = []
    for group in groups:
        slug, n = group.slug, 2
        while slug.lower() in seen:
            slug, n = f"{group.slug}-{n}", n + 1
        seen.add(slug.lower())
        unique.append(group if slug == group.slug else dataclasses.replace(group, slug=slug))
    return unique


def _column_remarks(key: tuple[Any, ...], frame: pd.DataFrame, table_batch: str) -> list[Footnote]:
    """Footnotes on a column: the OOM it falls back from, and its table's own remark."""
    source, framework, xla, variant, batch_size = key
    same = frame[
        (frame["source"] == source)
        & (frame["framework"] == framework)
        & (frame["xla"] == xla)
        & (frame["variant"] == variant)
    ]
    remarks = []
    if str(batch_size) != str(table_batch):
        oom = same[same["batch_size"] == table_batch]
        remarks.append(
            Footnote(
                0,
                "fallback",
                Status.OOM,
                tuple(oom["cell_id"]),
                "",
                str(table_batch),
                str(batch_size),
                tuple(oom["layout"]),
            )
        )
    mine = same[same["batch_size"] == batch_size]
    remarks += [Footnote(0, "note", "", (), text) for text in dict.fromkeys(mine["note"]) if text]
    return remarks


def _point(column: Column, record: dict[str, Any], doubted: bool) -> PlotPoint:
    def number(key: str) -> float:
        value = record.get(key)
        return float(value) if value is not None and fmt.is_number(value) else math.nan

    return PlotPoint(
        column.label,
        str(record["layout"]),
        float(record["throughput_median"]),
        number("speedup"),
        number("throughput_min"),
        number("throughput_max"),
        number("speedup_ceiling"),
        doubted,
    )


class _Notes:
    """Numbers the footnotes of one table in the order their cells appear (row by row)."""

    def __init__(
        self,
        runs_of: CellRuns,
        patterns: dict[str, str],
        limits: Limits,
        doubted: AbstractSet[tuple[str, str]],
    ) -> None:
        self.runs_of = runs_of
        self.patterns = patterns
        self.limits = limits
        self.doubted = doubted
        self.notes: list[Footnote] = []
        # a note many cells share (a configured pattern's, the figures to doubt): its number, cells
        self.shared: dict[str, int] = {}
        self.shared_cells: dict[int, list[str]] = {}

    def cell(self, record: dict[str, Any] | None) -> TableCell:
        if record is None:
            return TableCell("", ABSENT, "", "", ())
        status = record["status"] or Status.MISSING
        numbers = []
        if status in NOTED_STATUSES:
            reason = self._reason(record)
            numbers.append(self._add(Footnote(0, "status", status, (record["cell_id"],), reason)))
        ok = status == Status.OK
        if ok and (record["cell_id"], record["source"]) in self.doubted:
            numbers.append(self._shared("doubt", Footnote(0, "doubt", "", (), ""), record))
        for pattern, text in self.patterns.items():
            if fnmatch.fnmatchcase(record["cell_id"], pattern):
                numbers.append(self._shared(pattern, Footnote(0, "config", "", (), text), record))
        return TableCell(
            cell_id=record["cell_id"],
            status=status,
            throughput=fmt.throughput(record["throughput_median"]) if ok else "",
            speedup=fmt.speedup(record["speedup"]) if ok else "",
            notes=tuple(numbers),
        )

    def _shared(self, key: str, note: Footnote, record: dict[str, Any]) -> int:
        """The number of the note `key` that many cells share, the record's cell among them."""
        if key not in self.shared:
            self.shared[key] = self._add(note)
            self.shared_cells[self.shared[key]] = []
        number = self.shared[key]
        if record["cell_id"] not in self.shared_cells[number]:  # a baseline's same id
            self.shared_cells[number].append(record["cell_id"])
        return number

    def _add(self, note: Footnote) -> int:
        number = len(self.notes) + 1
        self.notes.append(dataclasses.replace(note, number=number))
        return number

    def column_note(self, note: Footnote) -> int:
        """A remark on a whole column; columns with the same remark share its number."""
        for known in self.notes:
            if dataclasses.replace(known, number=0) == note:
                return known.number
        return self._add(note)

    def _reason(self, record: dict[str, Any]) -> Text:
        """Each distinct reason of the cell's runs that did not succeed, with its repeats (a
        baseline's cell, or tables without runs: the cell's statuses)."""
        if record["source"] != MEASURED or not self.runs_of.by_id:
            return recorded(record.get("statuses"))
        runs = self.runs_of(record)
        return runs_reasons(runs[runs["status"] != Status.OK], self.limits)

    def footnotes(self) -> tuple[Footnote, ...]:
        return tuple(
            dataclasses.replace(note, cell_ids=tuple(self.shared_cells[note.number]))
            if note.number in self.shared_cells
            else note
            for note in self.notes
        )
