"""The report's data model: built once from the tables and manifests, rendered in every language.

Everything here is data (numbers already formatted, ids, raw reasons); every word a reader sees
comes from the locale catalogs at render time, so the languages cannot drift apart.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from dlperf.launch.record import RunRecord
from dlperf.matrix import Cell, Layout
from dlperf.report import fmt
from dlperf.report.caveats import Caveat, caveats
from dlperf.report.figures import figure_keys, format_figure
from dlperf.report.headline import Headline, headline
from dlperf.report.latency import LatencyTable
from dlperf.report.load import MEASURED
from dlperf.report.planinfo import PlanInfo
from dlperf.report.provenance import ModelConfig, NodeEnv, model_configs, node_environments
from dlperf.report.special import Table as SpecialTable
from dlperf.report.special import special_tables
from dlperf.status import Status, sort_statuses
from dlperf.vocabulary import PRECISION_NAMES, PRECISIONS, display_name

log = logging.getLogger(__name__)

# shown with a footnote giving the runs' reasons (OOM speaks for itself, as in DLPerf's tables)
NOTED_STATUSES = (Status.FAILED, Status.TIMEOUT, Status.PARSE_ERROR, Status.SKIPPED)
ABSENT = "absent"  # no such cell: not planned for this column and layout


@dataclass(frozen=True)
class Column:
    """One column of a results table: a framework's cells from one source, at one setting."""

    framework: str
    source: str  # "measured" or a baseline's name
    label: str
    xla: bool = False
    variant: str = "default"
    batch_size: str = ""
    notes: tuple[int, ...] = ()  # footnotes on the whole column (a published remark, a fallback)


@dataclass(frozen=True)
class TableCell:
    cell_id: str
    status: str  # a cell status, or "absent"
    throughput: str  # formatted median ('' unless ok)
    speedup: str  # formatted speedup, "n/a" without a 1n1g baseline
    notes: tuple[int, ...]


@dataclass(frozen=True)
class Row:
    nodes: int
    devices: int
    layout: str
    cells: tuple[TableCell, ...]  # one per column


@dataclass(frozen=True)
class Detail:
    """The spread behind one table figure, and the newer figures where the table has them."""

    column: str
    layout: str
    cell_id: str
    status: str
    runs: str  # "ok/done/planned"
    median: str
    min_max: str
    cv: str
    ci: str
    ci_level: str
    speedup: str
    efficiency: str
    speedup_baseline_cell: str
    methods: tuple[str, ...]
    figures: tuple[str, ...] = ()  # one per key of Group.figure_keys
    flags: str = ""


@dataclass(frozen=True)
class Footnote:
    number: int
    kind: str  # "status": why no figure; "config": report.footnotes; "note": a table's remark;
    # "fallback": a smaller batch size shown because the table's ran out of memory
    status: str
    cell_ids: tuple[str, ...]
    text: str  # raw reason or configured text ('' when none was recorded)
    # kind "fallback": the table's batch size ran out of memory, this one is shown instead
    oom_batch: str = ""
    shown_batch: str = ""
    layouts: tuple[str, ...] = ()


@dataclass(frozen=True)
class PlotPoint:
    column: str
    devices: int
    throughput: float
    speedup: float  # nan without a baseline
    low: float = float("nan")  # min of the runs (nan: one run or none recorded)
    high: float = float("nan")  # max of the runs
    ceiling: float = float("nan")  # communication ceiling of the speedup (nan: not measured)


@dataclass(frozen=True)
class Group:
    """One results table: a model, precision and batch size; rows are layouts, columns are
    frameworks (with XLA, variant and a fallback batch size as DLPerf's tables show them)."""

    slug: str
    model: str
    model_name: str
    precision: str
    precision_name: str
    xla: bool
    batch_size: str
    variant: str
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]
    details: tuple[Detail, ...]
    footnotes: tuple[Footnote, ...]
    points: tuple[PlotPoint, ...]
    figure_keys: tuple[str, ...] = ()  # extra figure columns of the details (FIGURES keys)


