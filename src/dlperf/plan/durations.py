"""A cell's planned wall time per run (start-up included: started on its nodes to noticed; the
time a job queued is no run's, and a campaign's own jobs queue behind each other), from the best
evidence there is, and which it is (`duration_source`):

- measured: the median wall time of the cell's earlier runs in `<results>/tables/runs.tsv`
  (its ok runs; all its timed runs when none is ok, and the basis says so);
- scaled: from a cell of the same framework and model with ok runs (SCALING_RULE below), by the
  batch size those runs trained (`batch_size_resolved`: what a `max` search found, not what
  max_batch_size says; the cell's own where the table has none) and the batch the cell will
  train (a `max` cell's: its search's result once there is one): a run that failed, ran out of
  memory, timed out or was skipped did not do the work another cell's run will do, so its time
  is no reference;
- limit: the suite's `time_limit_min`, an upper bound of the workload; after the cell's measured
  start-up where its runs show one: runs whose workload the limit now stops (they trained longer,
  or timed out under a shorter limit) are planned at it.
"""

from __future__ import annotations

import csv
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from dlperf.matrix import CellSpec
from dlperf.paths import RESULTS, ResultPaths
from dlperf.plan.jobs import PlanError
from dlperf.status import Status

SCALING_RULE = (
    "scaled wall = reference start-up + reference workload time x (batch per device / "
    "reference's): every cell runs the same steps, so the work per device grows with the batch "
    "per device (communication and precision are not modelled); the workload capped at the time limit"
)
SOURCES = ("measured", "scaled", "limit")
Searched = Callable[[str], int | None]  # a `max` cell's id -> the value its search found


@dataclass(frozen=True)
class CellDuration:
    """A cell's planned wall time per run and the evidence it comes from."""

    cell_id: str
    framework: str
    model: str
    layout: str
    nodes: int
    gpus_per_node: int
    devices: int
    wall_s: float
    duration_source: str  # measured | scaled | limit
    basis: str  # what exactly: "median of 7 runs", "scaled from <cell>", "time limit 30 min"


@dataclass(frozen=True)
class TimedRun:
    """An earlier run of the runs table, with its wall time (noticed - started, or - submitted
    for a run that never started)."""

    cell_id: str
    status: str
    wall_s: float
    workload_wall_s: float | None
    batch_size: int | None = None  # per device, as trained (batch_size_resolved)


# a run's wall time and whose (started_at too where the table has it: a run's start on its nodes)
TIMED_COLUMNS = ("cell_id", "status", "submitted_at", "noticed_at")


def read_runs(results: Path) -> list[TimedRun]:
    """Earlier runs with a wall time; none when there is no runs table. Read with the csv
    module, not pandas: every dry run plans, and pandas would double dlperf's start-up."""
    path = ResultPaths(results).runs
    if not path.is_file():
        return []
    try:
        with path.open(newline="", encoding="utf-8-sig") as f:  # as pandas wrote it
            rows = list(csv.DictReader(f, delimiter="\t"))
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise PlanError(f"{path}: cannot read the runs table: {err}") from None
    missing = [c for c in TIMED_COLUMNS if rows and c not in rows[0]]
    if missing:  # rows, but not a runs table's: no duration would be measured, silently
        raise PlanError(f"{path}: rows without the column(s) {', '.join(missing)}")
    runs = []
    for row in rows:
        started = _seconds(row.get("started_at")) or _seconds(row.get("submitted_at"))
        noticed = _seconds(row.get("noticed_at"))
        if started is None or noticed is None or not noticed - started > 0:
            continue
        runs.append(
            TimedRun(
                str(row.get("cell_id")),
                str(row.get("status")),
                noticed - started,
                _number(row.get("workload_wall_s")),
                _batch(row.get("batch_size_resolved")),
            )
        )
    return runs


def _number(text: str | None) -> float | None:
    try:
        value = float(text) if text else math.nan
    except ValueError:
        return None
    return value if math.isfinite(value) else None  # inf is no duration (a hand-edited table)


