""" "Read this first": everything that weakens the numbers, one entry per cell and reason."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from dlperf.i18n import Phrase, Series, Text
from dlperf.matrix import Cell
from dlperf.measure.runflags import cell_flags as runs_cell_flags
from dlperf.measure.tables import other_work
from dlperf.report import fmt
from dlperf.report.load import MEASURED
from dlperf.report.order import cell_id_key
from dlperf.report.reasons import (
    CellRuns,
    Limits,
    by_repeat,
    cell_flags,
    outlier_reason,
    recorded,
    repeat_name,
    run_reason,
    with_outlier_z,
)
from dlperf.status import Status

# The order the section lists them in: no figure at all first, then figures to doubt. A cell
# skipped or missing has the caveat of that status's name.
KINDS = (
    "runs_failed",
    Status.SKIPPED,
    Status.MISSING,
    "unstable",
    "outliers",
    "flagged",
    "no_speedup_baseline",
    "no_speedup_other_work",
    "shared_cores",
)
# the kinds that doubt a figure a cell shows (the others: it has none, or only its speedup is
# missing): the results tables and the headline mark such a figure
DOUBT_KINDS = ("runs_failed", "unstable", "outliers", "flagged", "shared_cores")
# a stale run is redone next time: until then its cell says why it is no figure
_FAILED = (Status.OOM, Status.TIMEOUT, Status.FAILED, Status.PARSE_ERROR, Status.STALE)
# where a speedup over 1n1g is none of the figures (DLPerf's special cases: a latency, a largest
# value, TFLOP/s per parallel configuration): no caveat for a cell without one
NO_SPEEDUP_MODELS = ("wide_deep", "insightface", "gpt")


@dataclass(frozen=True)
class Caveat:
    kind: str  # one of KINDS
    cell_id: str
    source: str
    status: str  # the runs' or the cell's status
    repeats: tuple[str, ...]  # "r2", ... (empty when the table has no runs)
    detail: Text  # the reason, flags, or the 1n1g cell without a figure (dlperf.report.reasons)
    values: dict[str, str] = field(default_factory=dict)  # shared_cores: the sentence's numbers


def caveats(cells: pd.DataFrame, runs: pd.DataFrame, limits: Limits | None = None) -> list[Caveat]:
    """Every caveat of the tables; `limits`: the suite's (None: not known)."""
    limits = limits or Limits()
    runs = with_outlier_z(runs)
    found: list[Caveat] = []
    found += _from_runs(runs, limits)
    found += _from_cells(cells, CellRuns(runs), limits)
    rank = {kind: i for i, kind in enumerate(KINDS)}
    return sorted(found, key=lambda c: (rank[c.kind], c.source != MEASURED, cell_id_key(c.cell_id)))


def doubted(found: Iterable[Caveat]) -> frozenset[tuple[str, str]]:
    """(cell id, source) of the cells whose figure has a caveat to doubt it (DOUBT_KINDS)."""
    return frozenset((c.cell_id, c.source) for c in found if c.kind in DOUBT_KINDS)


def _repeats(rows: Iterable[dict[str, Any]]) -> tuple[str, ...]:
    return tuple(repeat_name(r["repeat"]) for r in rows)


def _from_runs(runs: pd.DataFrame, limits: Limits) -> list[Caveat]:
    if not len(runs):
        return []
    out = []
    failed = runs[runs["status"].isin([*_FAILED, Status.SKIPPED])]
    for (cell_id, status), group in failed.groupby(["cell_id", "status"], sort=True):
        by_reason: dict[Text, list[dict[str, Any]]] = {}
        for row in by_repeat(group):
            by_reason.setdefault(run_reason(row, limits), []).append(row)
        kind = Status.SKIPPED if status == Status.SKIPPED else "runs_failed"
        for reason, rows in by_reason.items():
            out.append(Caveat(kind, str(cell_id), MEASURED, str(status), _repeats(rows), reason))
    if "outlier" in runs.columns:
        outliers = runs[runs["outlier"].map(lambda v: v is True)]
        for cell_id, group in outliers.groupby("cell_id", sort=True):
            rows = by_repeat(group)
            reasons = tuple(dict.fromkeys(outlier_reason(r) for r in rows))
            out.append(
                Caveat(
                    "outliers",
                    str(cell_id),
                    MEASURED,
                    Status.OK,
                    _repeats(rows),
                    Series(reasons, "clause_sep"),
                )
            )
    return out