@dataclass(frozen=True)
class RunEntry:
    cell_id: str
    repeat: str
    status: str
    throughput: str
    window: str  # "first-last" measured iterations
    p50_ms: str
    p95_ms: str
    traces: tuple[str, ...]  # "log:first-last" per rank
    manifest: str
    detail: str
    outlier: bool = False


@dataclass(frozen=True)
class FrameworkRow:
    framework: str
    display_name: str
    version: str
    launcher: str
    environment: str
    features: tuple[str, ...]
    models: tuple[tuple[str, str], ...]  # (model name, source)


@dataclass(frozen=True)
class Baseline:
    name: str
    path: str
    cells: int


@dataclass(frozen=True)
class Options:
    repeats: int
    warmup: int
    measure: int
    precisions: tuple[str, ...]
    batch_sizes: tuple[str, ...]
    layouts: tuple[str, ...]
    xla: tuple[bool, ...]
    variants: tuple[str, ...]
    backend: str
    device: str
    time_limit_min: str


@dataclass(frozen=True)
class Explained:
    """How the explaining figures were taken, as the measured tables state it (empty: not shown)."""

    flops_methods: tuple[str, ...] = ()
    peak_sources: tuple[str, ...] = ()
    memory: bool = False
    energy_details: tuple[str, ...] = ()
    ceiling_models: tuple[str, ...] = ()


def explained(cells: pd.DataFrame, runs: pd.DataFrame) -> Explained:
    def words(frame: pd.DataFrame, column: str) -> tuple[str, ...]:
        if column not in frame:
            return ()
        values = (str(v) for v in frame[column].dropna())
        return tuple(sorted({p.strip() for v in values for p in v.split(";") if p.strip()}))

    def has(frame: pd.DataFrame, column: str) -> bool:
        return column in frame and pd.to_numeric(frame[column], errors="coerce").notna().any()

    return Explained(
        flops_methods=words(runs, "flops_method") if has(cells, "mfu_pct") else (),
        peak_sources=words(cells, "peak_source") if has(cells, "mfu_pct") else (),
        memory=has(cells, "peak_mem_mib"),
        energy_details=words(cells, "energy_detail"),
        ceiling_models=words(cells, "ceiling_model") if has(cells, "speedup_ceiling") else (),
    )


@dataclass(frozen=True)
class Summary:
    cells: int
    runs: int
    runs_ok: int
    frameworks: tuple[str, ...]
    models: tuple[str, ...]
    statuses: tuple[tuple[str, int], ...]  # cell status -> count, worst first after ok
    methods: tuple[str, ...]
    # why runs did not succeed: (status, detail, runs), the most frequent first
    failures: tuple[tuple[str, str, int], ...] = ()


@dataclass(frozen=True)
class ReportData:
    title: str
    suite: str
    generated_at: str
    summary: Summary
    environment: tuple[NodeEnv, ...]
    frameworks: tuple[FrameworkRow, ...]
    baselines: tuple[Baseline, ...]
    options: Options | None
    model_configs: tuple[ModelConfig, ...]
    groups: tuple[Group, ...]
    runs: tuple[RunEntry, ...]
    headline: Headline = field(default_factory=Headline)
    caveats: tuple[Caveat, ...] = ()
    latency: tuple[LatencyTable, ...] = ()
    plan: PlanInfo | None = None
    explained: Explained = field(default_factory=Explained)
    special: tuple[SpecialTable, ...] = ()  # DLPerf's special cases (W&D, GPT), where measured


def framework_info(name: str) -> dict[str, Any] | None:
    """The adapter's describe() row, or None for a framework no adapter is registered for."""
    from dlperf.adapters import REGISTRY

    return REGISTRY[name]().describe() if name in REGISTRY else None


def framework_name(framework: str) -> str:
    info = framework_info(framework)
    return info["display_name"] if info else framework


