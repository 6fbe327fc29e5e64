"""The report's data model: built once from the tables and manifests, rendered in every language.

Everything here is data (numbers already formatted, ids, raw reasons); every word a reader sees
comes from the locale catalogs at render time, so the languages cannot drift apart.
"""

from __future__ import annotations

import fnmatch
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from dlperf.matrix import PRECISIONS, Cell, Layout
from dlperf.report import fmt
from dlperf.report.load import MEASURED
from dlperf.report.provenance import ModelConfig, NodeEnv, model_configs, node_environments
from dlperf.status import Status, sort_statuses

log = logging.getLogger(__name__)

MODEL_NAMES = {
    "resnet50": "ResNet-50 v1.5",
    "bert_base": "BERT-base",
    "wide_deep": "Wide & Deep",
    "insightface": "InsightFace",
    "gpt": "GPT",
}
PRECISION_NAMES = {"fp32": "FP32", "amp": "AMP"}
# shown with a footnote giving the runs' reasons (OOM speaks for itself, as in DLPerf's tables)
NOTED_STATUSES = (Status.FAILED, Status.TIMEOUT, Status.PARSE_ERROR, Status.SKIPPED)
ABSENT = "absent"  # no such cell: not planned for this column and layout


@dataclass(frozen=True)
class Column:
    framework: str
    source: str  # "measured" or a baseline's name
    label: str


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
    """The spread behind one table figure."""

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


@dataclass(frozen=True)
class Footnote:
    number: int
    kind: str  # "status": why a cell has no figure; "config": from report.footnotes
    status: str
    cell_ids: tuple[str, ...]
    text: str  # raw reason or configured text ('' when none was recorded)


@dataclass(frozen=True)
class PlotPoint:
    column: str
    devices: int
    throughput: float
    speedup: float  # nan without a baseline


@dataclass(frozen=True)
class Group:
    """One results table: a model, precision, xla, batch size and variant; rows are layouts."""

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
    options: Options
    model_configs: tuple[ModelConfig, ...]
    groups: tuple[Group, ...]
    runs: tuple[RunEntry, ...]


def framework_info(name: str) -> dict[str, Any] | None:
    """The adapter's describe() row, or None for a framework no adapter is registered for."""
    from dlperf.adapters import REGISTRY

    return REGISTRY[name]().describe() if name in REGISTRY else None


def model_name(model: str) -> str:
    return MODEL_NAMES.get(model, model)


def framework_name(framework: str) -> str:
    info = framework_info(framework)
    return info["display_name"] if info else framework