def _batch(text: str | None) -> int | None:
    number = _number(text)
    return int(number) if number is not None and number >= 1 else None


def _seconds(text: str | None) -> float | None:
    """Epoch seconds, or an ISO time (a table may have them); None when empty or unreadable."""
    number = _number(text)
    if number is not None or not text:
        return number
    try:
        stamp = datetime.fromisoformat(text)
    except ValueError:
        return None
    return (stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)).timestamp()


def no_runs_note(results: Path) -> str | None:
    """One line saying that `results` has no earlier runs to time the cells by (every cell is
    then planned at the time limit), and what it has instead; None when it has some."""
    if read_runs(results):
        return None
    runs = ResultPaths(results).runs
    manifests = len(ResultPaths(results).run_manifests())
    nearby = [
        folder
        for folder, table in [
            (results.parent, results / ResultPaths(results).runs.name),  # DIR is results/tables
            (results.parent, ResultPaths(results.parent).runs),  # DIR is results/runs
            (results / RESULTS, ResultPaths(results / RESULTS).runs),  # DIR holds results/
        ]
        if table.is_file()
    ]
    if manifests:
        why = (
            f"{manifests} run manifests, but no timed runs in {runs}, which the tables rule writes"
        )
    elif runs.is_file():
        why = f"{runs} has no timed runs"
    elif nearby:
        why = f"no {runs}; did you mean --results {nearby[0]}?"
    else:
        why = f"no {runs}"
    return f"note: no earlier runs were found under {results} ({why}): every cell is planned at the time limit"


@dataclass(frozen=True)
class _Measured:
    wall_s: float
    workload_s: float | None
    runs: int
    statuses: tuple[str, ...]  # of the runs timed: ("ok",), or every status when none is ok
    batch: int | None  # per device, that the runs timed trained (None: the table does not say)

    @property
    def ok(self) -> bool:
        return self.statuses == (Status.OK,)

    @property
    def startup_s(self) -> float:
        """Wall time before the workload started (0 where the table has no workload time)."""
        return max(self.wall_s - self.workload_s, 0.0) if self.workload_s is not None else 0.0

    @property
    def basis(self) -> str:
        if self.ok:
            return f"median of {self.runs} runs"
        return f"median of {self.runs} runs, none ok ({', '.join(self.statuses)})"


def _measured(runs: list[TimedRun]) -> dict[str, _Measured]:
    by_cell: dict[str, list[TimedRun]] = {}
    for run in runs:
        by_cell.setdefault(run.cell_id, []).append(run)
    found = {}
    for cell_id, group in by_cell.items():
        rows = [r for r in group if r.status == Status.OK] or group
        workload = [r.workload_wall_s for r in rows if r.workload_wall_s is not None]
        batches = [r.batch_size for r in rows if r.batch_size is not None]
        found[cell_id] = _Measured(
            statistics.median(r.wall_s for r in rows),
            statistics.median(workload) if workload else None,
            len(rows),
            tuple(sorted({r.status for r in rows})),
            statistics.median_low(batches) if batches else None,
        )
    return found


def _per_device_batch(spec: CellSpec, searched: Searched) -> int | None:
    """The batch per device the cell's runs will train: a `max` cell's search result where it
    found one, else the adapter's max_batch_size (the search's ceiling of a sort)."""
    if spec.cell.batch_size != "max":
        return int(spec.cell.batch_size)
    if (found := searched(spec.id)) is not None:
        return found
    try:
        from dlperf.adapters import get_adapter

        adapter = get_adapter(spec.cell.framework)
        return int(adapter.batch_size(spec.cell, adapter.resolved_options(spec.options)))  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - an adapter that cannot say: the cell is not scaled
        return None