def _from_cells(cells: pd.DataFrame, runs_of: CellRuns, limits: Limits) -> list[Caveat]:
    # the measured cells' caveats come from their runs (_from_runs); a baseline's cell of the
    # same id has none there, so its own come from its row
    has_runs = {(cell_id, MEASURED) for cell_id in runs_of.by_id}
    out = []
    ok_figures = {
        (r["cell_id"], r["source"])
        for r in cells.to_dict("records")
        if r["status"] == Status.OK and fmt.is_number(r["throughput_median"])
    }
    rows = {(r["cell_id"], r["source"]): r for r in cells.to_dict("records")}
    statuses = {key: r["status"] for key, r in rows.items()}
    for record in cells.to_dict("records"):
        cell_id, source = record["cell_id"], record["source"]
        status = record["status"] or Status.MISSING
        reason = recorded(fmt.text(record.get("note")) or fmt.text(record.get("statuses")))
        if status in (Status.MISSING, "") and source == MEASURED:
            out.append(Caveat(Status.MISSING, cell_id, source, Status.MISSING, (), ""))
        elif status in (*_FAILED, Status.SKIPPED) and (cell_id, source) not in has_runs:
            kind = Status.SKIPPED if status == Status.SKIPPED else "runs_failed"
            out.append(Caveat(kind, cell_id, source, status, (), reason))
        if record.get("unstable") is True:
            flags = cell_flags(record, runs_of(record), limits)
            out.append(Caveat("unstable", cell_id, source, status, (), flags))
        elif (
            fmt.is_number(record.get("outlier_runs"))
            and float(record["outlier_runs"]) > 0
            and (cell_id, source) not in has_runs
        ):
            flags = cell_flags(record, runs_of(record), limits)
            out.append(Caveat("outliers", cell_id, source, status, (), flags))
        flagged = runs_cell_flags(record, runs_of(record))
        if flagged:
            out.append(
                Caveat("flagged", cell_id, source, status, (), Series(tuple(flagged), "clause_sep"))
            )
        if (
            status == Status.OK
            and int(record["devices"]) > 1
            and not fmt.is_number(record["speedup"])
            and Cell.parse(cell_id).model not in NO_SPEEDUP_MODELS
        ):
            base = Cell.parse(cell_id).baseline.id
            if (base, source) not in ok_figures:
                # the Status column is this cell's (it has a figure); the 1n1g cell's is beside it
                base_status = Phrase.of(f"status.{statuses.get((base, source)) or Status.MISSING}")
                said = Phrase.of("caveats.text_no_speedup_baseline", cell=base, status=base_status)
                out.append(Caveat("no_speedup_baseline", cell_id, source, status, (), said))
            elif other_work(record, rows[base, source]):
                work = f"{base}: {_work(rows[base, source])} ≠ {_work(record)}"
                out.append(Caveat("no_speedup_other_work", cell_id, source, status, (), work))
    return out + _shared_cores(cells)


def _work(record: dict[str, Any]) -> str:
    """What a cell trained: its batch size per device, and its searched setting if any."""
    batch = record.get("batch_size_resolved")
    parts = [f"bsz={fmt.integer(batch)}" if fmt.is_number(batch) else ""]
    setting = fmt.text(record.get("setting"))
    parts += [f"{k}={v}" for k, v in (json.loads(setting) if setting else {}).items()]
    return ", ".join(filter(None, parts))


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
                    Phrase.of("caveats.text_shared_cores", **values),
                    values,
                )
            )
    return out