def build_report(
    config: Mapping[str, Any],
    cells: pd.DataFrame,
    runs: pd.DataFrame,
    manifests: Mapping[str, dict[str, Any]],
    generated_at: str,
) -> ReportData:
    """The whole report as data. `cells` holds measured and baseline cells (column `source`)."""
    order = _Order(config)
    measured = cells[cells["source"] == MEASURED]
    labels = _column_labels(cells, config)
    footnotes = dict(config["report"]["footnotes"])
    groups = [
        _group(key, frame, runs, labels, footnotes, order)
        for key, frame in sorted(
            cells.groupby(_GROUP_KEYS, sort=False), key=lambda kv: order.group(kv[0])
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
        summary=_summary(measured, runs, order),
        environment=tuple(node_environments(dict(manifests))),
        frameworks=tuple(_frameworks(measured, config, order)),
        baselines=baselines,
        options=_options(config),
        model_configs=tuple(model_configs(dict(manifests))),
        groups=tuple(groups),
        runs=tuple(_run_entries(runs)),
    )


_GROUP_KEYS = ["model", "precision", "xla", "batch_size", "variant"]


class _Order:
    """Sort keys: frameworks and models in the order the config names them."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        cases = config["cases"]
        self.frameworks = list(dict.fromkeys(c["framework"] for c in cases))
        self.models = list(dict.fromkeys(c["model"] for c in cases))
        self.sources = [MEASURED] + [b["name"] for b in config["baselines"]]

    @staticmethod
    def _index(items: list[str], value: str) -> tuple[int, str]:
        return (items.index(value) if value in items else len(items), value)

    def framework(self, name: str) -> tuple[int, str]:
        return self._index(self.frameworks, name)

    def model(self, name: str) -> tuple[int, str]:
        return self._index(self.models, name)

    def group(self, key: tuple[Any, ...]) -> tuple[Any, ...]:
        model, precision, xla, batch_size, variant = key
        return (
            self.model(model),
            self._index(list(PRECISIONS), precision),
            bool(xla),
            batch_size_key(batch_size),
            variant != "default",
            variant,
        )

    def column(self, source: str, framework: str) -> tuple[Any, ...]:
        return (self._index(self.sources, source), self.framework(framework))


def batch_size_key(batch_size: str) -> tuple[int, int, str]:
    return (0, int(batch_size), "") if str(batch_size).isdigit() else (1, 0, str(batch_size))


def layout_key(layout: str) -> tuple[int, int, str]:
    parsed = Layout.parse(layout)
    return (parsed.devices, parsed.nodes, layout)


def _column_labels(cells: pd.DataFrame, config: Mapping[str, Any]) -> dict[tuple[str, str], str]:
    labels = {}
    for source, framework in (
        cells[["source", "framework"]].drop_duplicates().itertuples(index=False)
    ):
        name = framework_name(framework)
        labels[(source, framework)] = name if source == MEASURED else f"{name} [{source}]"
    return labels


def _slug(model: str, precision: str, xla: bool, batch_size: str, variant: str) -> str:
    cell = Cell("", model, precision, xla, batch_size, Layout(1, 1), variant or "default")
    return cell.group_id


def _group(
    key: tuple[Any, ...],
    frame: pd.DataFrame,
    runs: pd.DataFrame,
    labels: dict[tuple[str, str], str],
    footnote_patterns: dict[str, str],
    order: _Order,
) -> Group:
    model, precision, xla, batch_size, variant = key
    pairs = sorted(
        {(r.source, r.framework) for r in frame.itertuples()}, key=lambda p: order.column(*p)
    )
    columns = tuple(Column(framework=f, source=s, label=labels[(s, f)]) for s, f in pairs)
    by_key = {(r["source"], r["framework"], r["layout"]): r for r in frame.to_dict("records")}
    layouts = sorted(set(frame["layout"]), key=layout_key)
    notes = _Notes(runs, footnote_patterns)
    rows = []
    for layout in layouts:
        parsed = Layout.parse(layout)
        cells = tuple(notes.cell(by_key.get((c.source, c.framework, layout))) for c in columns)
        rows.append(Row(parsed.nodes, parsed.devices, layout, cells))
    details, points = [], []
    for column in columns:
        for layout in layouts:
            record = by_key.get((column.source, column.framework, layout))
            if record is None:
                continue
            details.append(_detail(column, record))
            if record["status"] == "ok" and fmt.is_number(record["throughput_median"]):
                points.append(
                    PlotPoint(
                        column.label,
                        int(record["devices"]),
                        float(record["throughput_median"]),
                        float(record["speedup"]),
                    )
                )
    return Group(
        slug=_slug(model, precision, bool(xla), str(batch_size), variant),
        model=model,
        model_name=model_name(model),
        precision=precision,
        precision_name=PRECISION_NAMES.get(precision, precision),
        xla=bool(xla),
        batch_size=str(batch_size),
        variant=variant,
        columns=columns,
        rows=tuple(rows),
        details=tuple(details),
        footnotes=notes.footnotes(),
        points=tuple(points),
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
        self.notes.append(Footnote(number, note.kind, note.status, note.cell_ids, note.text))
        return number

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
                note = Footnote(
                    note.number, note.kind, "", tuple(self.pattern_cells[pattern]), note.text
                )
            out.append(note)
        return tuple(out)


def _detail(column: Column, record: dict[str, Any]) -> Detail:
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
        frameworks=tuple(framework_name(f) for f in frameworks),
        models=tuple(model_name(m) for m in sorted(set(measured["model"]), key=order.model)),
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
    measured: pd.DataFrame, config: Mapping[str, Any], order: _Order
) -> list[FrameworkRow]:
    models: dict[str, set[str]] = {}
    for case in config["cases"]:
        models.setdefault(case["framework"], set()).add(case["model"])
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
                    (model_name(m), info["models"].get(m, ""))
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
                detail=fmt.shorten(fmt.text(run.get("status_detail"))),
            )
        )
    return entries