def _reference(spec: CellSpec, measured: list[CellSpec]) -> CellSpec | None:
    """The measured cell most like `spec`: same precision, xla, variant, layout, then devices."""
    cell = spec.cell

    def likeness(other: CellSpec) -> tuple[bool, bool, bool, bool, int]:
        o = other.cell
        return (
            o.precision == cell.precision,
            o.xla == cell.xla,
            o.variant == cell.variant,
            o.layout == cell.layout,
            -abs(o.layout.devices - cell.layout.devices),
        )

    return max(measured, key=likeness, default=None)


def cell_durations(
    specs: list[CellSpec],
    runs: list[TimedRun],
    limit_s: float,
    searched: Searched = lambda cell_id: None,
) -> list[CellDuration]:
    """Each cell's planned wall time: measured, else scaled, else the time limit. `searched`:
    the value a `max` cell's search found (None: not searched yet, or found none)."""
    measured = _measured(runs)
    by_model: dict[tuple[str, str], list[CellSpec]] = {}  # the references: cells with ok runs
    for spec in specs:
        if spec.id in measured and measured[spec.id].ok:
            by_model.setdefault((spec.cell.framework, spec.cell.model), []).append(spec)
    durations = []
    for spec in specs:
        peers = by_model.get((spec.cell.framework, spec.cell.model), [])
        durations.append(_duration(spec, measured, peers, limit_s, searched))
    return durations


def _duration(
    spec: CellSpec,
    measured: dict[str, _Measured],
    peers: list[CellSpec],
    limit_s: float,
    searched: Searched,
) -> CellDuration:
    if spec.id in measured:
        m = measured[spec.id]
        limit = _limit_basis(limit_s, m.startup_s)
        work_s = m.workload_s if m.workload_s is not None else m.wall_s
        if not m.ok and Status.TIMEOUT in m.statuses and work_s < limit_s:
            # killed at a shorter limit than the suite's now: redone, it may run to this one
            basis = f"{limit}; {m.basis} after {m.wall_s:.0f} s"
            return _cell_duration(spec, m.startup_s + limit_s, "limit", basis)
        if m.workload_s is not None and m.workload_s > limit_s:
            # trained longer than the limit now lets a workload run: redone, it stops at it
            basis = f"{limit}; {m.basis} trained {m.workload_s:.0f} s, which the limit cuts short"
            return _cell_duration(spec, m.startup_s + limit_s, "limit", basis)
        return _cell_duration(spec, m.wall_s, "measured", m.basis)
    reference = _reference(spec, peers)
    batch = _per_device_batch(spec, searched)
    ref = measured[reference.id] if reference is not None else None
    ref_batch = ref and reference and (ref.batch or _per_device_batch(reference, searched))
    if reference is not None and ref is not None and batch and ref_batch:
        work_s = ref.workload_s if ref.workload_s is not None else ref.wall_s
        scaled_work_s = work_s * batch / ref_batch
        wall_s = ref.startup_s + min(scaled_work_s, limit_s)  # the limit stops the workload only
        basis = f"from {reference.id}: {ref.startup_s:.0f} s + {work_s:.0f} s x {batch}/{ref_batch}"
        if scaled_work_s > limit_s:
            basis += f", the workload capped at the time limit ({limit_s / 60:g} min)"
        return _cell_duration(spec, wall_s, "scaled", basis)
    return _cell_duration(spec, limit_s, "limit", _limit_basis(limit_s, 0.0))


def _limit_basis(limit_s: float, startup_s: float) -> str:
    after = f" after {startup_s:.0f} s start-up" if startup_s else ""
    return f"time limit {limit_s / 60:g} min{after}"


def _cell_duration(spec: CellSpec, wall_s: float, source: str, basis: str) -> CellDuration:
    cell = spec.cell
    return CellDuration(
        cell.id,
        cell.framework,
        cell.model,
        str(cell.layout),
        cell.layout.nodes,
        cell.layout.gpus_per_node,
        cell.layout.devices,
        wall_s,
        source,
        basis,
    )
