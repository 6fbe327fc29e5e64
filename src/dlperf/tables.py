"""From raw manifests and logs to the tidy tables: steps, runs and cells."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import pandas as pd

from dlperf import SCHEMA_VERSION
from dlperf.adapters import get_adapter
from dlperf.adapters.base import Launcher
from dlperf.matrix import Cell
from dlperf.parse.records import ParseError, ParseResult, StepRecord
from dlperf.stats import RunThroughput, Window, percentiles, run_throughput, speedup, spread
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
    "repeat",
    "status",
    "status_detail",
    "throughput_samples_per_s",
    "method",
    "window_first_step",
    "window_last_step",
    "window_samples",
    "window_time_s",
    "ranks",
    "trace",
    "p50_ms",
    "p75_ms",
    "p90_ms",
    "p95_ms",
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
    "status",
    "runs_planned",
    "runs_done",
    "runs_ok",
    "statuses",
    "throughput_median",
    "throughput_min",
    "throughput_max",
    "throughput_cv",
    "ci_low",
    "ci_high",
    "ci_level",
    "speedup",
    "efficiency",
    "speedup_baseline_cell",
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
    manifest: dict[str, Any]
    row: dict[str, Any]
    records: list[StepRecord]
    result: RunThroughput | None


def read_run(manifest_path: Path, window: Window) -> RunRow:
    """One run's row: the manifest's status, refined by parsing its logs when the run finished.

    Nothing about one run stops the tables: an unreadable manifest or log is that run's
    parse_error, naming the file (and line) at fault.
    """
    try:
        manifest = _read_manifest(manifest_path)
    except ParseError as err:
        return RunRow({}, _unreadable_row(manifest_path, str(err)), [], None)
    row: dict[str, Any] = dict(manifest["cell"]) | {
        "repeat": manifest["repeat"],
        "status": manifest["status"],
        "status_detail": manifest.get("status_detail", ""),
        "job_id": manifest.get("job_id"),
        "hosts": ",".join(manifest.get("hosts", [])),
        "submitted_at": manifest.get("submitted_at"),
        "started_at": manifest.get("started_at"),
        "ended_at": manifest.get("ended_at"),
        "noticed_at": manifest.get("noticed_at"),
        "workload_wall_s": max(
            (t.get("workload_wall_s") or 0 for t in manifest.get("tasks", [])), default=None
        ),
        "manifest": str(manifest_path),
        "source": "measured",
        "schema_version": SCHEMA_VERSION,
    }
    if row["workload_wall_s"] and row["noticed_at"] and row["submitted_at"]:
        row["harness_overhead_s"] = row["noticed_at"] - row["submitted_at"] - row["workload_wall_s"]
    records: list[StepRecord] = []
    result = None
    if manifest["status"] == Status.OK:
        adapter = get_adapter(manifest["adapter"]["name"])
        per_node = adapter.launcher is Launcher.PER_NODE
        logs = [manifest_path.parent / t["log"] for t in manifest["tasks"]]
        try:
            cell = Cell.from_key(manifest["cell"])
            parsed = adapter.parse(
                logs, cell, adapter.resolved_options(manifest["measure"]["options"])
            )
            check_every_rank_reported(parsed, logs, per_node)
            records = parsed.records
            result = run_throughput(parsed, window)
        except (ParseError, OSError) as err:
            row |= {"status": Status.PARSE_ERROR, "status_detail": str(err)}
        else:
            row |= {k: v for k, v in result.__dict__.items() if k != "step_time_ms"}
            row |= percentiles(result.step_time_ms)
            row["ranks"] = result.ranks if not per_node else len(logs)
    return RunRow(manifest, row, records, result)


MANIFEST_KEYS = ("cell", "repeat", "status", "adapter", "measure", "tasks")


def _read_manifest(path: Path) -> dict[str, Any]:
    try:
        manifest = json.loads(path.read_text())
    except OSError as err:
        raise ParseError(f"cannot read the manifest: {err.strerror}", path) from None
    except ValueError as err:
        line = getattr(err, "lineno", None)
        raise ParseError(
            f"the manifest is not valid JSON ({err}); delete it to redo the run", path, line
        ) from None
    missing = [k for k in MANIFEST_KEYS if not isinstance(manifest, dict) or k not in manifest]
    if missing:
        raise ParseError(
            f"the manifest lacks {', '.join(missing)}; delete it to redo the run", path
        )
    return manifest


def _unreadable_row(manifest_path: Path, detail: str) -> dict[str, Any]:
    """The row of a run whose manifest cannot be read: its cell and repeat from the path."""
    cell_id, repeat = manifest_path.parent.parent.name, manifest_path.parent.name
    return Cell.parse(cell_id).key() | {
        "repeat": int(repeat.removeprefix("r")),
        "status": Status.PARSE_ERROR,
        "status_detail": detail,
        "manifest": str(manifest_path),
        "source": "measured",
        "schema_version": SCHEMA_VERSION,
    }


def check_every_rank_reported(parsed: ParseResult, logs: list[Path], per_node: bool) -> None:
    """A run is measured only when its logs speak for every process it launched.

    No step records at all names every log. For one process per device (the built-in
    workloads), a rank log without step records names that log: the figure of the other ranks
    alone would be a fraction of the real throughput, shown as ok. (Per-node launchers may print
    from node 0 only; their parsers check their own lines.)
    """
    if not parsed.records:
        names = ", ".join(str(p) for p in logs) or "(no logs)"
        raise ParseError(f"no step records in {names}")
    if per_node or all(r.rank < 0 for r in parsed.records):
        return
    reporting = {r.path for r in parsed.records}
    for path in logs:
        if str(path) not in reporting:
            raise ParseError(
                f"no step records in this rank's log: {len(reporting)} of {len(logs)} "
                "launched ranks reported steps",
                path,
            )


def runs_table(
    manifests: Iterable[Path], window: Window, json_root: Path | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(runs, steps) tables; with json_root, also one DDP-benchmark-style JSON per run."""
    rows, step_rows = [], []
    for path in manifests:
        run = read_run(Path(path), window)
        rows.append(run.row)
        key = (run.row["cell_id"], run.row["repeat"])
        step_rows += [key + tuple(vars(r).values()) for r in run.records]
        if json_root is not None:
            _write_run_json(json_root, run, window)
    runs = pd.DataFrame(rows).reindex(columns=RUN_COLUMNS)
    record_fields = [f.name for f in fields(StepRecord)]
    steps = pd.DataFrame(step_rows, columns=["cell_id", "repeat", *record_fields])
    return runs, steps.reindex(columns=STEP_COLUMNS)


