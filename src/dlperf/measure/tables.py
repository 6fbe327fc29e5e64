"""The cells table, from the runs table: each planned cell's status, median, spread, flags and
speedup; and how every table is written. (Runs and steps: dlperf.measure.runs.)"""

from __future__ import annotations

import json
import math
import multiprocessing as mp
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd

from dlperf import SCHEMA_VERSION
from dlperf.i18n import english
from dlperf.matrix import Cell, CellSpec
from dlperf.measure.efficiency import CELL_FIGURE_COLUMNS, add_ceiling
from dlperf.measure.efficiency import cell_figures as explaining_figures
from dlperf.measure.runflags import record_flags, run_flags
from dlperf.measure.stats import CI_LEVEL, Window, speedup, spread
from dlperf.measure.variance import DEFAULT_VARIANCE, VarianceSettings, cell_flags
from dlperf.status import Status, cell_status, statuses_text
from dlperf.util import atomic_path, is_number

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
CELL_TABLE_COLUMNS = CELL_COLUMNS + [
    "setting",  # the cell's swept option values, as JSON ("" when its case sweeps none)
    "batch_size_resolved",
    "search_ceiling",  # a `max` cell's value where it is its search's ceiling: a lower bound
    "cores_per_rank",  # on a CPU: its runs' cores per rank (the smallest, should they differ)
    "hardware",  # its ok runs' (dlperf.launch.record.RunRecord.hardware; flagged where they differ)
    "baseline_hardware",  # its 1n1g cell's, where that is other hardware ('' where the same)
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


def cell_figures(
    group: pd.DataFrame,
    runs_planned: int,
    variance: VarianceSettings = DEFAULT_VARIANCE,
    ci_level: float = CI_LEVEL,
) -> dict[str, Any]:
    """A cell's status, median and spread from its runs' rows (ok runs only give figures), and
    its variance flags (dlperf.measure.variance: outliers are flagged and stay in the median)."""
    ok_runs = group[group["status"] == Status.OK]
    ok = ok_runs["throughput_samples_per_s"].astype(float).tolist()
    s = spread(ok, ci_level)
    flags = cell_flags(group, variance)
    batch, batch_note = _cell_batch_size(ok_runs if len(ok_runs) else group)
    notes = [flags["flags"], batch_note, *(english(p) for p in run_flags(ok_runs))]
    flags["flags"] = "; ".join(filter(None, notes))
    statuses = group["status"].value_counts().to_dict()
    methods = sorted({m for m in group.get("method", pd.Series(dtype=str)).dropna() if m})
    cores = pd.to_numeric(group.get("cores_per_rank", pd.Series(dtype=float)), errors="coerce")
    ceiling = pd.to_numeric(ok_runs.get("search_ceiling", pd.Series(dtype=float)), errors="coerce")
    return {
        "batch_size_resolved": batch,
        "search_ceiling": ceiling.max() if ceiling.notna().any() else math.nan,
        "cores_per_rank": cores.min() if cores.notna().any() else math.nan,
        "hardware": " | ".join(
            sorted({h for h in ok_runs.get("hardware", []) if isinstance(h, str) and h})
        ),
        "status": str(cell_status(statuses)),
        "runs_planned": runs_planned,
        "runs_done": len(group),
        "runs_ok": len(ok),
        "statuses": statuses_text(statuses),
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


def stated_batch(batch_size: Any, resolved: Any) -> Any:
    """A cell's batch per device: what its runs (or a published table's remark) say it trained
    with, else the number its id names (a `max` names none: left as it is)."""
    if is_number(resolved) or not str(batch_size).isdigit():
        return resolved
    return int(batch_size)


def _cell_batch_size(group: pd.DataFrame) -> tuple[Any, str]:
    """The batch size the cell's runs (its ok ones, where it has any: its figures') trained
    with, and a note when they disagree."""
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
    ci_level: float = CI_LEVEL,
) -> pd.DataFrame:
    """One row per planned cell: median and spread of its ok runs, speedup vs its 1n1g cell.
    `repeats`: the runs planned per cell, or per cell id (adaptive repeats); `ci_level`: the
    median's confidence interval's (adaptive repeats' level, so the interval shown is the one
    their stopping rule tested)."""
    rows = []
    by_cell = {cid: group for cid, group in runs.groupby("cell_id")} if len(runs) else {}
    for cell in planned.to_dict("records"):
        group = by_cell.get(cell["cell_id"], runs.iloc[0:0])
        planned_runs = repeats if isinstance(repeats, int) else repeats[cell["cell_id"]]
        figures = cell_figures(group, planned_runs, variance, ci_level)
        figures["batch_size_resolved"] = stated_batch(
            cell["batch_size"], figures["batch_size_resolved"]
        )
        rows.append(
            cell
            | {"setting": resolved_setting(cell.get("setting"), group)}
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
    rows = {(r["cell_id"], r["source"]): r for r in cells.to_dict("records")}
    speedups, baselines, other_hardware = [], [], []
    for row in cells.to_dict("records"):
        base_id = baseline_id(row)
        base_row = rows.get((base_id, row["source"]), {})
        base = base_row["throughput_median"] if base_row.get("status") == Status.OK else None
        ok = row["status"] == Status.OK and not other_work(row, base_row)
        value = speedup(row["throughput_median"], base) if ok else math.nan
        speedups.append(value)
        baselines.append(base_id if math.isfinite(value) else "")
        mine, theirs = row.get("hardware"), base_row.get("hardware")
        other = theirs if math.isfinite(value) and _differ(mine, theirs) else ""
        other_hardware.append(other)
    cells["speedup"] = speedups
    cells["efficiency"] = cells["speedup"] / cells["devices"]
    cells["speedup_baseline_cell"] = baselines
    cells["baseline_hardware"] = other_hardware
    cells["flags"] = [
        "; ".join(filter(None, [_text(row.get("flags")), *map(english, record_flags(row))]))
        for row in cells.to_dict("records")
    ]
    return cells.reindex(columns=CELL_TABLE_COLUMNS)


def other_work(row: dict[str, Any], base_row: dict[str, Any]) -> bool:
    """Whether a cell and its 1n1g cell trained other work, both known: another batch size per
    device (each `max` cell's search finds its own) or another value of a searched option
    (InsightFace's largest num_classes per layout). Their ratio is no speedup."""
    mine, theirs = row.get("batch_size_resolved"), base_row.get("batch_size_resolved")
    batches = is_number(mine) and is_number(theirs) and float(str(mine)) != float(str(theirs))
    return batches or _differ(row.get("setting"), base_row.get("setting"))


def _differ(mine: Any, theirs: Any) -> bool:
    """Two cells' texts (hardware, settings), both known, not the same."""
    return bool(_text(mine)) and bool(_text(theirs)) and _text(mine) != _text(theirs)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def planned_cells(specs: Iterable[CellSpec]) -> pd.DataFrame:
    rows = [spec.cell.key() | {"setting": setting_text(spec.swept)} for spec in specs]
    return pd.DataFrame(rows).reindex(columns=[*CELL_COLUMNS, "setting"])


def with_planned_setting(runs: pd.DataFrame, planned: pd.DataFrame) -> pd.DataFrame:
    """The runs with their cell's swept option values as planned (`setting`, `max` as `max`;
    '' for a cell the suite no longer plans): a runs table read as a table of cells
    (dlperf.report.load.cells_from_runs) places each figure by them, as the cells table does."""
    by_cell = dict(zip(planned["cell_id"], planned["setting"], strict=True))
    return runs.assign(setting=[by_cell.get(c, "") or "" for c in runs["cell_id"]])


def resolved_setting(planned: Any, runs: pd.DataFrame) -> str:
    """A cell's swept values with a `max` replaced by what its ok runs trained with (the value
    its search found; it stays `max` while no run has trained)."""
    if (
        not isinstance(planned, str)
        or "max" not in (json.loads(planned) if planned else {}).values()
    ):
        return planned if isinstance(planned, str) else ""
    ok = runs[runs["status"] == Status.OK] if "options_resolved" in runs else runs.iloc[0:0]
    found = [json.loads(v) for v in ok.get("options_resolved", []) if isinstance(v, str) and v]
    return setting_text(json.loads(planned) | found[0]) if found else planned


def setting_text(swept: Mapping[str, Any]) -> str:
    return json.dumps(swept, sort_keys=True) if swept else ""


def write_table(frame: pd.DataFrame, path: Path) -> None:
    """Every number as Python writes it (the shortest text that reads back the same value): a
    rounded epoch time would turn a run's duration into 0. A row is one line: a text's line
    breaks (a traceback in a run's detail; its manifest keeps them) become spaces (the steps
    table, ids and numbers only, is not searched for them)."""
    text = frame.select_dtypes(include=["object", "string"]).columns
    if len(text) and not path.name.endswith(".gz"):
        frame = frame.copy()
        frame[text] = frame[text].replace(r"[\r\n]+", " ", regex=True)
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


@contextmanager
def writing_aside(frame: pd.DataFrame, path: Path) -> Iterator[None]:
    """`write_table(frame, path)` in a forked process while the block runs (the steps table: a
    second of formatting and gzip), finished before the block returns; an OSError naming the path
    if it failed. Without fork, written before the block."""
    if "fork" not in mp.get_all_start_methods():
        write_table(frame, path)
        yield
        return
    writer = mp.get_context("fork").Process(target=write_table, args=(frame, path))
    writer.start()
    try:
        yield
    finally:
        writer.join()
    if writer.exitcode != 0:
        raise OSError(f"{path}: writing the table failed (exit code {writer.exitcode})")
