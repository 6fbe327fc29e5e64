"""A cell's planned wall time per run (start-up included: submitted to noticed), from the best
evidence there is, and which it is (`duration_source`):

- measured: the median wall time of the cell's earlier runs in `<results>/tables/runs.tsv`
  (its ok runs; all its timed runs when none is ok);
- scaled: from a measured cell of the same framework and model (SCALING_RULE below);
- limit: the suite's `time_limit_min`, an upper bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dlperf.matrix import CellSpec
from dlperf.paths import ResultPaths
from dlperf.plan.jobs import PlanError

SCALING_RULE = (
    "scaled wall = reference start-up + reference workload time x (batch per device / "
    "reference's): every cell runs the same steps, so the work per device grows with the batch "
    "per device (communication and precision are not modelled); capped at the time limit"
)
SOURCES = ("measured", "scaled", "limit")


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


def read_runs(results: Path) -> pd.DataFrame:
    """Earlier runs with their wall time (`wall_s` = noticed - submitted); empty when none."""
    path = ResultPaths(results).runs
    if not path.is_file():
        return pd.DataFrame(columns=["cell_id", "status", "wall_s", "workload_wall_s"])
    try:
        runs = pd.read_csv(path, sep="\t")
    except (OSError, ValueError, pd.errors.ParserError) as err:
        raise PlanError(f"{path}: cannot read the runs table: {err}") from None
    for column in ("cell_id", "status", "submitted_at", "noticed_at", "workload_wall_s"):
        if column not in runs:
            runs[column] = math.nan
    runs["wall_s"] = _seconds(runs["noticed_at"]) - _seconds(runs["submitted_at"])
    runs["workload_wall_s"] = pd.to_numeric(runs["workload_wall_s"], errors="coerce")
    timed = runs[runs["wall_s"].gt(0)]
    return timed[["cell_id", "status", "wall_s", "workload_wall_s"]]


def no_runs_note(results: Path) -> str | None:
    """One line saying that `results` has no earlier runs to time the cells by (every cell is
    then planned at the time limit), and what it has instead; None when it has some."""
    if not read_runs(results).empty:
        return None
    runs = ResultPaths(results).runs
    manifests = len(ResultPaths(results).run_manifests())
    nearby = [
        folder
        for folder, table in [
            (results.parent, results / "runs.tsv"),  # DIR is results/tables
            (results.parent, ResultPaths(results.parent).runs),  # DIR is results/runs
            (results / "results", ResultPaths(results / "results").runs),  # DIR holds results/
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


def _seconds(column: pd.Series) -> pd.Series:
    numbers = pd.to_numeric(column, errors="coerce")
    if numbers.notna().any() or column.isna().all():
        return numbers
    stamps = pd.to_datetime(column, errors="coerce", utc=True)  # ISO times, if a table has them
    return (stamps - pd.Timestamp(0, tz="UTC")).dt.total_seconds()


@dataclass(frozen=True)
class _Measured:
    wall_s: float
    workload_s: float | None
    runs: int


def _measured(runs: pd.DataFrame) -> dict[str, _Measured]:
    found = {}
    for cell_id, group in runs.groupby("cell_id"):
        ok = group[group["status"] == "ok"]
        rows = ok if len(ok) else group
        workload = rows["workload_wall_s"].dropna()
        found[str(cell_id)] = _Measured(
            float(rows["wall_s"].median()),
            float(workload.median()) if len(workload) else None,
            len(rows),
        )
    return found


def _per_device_batch(spec: CellSpec) -> int | None:
    if spec.cell.batch_size != "max":
        return int(spec.cell.batch_size)
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


def cell_durations(specs: list[CellSpec], runs: pd.DataFrame, limit_s: float) -> list[CellDuration]:
    """Each cell's planned wall time: measured, else scaled, else the time limit."""
    measured = _measured(runs)
    by_model: dict[tuple[str, str], list[CellSpec]] = {}
    for spec in specs:
        if spec.id in measured:
            by_model.setdefault((spec.cell.framework, spec.cell.model), []).append(spec)
    durations = []
    for spec in specs:
        peers = by_model.get((spec.cell.framework, spec.cell.model), [])
        durations.append(_duration(spec, measured, peers, limit_s))
    return durations


def _duration(
    spec: CellSpec, measured: dict[str, _Measured], peers: list[CellSpec], limit_s: float
) -> CellDuration:
    if spec.id in measured:
        m = measured[spec.id]
        return _cell_duration(spec, m.wall_s, "measured", f"median of {m.runs} runs")
    reference = _reference(spec, peers)
    batch, ref_batch = _per_device_batch(spec), reference and _per_device_batch(reference)
    if reference is not None and batch and ref_batch:
        ref = measured[reference.id]
        work_s = ref.workload_s if ref.workload_s is not None else ref.wall_s
        startup_s = max(ref.wall_s - work_s, 0.0)
        wall_s = min(startup_s + work_s * batch / ref_batch, limit_s)
        basis = f"from {reference.id}: {startup_s:.0f} s + {work_s:.0f} s x {batch}/{ref_batch}"
        return _cell_duration(spec, wall_s, "scaled", basis)
    return _cell_duration(spec, limit_s, "limit", f"time limit {limit_s / 60:g} min")


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