def _write_run_json(root: Path, run: RunRow, window: Window) -> None:
    """Per-run JSON as the PyTorch DDP benchmark writes it: facts, raw step times, percentiles."""
    manifest, row = run.manifest, run.row
    if not manifest:  # an unreadable manifest: its row says why, there is nothing else to write
        return
    data = {
        "schema_version": SCHEMA_VERSION,
        "cell": manifest["cell"],
        "repeat": row["repeat"],
        "status": row["status"],
        "status_detail": row["status_detail"],
        "backend": manifest["backend"],
        "layout": manifest["cell"]["layout"],
        "world_size": manifest["cell"]["devices"],
        "nodes": manifest.get("nodes", {}),
        "window": {"warmup": window.warmup, "measure": window.measure},
        "method": row.get("method"),
        "trace": row.get("trace"),
        "throughput_samples_per_s": _finite(row.get("throughput_samples_per_s")),
        "step_time_ms": run.result.step_time_ms if run.result else [],
        "percentiles_ms": {k: row.get(k) for k in ("p50_ms", "p75_ms", "p90_ms", "p95_ms")}
        if run.result
        else {},
    }
    atomic_write_json(root / row["cell_id"] / f"r{row['repeat']}.json", data)


def _finite(value: Any) -> Any:
    return value if isinstance(value, int | float) and math.isfinite(value) else None


def cell_figures(group: pd.DataFrame, runs_planned: int) -> dict[str, Any]:
    """A cell's status, median and spread from its runs' rows (ok runs only give figures)."""
    ok = group[group["status"] == Status.OK]["throughput_samples_per_s"].astype(float).tolist()
    s = spread(ok)
    statuses = group["status"].value_counts().to_dict()
    methods = sorted({m for m in group.get("method", pd.Series(dtype=str)).dropna() if m})
    return {
        "status": str(cell_status(statuses)),
        "runs_planned": runs_planned,
        "runs_done": len(group),
        "runs_ok": len(ok),
        "statuses": ",".join(f"{k}:{v}" for k, v in sorted(statuses.items())),
        "throughput_median": s.median,
        "throughput_min": s.minimum,
        "throughput_max": s.maximum,
        "throughput_cv": s.cv,
        "ci_low": s.ci_low,
        "ci_high": s.ci_high,
        "ci_level": s.ci_level,
        "method": ",".join(methods),
    }


def cells_table(
    runs: pd.DataFrame, planned: pd.DataFrame, window: Window, repeats: int
) -> pd.DataFrame:
    """One row per planned cell: median and spread of its ok runs, speedup vs its 1n1g cell."""
    rows = []
    by_cell = {cid: group for cid, group in runs.groupby("cell_id")} if len(runs) else {}
    for cell in planned.to_dict("records"):
        group = by_cell.get(cell["cell_id"], runs.iloc[0:0])
        rows.append(
            cell
            | cell_figures(group, repeats)
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
    return add_speedup(cells)


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


def planned_cells(specs: Iterable[Any]) -> pd.DataFrame:
    return pd.DataFrame([spec.cell.key() for spec in specs]).reindex(columns=CELL_COLUMNS)


def write_table(frame: pd.DataFrame, path: Path) -> None:
    with atomic_path(path) as tmp:
        frame.to_csv(
            tmp,
            sep="\t",
            index=False,
            float_format="%.6g",
            compression="gzip" if path.name.endswith(".gz") else None,
        )
