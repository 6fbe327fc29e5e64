"""The report as data (dlperf.report.model), built once from the tables, the manifests, the plan
and the suite's config; every language renders the same."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from dlperf.i18n import Phrase, Text
from dlperf.launch.record import RunRecord
from dlperf.measure.stats import CI_LEVEL
from dlperf.report import fmt
from dlperf.report.caveats import caveats, doubted
from dlperf.report.frameworks import framework_rows
from dlperf.report.groups import GroupBuilder
from dlperf.report.headline import headline
from dlperf.report.latency import LatencyTable
from dlperf.report.load import MEASURED
from dlperf.report.model import (
    Baseline,
    Explained,
    Options,
    ReportData,
    RunEntry,
    Summary,
)
from dlperf.report.names import framework_name, special_label
from dlperf.report.order import Order, batch_size_key, cell_id_key, layout_key, precision_key
from dlperf.report.planinfo import PlanInfo
from dlperf.report.provenance import model_configs, node_environments
from dlperf.report.reasons import Limits, run_detail, run_reason, with_outlier_z
from dlperf.report.special import special_tables
from dlperf.status import Status, sort_statuses
from dlperf.vocabulary import display_name

log = logging.getLogger(__name__)


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
    order = Order(config, cells)
    limits = Limits.from_config(config)
    runs = with_outlier_z(runs)
    measured = cells[cells["source"] == MEASURED]
    found = tuple(caveats(cells, runs, limits))
    builder = GroupBuilder(
        runs,
        dict(config["report"]["footnotes"]),
        order,
        several_sources=cells["source"].nunique() > 1,
        limits=limits,
        doubted=doubted(found),
    )
    groups = builder.groups(cells)
    baselines = tuple(
        Baseline(b["name"], str(b["path"]), int((cells["source"] == b["name"]).sum()))
        for b in config["baselines"]
    )
    summarised = measured if len(measured) or not len(cells) else cells
    return ReportData(
        title=config["report"].get("title") or config["name"],
        suite=config["name"],
        generated_at=generated_at,
        summary=_summary(summarised, runs, order, limits),
        environment=tuple(node_environments(dict(manifests))),
        frameworks=tuple(framework_rows(cells, config, order, manifests)),
        baselines=baselines,
        options=_options(config) if config["cases"] else None,
        model_configs=tuple(model_configs(dict(manifests))),
        groups=tuple(groups),
        runs=tuple(_run_entries(runs, limits)),
        headline=headline(groups, cells, doubted(found)),
        caveats=found,
        latency=tuple(latency),
        plan=plan,
        explained=explained(measured, runs),
        special=tuple(special_tables(cells, special_label, doubted(found))),
    )


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


def _summary(measured: pd.DataFrame, runs: pd.DataFrame, order: Order, limits: Limits) -> Summary:
    counts = measured["status"].replace("", Status.MISSING).value_counts().to_dict()
    statuses = tuple((s, int(counts[s])) for s in sort_statuses(counts))
    methods = sorted({m for value in measured["method"] for m in fmt.text(value).split(",") if m})
    frameworks = sorted(set(measured["framework"]), key=order.framework)
    return Summary(
        cells=len(measured),
        runs=len(runs),
        runs_ok=int((runs["status"] == Status.OK).sum()) if len(runs) else 0,
        frameworks=tuple(dict.fromkeys(framework_name(f) for f in frameworks)),
        models=tuple(display_name(m) for m in sorted(set(measured["model"]), key=order.model)),
        statuses=statuses,
        methods=tuple(methods),
        failures=_failures(runs, limits),
    )


def _failures(
    runs: pd.DataFrame, limits: Limits, most: int = 5
) -> tuple[tuple[str, Text, int], ...]:
    """Why runs did not succeed: (status, reason, runs), the most frequent first."""
    if not len(runs):
        return ()
    failed = runs[runs["status"] != Status.OK].sort_values(["status", "status_detail"])
    counts = Counter((str(r["status"]), run_reason(r, limits)) for r in failed.to_dict("records"))
    return tuple((status, reason, n) for (status, reason), n in counts.most_common(most))


def _options(config: Mapping[str, Any]) -> Options:
    """The suite's protocol as the report states it (a validated config: defaults filled)."""
    cases: Sequence[Mapping[str, Any]] = config["cases"]

    def union(key: str, sort: Callable[[Any], Any] | None = None) -> tuple[Any, ...]:
        values = list(dict.fromkeys(v for c in cases for v in c[key]))
        return tuple(sorted(values, key=sort) if sort else values)

    median, repeats_value = _repeats_said(int(config["repeats"]), config.get("adaptive_repeats"))
    return Options(
        warmup=int(config["window"]["warmup"]),
        measure=int(config["window"]["measure"]),
        precisions=union("precision", precision_key),
        batch_sizes=tuple(str(b) for b in union("batch_size", lambda b: batch_size_key(str(b)))),
        layouts=union("layouts", layout_key),
        xla=union("xla", bool),
        variants=tuple(dict.fromkeys(c["variant"] for c in cases)),
        backend=str(config["backend"]),
        device=str(config["device"]),
        time_limit_min=fmt.text(config["time_limit_min"]),
        median=median,
        repeats_value=repeats_value,
    )


def _repeats_said(repeats: int, adaptive: Mapping[str, Any] | None) -> tuple[Text, Text]:
    """The method's median sentence and the options table's repeats per cell: with adaptive
    repeats their rule, since a cell then has from `repeats` to their `max` runs."""
    if not adaptive:
        return Phrase.of("method.median", repeats=str(repeats)), str(repeats)
    values: dict[str, Text] = {
        "repeats": str(repeats),
        "max": str(adaptive["max"]),
        "level": f"{100 * float(adaptive.get('level', CI_LEVEL)):g}%",
        "width": f"{float(adaptive['ci_width_pct']):g}%",
    }
    return (
        Phrase.of("method.median_adaptive", **values),
        Phrase.of("options.repeats_adaptive", **values),
    )


def _run_entries(runs: pd.DataFrame, limits: Limits) -> list[RunEntry]:
    if not len(runs):
        return []
    ordered = runs.assign(
        _cell=runs["cell_id"].map(cell_id_key),
        _repeat=pd.to_numeric(runs["repeat"], errors="coerce"),
    )
    records = ordered.sort_values(["_cell", "_repeat"]).to_dict("records")
    return [_run_entry(run, limits) for run in records]


def _run_entry(run: dict[str, Any], limits: Limits) -> RunEntry:
    first, last = run.get("window_first_step"), run.get("window_last_step")
    ok = run["status"] == Status.OK
    return RunEntry(
        cell_id=run["cell_id"],
        repeat=fmt.integer(run["repeat"]),
        status=run["status"],
        throughput=fmt.throughput(run.get("throughput_samples_per_s")) if ok else "",
        window=f"{fmt.integer(first)}-{fmt.integer(last)}" if ok and fmt.is_number(first) else "",
        p50_ms=fmt.milliseconds(run.get("p50_ms")) if ok else "",
        p95_ms=fmt.milliseconds(run.get("p95_ms")) if ok else "",
        traces=tuple(fmt.text(run.get("trace")).split()),
        manifest=fmt.text(run.get("manifest")),
        detail=run_detail(run, limits),
        outlier=run.get("outlier") is True,
    )