def build_report(
    config: Mapping[str, Any],
    cells: pd.DataFrame,
    runs: pd.DataFrame,
    manifests: Mapping[str, RunRecord],
    generated_at: str,
    latency: Sequence[LatencyTable] = (),
    plan: PlanInfo | None = None,
) -> ReportData:
    """The whole report as data. `cells` holds measured and baseline cells (column `source`)."""
    order = _Order(config, cells)
    measured = cells[cells["source"] == MEASURED]
    footnotes = dict(config["report"]["footnotes"])
    several_sources = cells["source"].nunique() > 1
    groups = [
        _group(key, frame, runs, footnotes, order, several_sources)
        for key, frame in sorted(
            table_keys(cells).groupby(_GROUP_KEYS, sort=False), key=lambda kv: order.group(kv[0])
        )
    ]
    baselines = tuple(
        Baseline(b["name"], str(b["path"]), int((cells["source"] == b["name"]).sum()))
        for b in config["baselines"]
    )
    return ReportData(
        title=config["report"].get("title") or config["name"],
        suite=config["name"],
        generated_at=generated_at,
        summary=_summary(measured if len(measured) or not len(cells) else cells, runs, order),
        environment=tuple(node_environments(dict(manifests))),
        frameworks=tuple(_frameworks(cells, config, order)),
        baselines=baselines,
        options=_options(config) if config["cases"] else None,
        model_configs=tuple(model_configs(dict(manifests))),
        groups=tuple(groups),
        runs=tuple(_run_entries(runs)),
        headline=headline(groups, cells),
        caveats=tuple(caveats(cells, runs)),
        latency=tuple(latency),
        plan=plan,
        explained=explained(measured, runs),
        special=tuple(special_tables(cells, _special_label)),
    )


_GROUP_KEYS = ["model", "precision", "table_batch"]
_COLUMN_KEYS = ["source", "framework", "xla", "variant", "batch_size"]


class _Order:
    """Sort keys: frameworks and models in the order the config names them (else the tables')."""

    def __init__(self, config: Mapping[str, Any], cells: pd.DataFrame) -> None:
        cases = config["cases"]
        self.frameworks = list(
            dict.fromkeys([c["framework"] for c in cases] + list(cells["framework"]))
        )
        self.models = list(dict.fromkeys([c["model"] for c in cases] + list(cells["model"])))
        self.sources = list(
            dict.fromkeys(
                [MEASURED] + [b["name"] for b in config["baselines"]] + list(cells["source"])
            )
        )

    @staticmethod
    def _index(items: list[str], value: str) -> tuple[int, str]:
        return (items.index(value) if value in items else len(items), value)

    def framework(self, name: str) -> tuple[int, str]:
        return self._index(self.frameworks, name)

    def model(self, name: str) -> tuple[int, str]:
        return self._index(self.models, name)

    def group(self, key: tuple[Any, ...]) -> tuple[Any, ...]:
        model, precision, batch_size = key
        return (
            self.model(model),
            self._index(list(PRECISIONS), precision),
            batch_size_key(batch_size),
        )

    def column(self, key: tuple[Any, ...]) -> tuple[Any, ...]:
        source, framework, xla, variant, batch_size = key
        return (
            self._index(self.sources, source),
            self.framework(framework),
            variant != "default",
            variant,
            bool(xla),
            batch_size_key(batch_size),
        )


def batch_size_key(batch_size: str) -> tuple[int, int, str]:
    return (0, int(batch_size), "") if str(batch_size).isdigit() else (1, 0, str(batch_size))


def layout_key(layout: str) -> tuple[int, int, str]:
    parsed = Layout.parse(layout)
    return (parsed.devices, parsed.nodes, layout)


