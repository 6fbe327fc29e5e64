"""From raw manifests and logs to the tidy tables: steps, runs and cells."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import pandas as pd

from dlperf import SCHEMA_VERSION
from dlperf.adapters.base import Launcher
from dlperf.launch.record import RunRecord
from dlperf.matrix import Cell, CellSpec
from dlperf.measure.efficiency import (
    CELL_FIGURE_COLUMNS,
    RUN_FIGURE_COLUMNS,
    add_ceiling,
    run_figures,
)
from dlperf.measure.efficiency import cell_figures as explaining_figures
from dlperf.measure.stats import (
    RunThroughput,
    Window,
    percentiles,
    run_throughput,
    speedup,
    spread,
    window_records,
)
from dlperf.measure.variance import (
    DEFAULT_VARIANCE,
    VarianceSettings,
    cell_flags,
    outlier_details,
    outlier_scores,
)
from dlperf.parse.checks import check_every_rank_reported, check_window_within_wall_time
from dlperf.parse.facts import parse_facts
from dlperf.parse.records import ParseError, ParseResult, StepRecord
from dlperf.paths import RunPaths
from dlperf.status import Status, cell_status
from dlperf.util import atomic_path, atomic_write_json

CELL_COLUMNS = [
    "cell_id",
    "framework",
    "model",
    "precision",
    "xla",
    "batch_size",
    "variant",
    "layout",
    "nodes",
    "gpus_per_node",
    "devices",
]
RUN_COLUMNS = CELL_COLUMNS + [
    "batch_size_resolved",  # per device: the number, or what `max` was found to be
    "options_resolved",  # JSON: what a swept option's `max` was found to be ("" if none)
    "repeat",
    "status",
    "status_detail",
    "outlier",  # kept in the cell's median, flagged (dlperf.measure.variance)
    "outlier_detail",
    "outlier_z",  # robust z among the cell's ok runs: what an outlier is stated by
    "throughput_samples_per_s",
    "method",
    "window_first_step",
    "window_last_step",
    "window_samples",
    "window_time_s",
    "ranks",
    "cores_per_rank",  # a CPU run's cores per rank (dlperf.launch.record); empty on a GPU
    "trace",
    "p50_ms",
    "p75_ms",
    "p90_ms",
    "p95_ms",
    *RUN_FIGURE_COLUMNS,  # MFU, memory, energy, busbw (dlperf.measure.efficiency)
    "job_id",
    "hosts",
    "submitted_at",
    "started_at",
    "ended_at",
    "noticed_at",
    "workload_wall_s",
    "harness_overhead_s",
    "manifest",
    "source",
    "schema_version",
]
CELL_TABLE_COLUMNS = CELL_COLUMNS + [
    "setting",  # the cell's swept option values, as JSON ("" when its case sweeps none)
    "batch_size_resolved",
    "cores_per_rank",  # on a CPU: its runs' cores per rank (the smallest, should they differ)
    "status",
    "runs_planned",
    "runs_done",
    "runs_ok",
    "statuses",
    "throughput_median",
    "throughput_min",
    "throughput_max",
    "throughput_cv",
    "unstable",  # CV above variance.max_cv_pct
    "outlier_runs",  # ok runs flagged as outliers; they stay in the median
    "flags",  # plain text: why the cell is unstable, which runs are outliers
    "ci_low",
    "ci_high",
    "ci_level",
    "speedup",
    "efficiency",
    "speedup_baseline_cell",
    *CELL_FIGURE_COLUMNS,  # medians of the runs' (dlperf.measure.efficiency), the speedup's ceiling
    "method",
    "window",
    "source",
    "schema_version",
]
STEP_COLUMNS = [
    "cell_id",
    "repeat",
    "rank",
    "step",
    "steps",
    "samples",
    "time_s",
    "start_s",
    "duration_s",
    "rate",
    "path",
    "line",
]


@dataclass
class RunRow:
    record: RunRecord | None  # None: the manifest could not be read (the row says why)
    row: dict[str, Any]
    records: list[StepRecord]
    result: RunThroughput | None


def read_run(
    manifest_path: Path, window: Window, expected_measures: Mapping[str, str] | None = None
) -> RunRow:
    """One run's row: the record's status, refined by parsing its logs when the run finished.

    Nothing about one run stops the tables: an unreadable manifest or log is that run's
    parse_error, naming the file (and line) at fault. With `expected_measures` (cell id -> the
    suite's measure digest), a run that measured other parameters is `stale`, never a figure.
    """
    try:
        record = RunRecord.read(manifest_path)
    except ParseError as err:
        return RunRow(None, _unreadable_row(manifest_path, str(err)), [], None)
    row: dict[str, Any] = dict(record.cell) | {
        "batch_size_resolved": record.trained_batch_size,
        "options_resolved": _setting(record.options_resolved),
        "cores_per_rank": record.cores_per_rank,
        "repeat": record.repeat,
        "status": record.status,
        "status_detail": record.status_detail,
        "job_id": record.job_id,
        "hosts": ",".join(record.hosts),
        "submitted_at": record.submitted_at,
        "started_at": record.started_at,
        "ended_at": record.ended_at,
        "noticed_at": record.noticed_at,
        "workload_wall_s": record.workload_wall_s,
        "manifest": str(manifest_path),
        "source": "measured",
        "schema_version": SCHEMA_VERSION,
    }
    if row["workload_wall_s"] and row["noticed_at"] and row["submitted_at"]:
        row["harness_overhead_s"] = row["noticed_at"] - row["submitted_at"] - row["workload_wall_s"]
    stale = record.stale_against((expected_measures or {}).get(record.cell_id))
    if stale:
        row |= {"status": Status.STALE, "status_detail": stale}
        return RunRow(record, row, [], None)
    records: list[StepRecord] = []
    result = None
    if record.status == Status.OK:
        adapter = record.adapter_impl
        per_node = adapter.launcher is Launcher.PER_NODE
        logs = record.logs
        try:
            record.check_logs_exist()
            cell = record.trained_cell
            parsed = adapter.parse(logs, cell, record.options, window.warmup + window.measure)
            check_every_rank_reported(parsed, logs, per_node, ranks=record.ranks)
            record.check_logs_unchanged()
            records = parsed.records
            result = run_throughput(parsed, window)
            check_window_within_wall_time(result, record.workload_wall_s, logs)
            formula = adapter.flops_formula(cell, record.options)
            figures = run_figures(
                parse_facts(logs), result, records, window, cell.layout.devices, formula
            )
            figures["reported_tflops_per_device"] = _reported(parsed, window, "tflops_per_device")
        except (ParseError, OSError) as err:
            row |= {"status": Status.PARSE_ERROR, "status_detail": str(err)}
            records, result = [], None  # nothing of a run that failed a check is a measurement
        else:
            row |= result.figures()
            row |= percentiles(result.step_time_ms)
            row["ranks"] = result.ranks if not per_node else len(logs)
            row |= figures
    return RunRow(record, row, records, result)


def _reported(parsed: ParseResult, window: Window, name: str) -> float:
    """A figure the source printed over the window (the global records, else the first rank's),
    kept beside dlperf's own; nan where it printed none."""
    ranks = parsed.by_rank()
    records = ranks.get(-1) or next(iter(ranks.values()), [])
    value = parsed.reported_over(name, window_records(records, window)[0])
    return math.nan if value is None else value


def _unreadable_row(manifest_path: Path, detail: str) -> dict[str, Any]:
    """The row of a run whose manifest cannot be read: its cell and repeat from the path."""
    run = RunPaths.of_manifest(manifest_path)
    key = Cell.parse(run.cell_id).key()
    return key | {
        "batch_size_resolved": int(key["batch_size"]) if key["batch_size"].isdigit() else None,
        "repeat": run.repeat,
        "status": Status.PARSE_ERROR,
        "status_detail": detail,
        "manifest": str(manifest_path),
        "source": "measured",
        "schema_version": SCHEMA_VERSION,
    }


def runs_table(
    manifests: Iterable[Path],
    window: Window,
    json_root: Path | None = None,
    variance: VarianceSettings = DEFAULT_VARIANCE,
    expected_measures: Mapping[str, str] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(runs, steps) tables; with json_root, also one DDP-benchmark-style JSON per run.
    Outlier runs are flagged (``outlier``, ``outlier_detail``) and kept; runs of other
    parameters than `expected_measures` (cell id -> measure digest) are `stale`."""
    rows, step_rows = [], []
    for path in manifests:
        run = read_run(Path(path), window, expected_measures)
        rows.append(run.row)
        key = (run.row["cell_id"], run.row["repeat"])
        step_rows += [key + tuple(vars(r).values()) for r in run.records]
        if json_root is not None:
            _write_run_json(json_root, run, window)
    runs = pd.DataFrame(rows).reindex(columns=RUN_COLUMNS)
    runs["batch_size_resolved"] = runs["batch_size_resolved"].astype("Int64")
    if len(runs):
        runs[["outlier", "outlier_detail"]] = outlier_details(runs, variance.outlier_mads)
        runs["outlier_z"] = outlier_scores(runs)
    record_fields = [f.name for f in fields(StepRecord)]
    steps = pd.DataFrame(step_rows, columns=["cell_id", "repeat", *record_fields])
    return runs, steps.reindex(columns=STEP_COLUMNS)


def _write_run_json(root: Path, run: RunRow, window: Window) -> None:
    """Per-run JSON as the PyTorch DDP benchmark writes it: facts, raw step times, percentiles."""
    record, row = run.record, run.row
    if record is None:  # an unreadable manifest: its row says why, there is nothing else to write
        return
    data = {
        "schema_version": SCHEMA_VERSION,
        "cell": record.cell,
        "repeat": row["repeat"],
        "status": row["status"],
        "status_detail": row["status_detail"],
        "backend": record.backend,
        "layout": record.cell["layout"],
        "world_size": record.cell["devices"],
        "nodes": record.nodes,
        "window": {"warmup": window.warmup, "measure": window.measure},
        "method": row.get("method"),
        "trace": row.get("trace"),
        "throughput_samples_per_s": _finite(row.get("throughput_samples_per_s")),
        "step_time_ms": run.result.step_time_ms if run.result else [],
        # two definitions, named: the slowest rank's steps (the runs table's p50_ms...), and
        # every rank's steps pooled, as the PyTorch DDP benchmark computes them
        "percentiles_ms": {k: row.get(k) for k in ("p50_ms", "p75_ms", "p90_ms", "p95_ms")}
        if run.result
        else {},
        "percentiles_of": "the steps of the rank with the slowest window",
        "percentiles_ms_pooled_ranks": percentiles(run.result.pooled_step_time_ms)
        if run.result
        else {},
    }
    atomic_write_json(root / row["cell_id"] / f"r{row['repeat']}.json", data, indent=None)


def _finite(value: Any) -> Any:
    return value if isinstance(value, int | float) and math.isfinite(value) else None


def cell_figures(
    group: pd.DataFrame, runs_planned: int, variance: VarianceSettings = DEFAULT_VARIANCE
) -> dict[str, Any]:
    """A cell's status, median and spread from its runs' rows (ok runs only give figures), and
    its variance flags (dlperf.measure.variance: outliers are flagged and stay in the median)."""
    ok_runs = group[group["status"] == Status.OK]
    ok = ok_runs["throughput_samples_per_s"].astype(float).tolist()
    s = spread(ok)
    flags = cell_flags(group, variance)
    batch, batch_note = _cell_batch_size(group)
    if batch_note:
        flags["flags"] = "; ".join(filter(None, [flags["flags"], batch_note]))
    statuses = group["status"].value_counts().to_dict()
    methods = sorted({m for m in group.get("method", pd.Series(dtype=str)).dropna() if m})
    cores = pd.to_numeric(group.get("cores_per_rank", pd.Series(dtype=float)), errors="coerce")
    return {
        "batch_size_resolved": batch,
        "cores_per_rank": cores.min() if cores.notna().any() else math.nan,
        "status": str(cell_status(statuses)),
        "runs_planned": runs_planned,
        "runs_done": len(group),
        "runs_ok": len(ok),
        "statuses": ",".join(f"{k}:{v}" for k, v in sorted(statuses.items())),
        "throughput_median": s.median,
        "throughput_min": s.minimum,
        "throughput_max": s.maximum,
        "throughput_cv": s.cv,
        **flags,
        "ci_low": s.ci_low,
        "ci_high": s.ci_high,
        "ci_level": s.ci_level,
        **explaining_figures(ok_runs),
        "method": ",".join(methods),
    }


def _cell_batch_size(group: pd.DataFrame) -> tuple[Any, str]:
    """The batch size the cell's runs trained with, and a note when they disagree."""
    if "batch_size_resolved" not in group.columns:
        return None, ""
    values = pd.to_numeric(group["batch_size_resolved"], errors="coerce").dropna().astype(int)
    if values.empty:
        return None, ""
    counts = values.value_counts()
    chosen = int(counts.sort_index().idxmax())  # the most common; on a tie, the smallest
    note = ""
    if len(counts) > 1:
        note = f"runs trained with batch sizes {', '.join(map(str, sorted(counts.index)))}"
    return chosen, note


def cells_table(
    runs: pd.DataFrame,
    planned: pd.DataFrame,
    window: Window,
    repeats: int | Mapping[str, int],
    variance: VarianceSettings = DEFAULT_VARIANCE,
) -> pd.DataFrame:
    """One row per planned cell: median and spread of its ok runs, speedup vs its 1n1g cell.
    `repeats`: the runs planned per cell, or per cell id (adaptive repeats)."""
    rows = []
    by_cell = {cid: group for cid, group in runs.groupby("cell_id")} if len(runs) else {}
    for cell in planned.to_dict("records"):
        group = by_cell.get(cell["cell_id"], runs.iloc[0:0])
        planned_runs = repeats if isinstance(repeats, int) else repeats[cell["cell_id"]]
        figures = cell_figures(group, planned_runs, variance)
        if figures["batch_size_resolved"] is None and str(cell["batch_size"]).isdigit():
            figures["batch_size_resolved"] = int(cell["batch_size"])
        rows.append(
            cell
            | {"setting": _resolved_setting(cell.get("setting"), group)}
            | figures
            | {
                "window": f"skip {window.warmup}, measure {window.measure}",
                "source": "measured",
                "schema_version": SCHEMA_VERSION,
            }
        )
    cells = pd.DataFrame(
        rows,
        columns=[
            c
            for c in CELL_TABLE_COLUMNS
            if c not in ("speedup", "efficiency", "speedup_baseline_cell")
        ],
    )
    cells = add_ceiling(add_speedup(cells), runs)
    cells["batch_size_resolved"] = cells["batch_size_resolved"].astype("Int64")
    return cells


def baseline_id(row: dict[str, Any]) -> str:
    return Cell.parse(row["cell_id"]).baseline.id


def add_speedup(cells: pd.DataFrame) -> pd.DataFrame:
    """Speedup against the same cell at 1n1g from the same source; n/a (nan) without one."""
    cells = cells.copy()
    medians = {
        (r["cell_id"], r["source"]): r["throughput_median"] for r in cells.to_dict("records")
    }
    speedups, baselines = [], []
    for row in cells.to_dict("records"):
        base_id = baseline_id(row)
        base = medians.get((base_id, row["source"]))
        value = speedup(row["throughput_median"], base) if row["status"] == Status.OK else math.nan
        speedups.append(value)
        baselines.append(base_id if math.isfinite(value) else "")
    cells["speedup"] = speedups
    cells["efficiency"] = cells["speedup"] / cells["devices"]
    cells["speedup_baseline_cell"] = baselines
    return cells.reindex(columns=CELL_TABLE_COLUMNS)


def planned_cells(specs: Iterable[CellSpec]) -> pd.DataFrame:
    rows = [spec.cell.key() | {"setting": _setting(spec.swept)} for spec in specs]
    return pd.DataFrame(rows).reindex(columns=[*CELL_COLUMNS, "setting"])


def _resolved_setting(planned: Any, runs: pd.DataFrame) -> str:
    """A cell's swept values with a `max` replaced by what its ok runs trained with (the value
    its search found; it stays `max` while no run has trained)."""
    if (
        not isinstance(planned, str)
        or "max" not in (json.loads(planned) if planned else {}).values()
    ):
        return planned if isinstance(planned, str) else ""
    ok = runs[runs["status"] == Status.OK] if "options_resolved" in runs else runs.iloc[0:0]
    found = [json.loads(v) for v in ok.get("options_resolved", []) if isinstance(v, str) and v]
    return _setting(json.loads(planned) | found[0]) if found else planned


def _setting(swept: Mapping[str, Any]) -> str:
    return json.dumps(swept, sort_keys=True) if swept else ""


def write_table(frame: pd.DataFrame, path: Path) -> None:
    """Every number as Python writes it (the shortest text that reads back the same value): a
    rounded epoch time would turn a run's duration into 0."""
    with atomic_path(path) as tmp:
        frame.to_csv(
            tmp,
            sep="\t",
            index=False,
            # the fastest gzip level: the steps table is written on every aggregation, and level
            # 9 took a third of its time for a file a third smaller
            compression={"method": "gzip", "compresslevel": 1}
            if path.name.endswith(".gz")
            else None,
        )
