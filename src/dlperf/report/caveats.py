""" "Read this first": everything that weakens the numbers, one entry per cell and reason."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from dlperf.matrix import Cell
from dlperf.report import fmt
from dlperf.report.load import MEASURED
from dlperf.status import Status

# The order the section lists them in: no figure at all first, then figures to doubt.
KINDS = (
    "runs_failed",
    "skipped",
    "missing",
    "unstable",
    "outliers",
    "no_speedup_baseline",
    "shared_cores",
)
_FAILED = (Status.OOM, Status.TIMEOUT, Status.FAILED, Status.PARSE_ERROR)


@dataclass(frozen=True)
class Caveat:
    kind: str  # one of KINDS
    cell_id: str
    source: str
    status: str  # the runs' or the cell's status
    repeats: tuple[str, ...]  # "r2", ... (empty when the table has no runs)
    detail: str  # the recorded reason, flags, or the missing baseline cell
    values: dict[str, str] = field(
        default_factory=dict
    )  # a sentence's numbers (locale text_<kind>)


def caveats(cells: pd.DataFrame, runs: pd.DataFrame) -> list[Caveat]:
    found: list[Caveat] = []
    found += _from_runs(runs)
    found += _from_cells(cells, has_runs=set(runs["cell_id"]) if len(runs) else set())
    rank = {kind: i for i, kind in enumerate(KINDS)}
    return sorted(found, key=lambda c: (rank[c.kind], c.source != MEASURED, c.cell_id))


def _repeats(rows: Iterable[dict[str, Any]]) -> tuple[str, ...]:
    return tuple(f"r{fmt.integer(r['repeat'])}" for r in rows)


def _from_runs(runs: pd.DataFrame) -> list[Caveat]:
    if not len(runs):
        return []
    out = []
    ordered = runs.assign(_r=pd.to_numeric(runs["repeat"], errors="coerce")).sort_values("_r")
    failed = ordered[ordered["status"].isin([*_FAILED, Status.SKIPPED])]
    for (cell_id, status), group in failed.groupby(["cell_id", "status"], sort=True):
        by_detail: dict[str, list[dict[str, Any]]] = {}
        for row in group.to_dict("records"):
            by_detail.setdefault(fmt.text(row.get("status_detail")), []).append(row)
        kind = "skipped" if status == Status.SKIPPED else "runs_failed"
        for detail, rows in by_detail.items():
            out.append(
                Caveat(
                    kind, str(cell_id), MEASURED, str(status), _repeats(rows), fmt.shorten(detail)
                )
            )
    if "outlier" in ordered.columns:
        outliers = ordered[ordered["outlier"].map(lambda v: v is True)]
        for cell_id, group in outliers.groupby("cell_id", sort=True):
            details = "; ".join(
                dict.fromkeys(fmt.text(r.get("outlier_detail")) for r in group.to_dict("records"))
            )
            rows = group.to_dict("records")
            out.append(
                Caveat("outliers", str(cell_id), MEASURED, Status.OK, _repeats(rows), details)
            )
    return out


def _from_cells(cells: pd.DataFrame, has_runs: set[str]) -> list[Caveat]:
    out = []
    ok_figures = {
        (r["cell_id"], r["source"])
        for r in cells.to_dict("records")
        if r["status"] == Status.OK and fmt.is_number(r["throughput_median"])
    }
    statuses = {(r["cell_id"], r["source"]): r["status"] for r in cells.to_dict("records")}
    for record in cells.to_dict("records"):
        cell_id, source, status = record["cell_id"], record["source"], record["status"] or "missing"
        reason = fmt.text(record.get("note")) or fmt.text(record.get("statuses"))
        if status in ("missing", "") and source == MEASURED:
            out.append(Caveat("missing", cell_id, source, "missing", (), ""))
        elif status in (*_FAILED, Status.SKIPPED) and cell_id not in has_runs:
            kind = "skipped" if status == Status.SKIPPED else "runs_failed"
            out.append(Caveat(kind, cell_id, source, status, (), reason))
        if record.get("unstable") is True:
            out.append(
                Caveat("unstable", cell_id, source, status, (), fmt.text(record.get("flags")))
            )
        elif (
            fmt.is_number(record.get("outlier_runs"))
            and float(record["outlier_runs"]) > 0
            and cell_id not in has_runs
        ):
            out.append(
                Caveat("outliers", cell_id, source, status, (), fmt.text(record.get("flags")))
            )
        if (
            status == Status.OK
            and int(record["devices"]) > 1
            and not fmt.is_number(record["speedup"])
        ):
            base = Cell.parse(cell_id).baseline.id
            base_status = statuses.get((base, source)) or "missing"
            if (base, source) not in ok_figures:
                out.append(Caveat("no_speedup_baseline", cell_id, source, base_status, (), base))
    return out + _shared_cores(cells)


def _shared_cores(cells: pd.DataFrame) -> list[Caveat]:
    """Cells whose ranks shared the CPU cores their 1n1g cell had alone: a speedup below the
    device count there is the machine, not the framework (issue 20.17). The ideal speedup is
    the cores all ranks had over the 1n1g cell's."""
    if "cores_per_rank" not in cells.columns:
        return []
    cores = {
        (r["cell_id"], r["source"]): float(r["cores_per_rank"])
        for r in cells.to_dict("records")
        if fmt.is_number(r.get("cores_per_rank"))
    }
    out = []
    for record in cells.to_dict("records"):
        key, devices = (record["cell_id"], record["source"]), int(record["devices"])
        base = cores.get((Cell.parse(record["cell_id"]).baseline.id, record["source"]))
        if devices < 2 or key not in cores or not base or record["status"] != Status.OK:
            continue
        ideal = devices * cores[key] / base
        if ideal < devices:
            values = {
                "ranks": str(devices),
                "cores": fmt.integer(cores[key]),
                "base_cores": fmt.integer(base),
                "ideal": fmt.speedup(ideal),
            }
            out.append(
                Caveat(
                    "shared_cores",
                    record["cell_id"],
                    record["source"],
                    record["status"],
                    (),
                    "",
                    values,
                )
            )
    return out