def table_keys(cells: pd.DataFrame) -> pd.DataFrame:
    """`cells` with `table_batch`: the batch size of the table each cell is shown in.

    A cell's own batch size, except a fallback: DLPerf shows NGC TensorFlow's bsz=224 in its
    bsz=256 table because 256 ran out of memory. A column's numeric batch b joins the table of its
    next larger batch B when every cell at B is OOM, B was tried at 1 device only, and b >= B/2
    (a step down, not a different setting).
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
        for index, row in frame.iterrows():
            b = str(row["batch_size"])
            if not b.isdigit() or int(b) in oom_sizes:
                continue
            larger = [size for size in oom_sizes if int(b) < size <= 2 * int(b)]
            if larger:
                cells.loc[index, "table_batch"] = str(min(larger))
    return cells


def _column_label(key: tuple[Any, ...], table_batch: str, resolved: str, several: bool) -> str:
    source, framework, xla, variant, batch_size = key
    label = framework_name(framework)
    if xla:
        label += " w/XLA"
    if variant != "default":
        label += f" {variant}"
    if batch_size != table_batch:
        label += f" bsz={batch_size}"
    elif resolved and resolved != batch_size:  # the batch behind `max`
        label += f" bsz={resolved}"
    if source != MEASURED and several:
        label += f" [{source}]"
    return label


def _special_label(row: dict[str, Any]) -> str:
    label = framework_name(row["framework"]) + (" w/XLA" if row["xla"] else "")
    return label if row["source"] == MEASURED else f"{label} [{row['source']}]"


def _resolved_batch(frame: pd.DataFrame) -> str:
    """The batch per device behind `max`, when the column's cells agree on one."""
    values = pd.to_numeric(frame.get("batch_size_resolved"), errors="coerce").dropna().unique()
    return fmt.integer(values[0]) if len(values) == 1 else ""


def _slug(model: str, precision: str, batch_size: str) -> str:
    cell = Cell("", model, precision, False, batch_size, Layout(1, 1), "default")
    return cell.group_id.replace(".noxla", "")


def _group(
    key: tuple[Any, ...],
    frame: pd.DataFrame,
    runs: pd.DataFrame,
    footnote_patterns: dict[str, str],
    order: _Order,
    several_sources: bool,
) -> Group:
    model, precision, table_batch = key
    by_column = {k: f for k, f in frame.groupby(_COLUMN_KEYS, sort=False)}
    keys = sorted(by_column, key=order.column)
    # a larger batch that ran out of memory is told in the footnotes of its fallback columns
    fallen = {(k[0], k[1], k[2], k[3]) for k in keys if str(k[4]) != str(table_batch)}
    keys = [k for k in keys if not (str(k[4]) == str(table_batch) and k[:4] in fallen)]
    notes = _Notes(runs, footnote_patterns)
    columns = []
    for k in keys:
        numbers = [notes.column_note(n) for n in _column_remarks(k, frame, str(table_batch))]
        label = _column_label(k, str(table_batch), _resolved_batch(by_column[k]), several_sources)
        columns.append(
            Column(
                framework=k[1],
                source=k[0],
                label=label,
                xla=bool(k[2]),
                variant=k[3],
                batch_size=str(k[4]),
                notes=tuple(numbers),
            )
        )
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
            details.append(_detail(column, record, extra))
            if record["status"] == "ok" and fmt.is_number(record["throughput_median"]):
                points.append(_point(column, record))
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


def _point(column: Column, record: dict[str, Any]) -> PlotPoint:
    def number(key: str) -> float:
        value = record.get(key)
        return float(value) if value is not None and fmt.is_number(value) else math.nan

    return PlotPoint(
        column.label,
        int(record["devices"]),
        float(record["throughput_median"]),
        number("speedup"),
        number("throughput_min"),
        number("throughput_max"),
        number("speedup_ceiling"),
    )


