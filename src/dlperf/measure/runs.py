"""From a run's manifest and logs to its row, its step records and its per-run JSON: the runs and
steps tables."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, fields
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from dlperf import SCHEMA_VERSION
from dlperf.i18n import Phrase, english
from dlperf.launch.record import RunRecord
from dlperf.launch.taskoutcome import check_logs_exist, check_logs_unchanged
from dlperf.matrix import Cell
from dlperf.measure.efficiency import RUN_FIGURE_COLUMNS, run_figures
from dlperf.measure.stats import RunThroughput, Window, percentiles, run_throughput, window_records
from dlperf.measure.tables import CELL_COLUMNS, setting_text
from dlperf.measure.variance import (
    DEFAULT_VARIANCE,
    VarianceSettings,
    outlier_details,
    outlier_scores,
)
from dlperf.parse.builtin import LOSS
from dlperf.parse.checks import (
    check_every_rank_reported,
    check_steps_within_tasks,
    check_window_within_wall_time,
)
from dlperf.parse.facts import parse_facts
from dlperf.parse.records import ParseError, ParseResult, StepRecord
from dlperf.paths import MaxBatchPaths, RunPaths, run_json
from dlperf.plan.maxbatch import (
    BATCH,
    READ_ERRORS,
    read_result,
    recorded_other_value,
    searched_in,
)
from dlperf.status import Status
from dlperf.util import atomic_write_json

RUN_COLUMNS = CELL_COLUMNS + [
    "batch_size_resolved",  # per device: the number, or what `max` was found to be
    "options_resolved",  # JSON: what a swept option's `max` was found to be ("" if none)
    "setting",  # JSON: the cell's swept option values as planned (its `max` unresolved)
    "search_ceiling",  # a `max` run's value where it is its search's ceiling (a lower bound)
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
    "hardware",  # its nodes' GPUs, or CPU model (dlperf.launch.record.RunRecord.hardware)
    "trace",
    "p50_ms",
    "p75_ms",
    "p90_ms",
    "p95_ms",
    "longest_step_ms",  # the slowest rank's longest window step: a stall (measure.variance)
    "nonfinite_loss_steps",  # window steps whose loss was nan or inf on any rank, once each
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
        return _run_row(record, manifest_path, window, expected_measures)
    except ParseError as err:
        return RunRow(None, _unreadable_row(manifest_path, str(err)), [], None)
    except (KeyError, TypeError, ValueError) as err:  # a value no check foresaw: still one run's
        detail = f"{manifest_path}: the manifest holds a value dlperf cannot read ({err!r})"
        return RunRow(None, _unreadable_row(manifest_path, detail), [], None)


def _run_row(
    record: RunRecord,
    manifest_path: Path,
    window: Window,
    expected_measures: Mapping[str, str] | None,
) -> RunRow:
    row: dict[str, Any] = record.planned_cell.key() | {
        "batch_size_resolved": record.trained_batch_size,
        "options_resolved": setting_text(record.options_resolved),
        "cores_per_rank": record.cores_per_rank,
        "hardware": record.hardware,
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
    other_value, row["search_ceiling"] = _against_search(record, manifest_path)
    stale = record.stale_against((expected_measures or {}).get(record.cell_id)) or other_value
    if stale:
        row |= {"status": Status.STALE, "status_detail": stale}
        return RunRow(record, row, [], None)
    records: list[StepRecord] = []
    result = None
    if record.status == Status.OK:
        adapter, per_node = record.adapter_impl, record.per_node
        logs = record.logs
        try:
            record.check_tasks_are_the_layouts()
            check_logs_exist(logs)
            cell = record.trained_cell
            parsed = adapter.parse(logs, cell, record.options, window.warmup + window.measure)
            check_every_rank_reported(parsed, logs, per_node, ranks=record.ranks)
            check_logs_unchanged(record.task_outcomes, logs)
            if adapter.epoch_step_stamps:
                check_steps_within_tasks(parsed, logs, record.task_outcomes)
            records = parsed.records
            result = run_throughput(parsed, window)
            check_window_within_wall_time(result, record.workload_wall_s, logs)
            formula = adapter.flops_formula(cell, record.options)
            figures = run_figures(
                parse_facts(logs), result, records, window, cell.layout.devices, formula,
                record.hardware,
            )  # fmt: skip
            figures["reported_tflops_per_device"] = _reported(parsed, window, "tflops_per_device")
            figures["nonfinite_loss_steps"] = _nonfinite_losses(parsed, window)
            tokens = adapter.tokens_per_sample(cell, record.options)
            figures["tokens_per_sample"] = float("nan") if tokens is None else tokens
        except (ParseError, OSError) as err:
            row |= {"status": Status.PARSE_ERROR, "status_detail": str(err)}
            records, result = [], None  # nothing of a run that failed a check is a measurement
        else:
            row |= result.figures()
            row |= percentiles(result.step_time_ms)
            row["longest_step_ms"] = max(result.step_time_ms, default=math.nan)
            row["ranks"] = result.ranks if not per_node else len(logs)
            row |= figures
    return RunRow(record, row, records, result)


def _against_search(record: RunRecord, manifest_path: Path) -> tuple[str, float]:
    """A `max` cell's run against its search's result now: why it is not the cell's figure
    ('' where it is), and the value where it is the search's ceiling (nan otherwise). A run
    trained at another value than the result holds (a result changed after the run) is redone,
    and until then its figure must not pool with runs at the new value."""
    option = searched_in(record.planned_cell, record.measured_options)
    if option is None:
        return "", math.nan
    result = MaxBatchPaths(record.cell_id, RunPaths.of_manifest(manifest_path).root).result
    try:
        found = read_result(result, record.cell_id)
    except READ_ERRORS:
        return "", math.nan  # not searched, or untrusted: the search is redone
    value = found.value
    if not recorded_other_value(manifest_path, option, value):
        return "", float(value) if found.at_ceiling and value is not None else math.nan
    trained = record.trained_batch_size if option == BATCH else record.options_resolved.get(option)
    detail = Phrase.of(
        "detail.stale_value", option=option, trained=str(trained), value=str(value),
        result=str(result),
    )  # fmt: skip
    return english(detail), math.nan


def _reported(parsed: ParseResult, window: Window, name: str) -> float:
    """A figure the source printed over the window (the global records, else the first rank's),
    kept beside dlperf's own; nan where it printed none."""
    ranks = parsed.by_rank()
    records = ranks.get(-1) or next(iter(ranks.values()), [])
    value = parsed.reported_over(name, window_records(records, window)[0])
    return math.nan if value is None else value


def _nonfinite_losses(parsed: ParseResult, window: Window) -> float:
    """The window steps whose logged loss is nan or inf on any rank (a diverged run, or fp16
    steps the grad scaler skipped: its figure times steps that did not train), each counted once
    however many of its ranks logged one (the k-th window record of every rank is the same step);
    nan where no loss was logged."""
    hit = [
        parsed.nonfinite_at(LOSS, window_records(records, window)[0])
        for records in parsed.by_rank().values()
    ]
    known = [positions for positions in hit if positions is not None]
    return float(len(set().union(*known))) if known else math.nan


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
    workers: int = 1,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(runs, steps) tables; with json_root, also one DDP-benchmark-style JSON per run.
    Outlier runs are flagged (``outlier``, ``outlier_detail``) and kept; runs of other
    parameters than `expected_measures` (cell id -> measure digest) are `stale`. With `workers`
    above 1 the runs are read by that many processes (each run is read on its own), their rows
    kept in the order of `manifests`."""
    paths = [Path(p) for p in manifests]
    read = partial(
        _read_runs, window=window, json_root=json_root, expected_measures=expected_measures
    )
    chunks = [paths[i : i + RUNS_PER_CHUNK] for i in range(0, len(paths), RUNS_PER_CHUNK)]
    if workers > 1 and len(chunks) > 1:
        with ProcessPoolExecutor(min(workers, len(chunks))) as pool:
            parts = list(pool.map(read, chunks))
    else:
        parts = [read(chunk) for chunk in chunks]
    rows = [row for part_rows, _ in parts for row in part_rows]
    step_rows = [step for _, part_steps in parts for step in part_steps]
    runs = pd.DataFrame(rows).reindex(columns=RUN_COLUMNS)
    runs["batch_size_resolved"] = runs["batch_size_resolved"].astype("Int64")
    if len(runs):
        runs[["outlier", "outlier_detail"]] = outlier_details(runs, variance.outlier_mads)
        runs["outlier_z"] = outlier_scores(runs)
    record_fields = [f.name for f in fields(StepRecord)]
    steps = pd.DataFrame(step_rows, columns=["cell_id", "repeat", *record_fields])
    return runs, steps.reindex(columns=STEP_COLUMNS)


RUNS_PER_CHUNK = 200  # runs a worker reads per task: few enough tasks to keep the workers even


def _read_runs(
    paths: list[Path],
    window: Window,
    json_root: Path | None,
    expected_measures: Mapping[str, str] | None,
) -> tuple[list[dict[str, Any]], list[tuple[Any, ...]]]:
    """Rows and step rows of these runs; their JSONs written."""
    rows, step_rows = [], []
    for path in paths:
        run = read_run(path, window, expected_measures)
        rows.append(run.row)
        key = (run.row["cell_id"], run.row["repeat"])
        step_rows += [key + tuple(vars(r).values()) for r in run.records]
        if json_root is not None:
            _write_run_json(json_root, run, window)
    return rows, step_rows


def _write_run_json(root: Path, run: RunRow, window: Window) -> None:
    """Per-run JSON as the PyTorch DDP benchmark writes it: facts, raw step times, percentiles."""
    record, row = run.record, run.row
    if record is None:  # an unreadable manifest: its row says why, there is nothing else to write
        return
    data = {
        "schema_version": SCHEMA_VERSION,
        "cell": record.cell,
        "batch_size_resolved": record.trained_batch_size,  # per device: what `max` was found to be
        "options_resolved": record.options_resolved,
        "repeat": row["repeat"],
        "status": row["status"],
        "status_detail": row["status_detail"],
        "backend": record.backend,
        "layout": str(record.planned_cell.layout),
        "world_size": record.planned_cell.layout.devices,
        "nodes": record.nodes,
        "window": {"warmup": window.warmup, "measure": window.measure},
        # what the window measured: its iterations (an upstream log's are its own, counted from
        # 1), samples and seconds (the slowest rank's); null where no figure was measured
        "window_measured": {
            "first_step": run.result.window_first_step,
            "last_step": run.result.window_last_step,
            "samples": run.result.window_samples,
            "time_s": run.result.window_time_s,
        }
        if run.result
        else None,
        "method": row.get("method"),
        "trace": row.get("trace"),
        "throughput_samples_per_s": _finite(row.get("throughput_samples_per_s")),
        "nonfinite_loss_steps": _finite(row.get("nonfinite_loss_steps")),  # null: no loss logged
        "step_time_ms": run.result.step_time_ms if run.result else [],
        # two definitions, named: the slowest rank's steps (the runs table's p50_ms...), and
        # every rank's steps pooled, as the PyTorch DDP benchmark computes them
        "percentiles_ms": {k: row.get(k) for k in ("p50_ms", "p75_ms", "p90_ms", "p95_ms")}
        if run.result
        else {},
        "percentiles_of": run.result.percentiles_of() if run.result else None,
        "percentiles_ms_pooled_ranks": percentiles(run.result.pooled_step_time_ms)
        if run.result
        else {},
    }
    atomic_write_json(run_json(root, row["cell_id"], row["repeat"]), data, indent=None)


def _finite(value: Any) -> Any:
    return value if isinstance(value, int | float) and math.isfinite(value) else None