class _Notes:
    """Numbers the footnotes of one table in the order their cells appear (row by row)."""

    def __init__(self, runs: pd.DataFrame, patterns: dict[str, str]) -> None:
        self.runs = runs
        self.patterns = patterns
        self.notes: list[Footnote] = []
        self.by_pattern: dict[str, int] = {}
        self.pattern_cells: dict[str, list[str]] = {}

    def cell(self, record: dict[str, Any] | None) -> TableCell:
        if record is None:
            return TableCell("", ABSENT, "", "", ())
        status = record["status"] or "missing"
        numbers = []
        if status in NOTED_STATUSES:
            numbers.append(
                self._add(Footnote(0, "status", status, (record["cell_id"],), self._reason(record)))
            )
        for pattern, text in self.patterns.items():
            if fnmatch.fnmatchcase(record["cell_id"], pattern):
                if pattern not in self.by_pattern:
                    self.by_pattern[pattern] = self._add(Footnote(0, "config", "", (), text))
                    self.pattern_cells[pattern] = []
                self.pattern_cells[pattern].append(record["cell_id"])
                numbers.append(self.by_pattern[pattern])
        ok = status == "ok"
        return TableCell(
            cell_id=record["cell_id"],
            status=status,
            throughput=fmt.throughput(record["throughput_median"]) if ok else "",
            speedup=fmt.speedup(record["speedup"]) if ok else "",
            notes=tuple(numbers),
        )

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

    def _reason(self, record: dict[str, Any]) -> str:
        """Each distinct status detail of the cell's runs that did not succeed, with its repeats."""
        if record["source"] != MEASURED or not len(self.runs):
            return fmt.text(record.get("statuses"))
        runs = self.runs[
            (self.runs["cell_id"] == record["cell_id"]) & (self.runs["status"] != "ok")
        ]
        reasons: dict[str, list[str]] = {}
        for run in runs.sort_values("repeat").to_dict("records"):
            detail = fmt.text(run.get("status_detail")) or run["status"]
            reasons.setdefault(detail, []).append(f"r{fmt.integer(run['repeat'])}")
        return "; ".join(
            f"{', '.join(repeats)}: {fmt.shorten(d)}" for d, repeats in reasons.items()
        )

    def footnotes(self) -> tuple[Footnote, ...]:
        out = []
        for note in self.notes:
            if note.kind == "config":
                pattern = next(p for p, n in self.by_pattern.items() if n == note.number)
                note = dataclasses.replace(note, cell_ids=tuple(self.pattern_cells[pattern]))
            out.append(note)
        return tuple(out)


def _detail(column: Column, record: dict[str, Any], figures: tuple[str, ...]) -> Detail:
    counts = [record[k] for k in ("runs_ok", "runs_done", "runs_planned")]
    runs = "/".join(fmt.integer(c) for c in counts) if all(map(fmt.is_number, counts)) else "-"
    low, high = record["throughput_min"], record["throughput_max"]
    return Detail(
        column=column.label,
        layout=record["layout"],
        cell_id=record["cell_id"],
        status=record["status"] or "missing",
        runs=runs,
        median=fmt.throughput(record["throughput_median"]),
        min_max=f"{fmt.throughput(low)}-{fmt.throughput(high)}" if fmt.is_number(low) else fmt.NA,
        cv=fmt.percent(record["throughput_cv"]),
        ci=(
            f"{fmt.throughput(record['ci_low'])}-{fmt.throughput(record['ci_high'])}"
            if fmt.is_number(record["ci_low"])
            else fmt.NA
        ),
        ci_level=fmt.percent(record["ci_level"]),
        speedup=fmt.speedup(record["speedup"]),
        efficiency=fmt.percent(record["efficiency"]),
        speedup_baseline_cell=fmt.text(record["speedup_baseline_cell"]),
        methods=tuple(m for m in fmt.text(record["method"]).split(",") if m),
        figures=tuple(format_figure(key, record) for key in figures),
        flags=fmt.text(record.get("flags")),
    )


def _summary(measured: pd.DataFrame, runs: pd.DataFrame, order: _Order) -> Summary:
    counts = measured["status"].replace("", "missing").value_counts().to_dict()
    statuses = tuple((s, int(counts[s])) for s in sort_statuses(counts))
    methods = sorted({m for value in measured["method"] for m in fmt.text(value).split(",") if m})
    frameworks = sorted(set(measured["framework"]), key=order.framework)
    return Summary(
        cells=len(measured),
        runs=len(runs),
        runs_ok=int((runs["status"] == "ok").sum()) if len(runs) else 0,
        frameworks=tuple(dict.fromkeys(framework_name(f) for f in frameworks)),
        models=tuple(display_name(m) for m in sorted(set(measured["model"]), key=order.model)),
        statuses=statuses,
        methods=tuple(methods),
        failures=_failures(runs),
    )


def _failures(runs: pd.DataFrame, most: int = 5) -> tuple[tuple[str, str, int], ...]:
    if not len(runs):
        return ()
    failed = runs[runs["status"] != Status.OK]
    counts = failed.groupby(["status", "status_detail"]).size().sort_values(ascending=False)
    return tuple((str(s), str(d), int(n)) for (s, d), n in counts.head(most).items())


def _frameworks(
    cells: pd.DataFrame, config: Mapping[str, Any], order: _Order
) -> list[FrameworkRow]:
    models: dict[str, set[str]] = {}
    for case in config["cases"]:
        models.setdefault(case["framework"], set()).add(case["model"])
    measured = cells[cells["source"] == MEASURED] if config["cases"] else cells
    for framework, model in (
        measured[["framework", "model"]].drop_duplicates().itertuples(index=False)
    ):
        models.setdefault(framework, set()).add(model)
    rows = []
    for framework in sorted(models, key=order.framework):
        info = framework_info(framework)
        if info is None:
            log.warning(
                "framework %r has no registered adapter; left out of the frameworks table",
                framework,
            )
            continue
        rows.append(
            FrameworkRow(
                framework=framework,
                display_name=info["display_name"],
                version=info["version"],
                launcher=info["launcher"],
                environment=info["environment"],
                features=tuple(info["features"]),
                models=tuple(
                    (display_name(m), info["models"].get(m, ""))
                    for m in sorted(models[framework], key=order.model)
                ),
            )
        )
    return rows


def _options(config: Mapping[str, Any]) -> Options:
    """The suite's protocol as the report states it (a validated config: defaults filled)."""
    cases: Sequence[Mapping[str, Any]] = config["cases"]

    def union(key: str, sort: Callable[[Any], Any] | None = None) -> tuple[Any, ...]:
        values = list(dict.fromkeys(v for c in cases for v in c[key]))
        return tuple(sorted(values, key=sort) if sort else values)

    return Options(
        repeats=int(config["repeats"]),
        warmup=int(config["window"]["warmup"]),
        measure=int(config["window"]["measure"]),
        precisions=union("precision", lambda p: PRECISIONS.index(p) if p in PRECISIONS else 9),
        batch_sizes=tuple(str(b) for b in union("batch_size", lambda b: batch_size_key(str(b)))),
        layouts=union("layouts", layout_key),
        xla=union("xla", bool),
        variants=tuple(dict.fromkeys(c["variant"] for c in cases)),
        backend=str(config["backend"]),
        device=str(config["device"]),
        time_limit_min=fmt.text(config["time_limit_min"]),
    )


def _run_entries(runs: pd.DataFrame) -> list[RunEntry]:
    entries: list[RunEntry] = []
    if not len(runs):
        return entries
    ordered = runs.assign(_repeat=pd.to_numeric(runs["repeat"], errors="coerce"))
    for run in ordered.sort_values(["cell_id", "_repeat"]).to_dict("records"):
        first, last = run.get("window_first_step"), run.get("window_last_step")
        ok = run["status"] == "ok"
        entries.append(
            RunEntry(
                cell_id=run["cell_id"],
                repeat=fmt.integer(run["repeat"]),
                status=run["status"],
                throughput=fmt.throughput(run.get("throughput_samples_per_s")) if ok else "",
                window=f"{fmt.integer(first)}-{fmt.integer(last)}"
                if ok and fmt.is_number(first)
                else "",
                p50_ms=fmt.milliseconds(run.get("p50_ms")) if ok else "",
                p95_ms=fmt.milliseconds(run.get("p95_ms")) if ok else "",
                traces=tuple(fmt.text(run.get("trace")).split()),
                manifest=fmt.text(run.get("manifest")),
                detail=fmt.shorten(
                    fmt.text(run.get("status_detail")) or fmt.text(run.get("outlier_detail"))
                ),
                outlier=run.get("outlier") is True,
            )
        )
    return entries
