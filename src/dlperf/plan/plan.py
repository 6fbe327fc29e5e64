"""`dlperf plan`: how long a suite takes on a site, in GPU-hours and makespan, and in which order.

Each cell's wall time per run and its evidence: `dlperf.plan.durations`. GPU-hours of a run =
devices x wall time; node-hours = nodes x wall time (a shared single-node run counts its share of
the node, GPUs / GPUs per node). The schedule is `dlperf.plan.schedule`'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tabulate import tabulate

from dlperf.config import Suite
from dlperf.matrix import CellSpec
from dlperf.paths import RESULTS, MaxBatchPaths
from dlperf.plan.durations import SCALING_RULE, SOURCES, CellDuration, cell_durations, read_runs
from dlperf.plan.jobs import DEFAULT_TIME_LIMIT_S, Job, PlanError, Schedule, Site
from dlperf.plan.maxbatch import found_value, searched
from dlperf.plan.schedule import check_fits, schedule_campaign

HOURS = ("gpu_hours", "node_hours")  # a layout's and the total's hours, as the plan prints them


@dataclass(frozen=True)
class Plan:
    suite: str
    site: Site
    site_origin: str  # where nodes / GPUs per node / sharing came from
    repeats: int
    cells: tuple[CellDuration, ...]
    schedule: Schedule
    unplanned: tuple[str, ...] = ()  # runs the workflow may add that no figure here counts

    @property
    def makespan_s(self) -> float:
        return self.schedule.makespan_s

    @property
    def gap(self) -> float:
        """Planned makespan over the lower bound, minus one."""
        lower_s = self.schedule.bounds.lower_s
        return self.makespan_s / lower_s - 1 if lower_s > 0 else 0.0


# ------------------------------------------------------------------------------ the site


def machine_site(devices: int, kind: str) -> dict[str, Any]:
    """make_plan's site arguments for the local backend: this machine (its `devices` CPUs or
    GPUs), one node, one run at a time, as the workflow runs it there."""
    machine = f"this machine ({devices} {kind}, the local backend: one run at a time)"
    return {
        "nodes": 1,
        "gpus_per_node": devices,  # 0 (device cuda, no GPU here): no layout fits, _check_site says so
        "exclusive": True,
        "machine": machine,
        "device_kind": kind,
    }


def site_of(
    config: dict[str, Any],
    specs: list[CellSpec],
    nodes: int | None = None,
    gpus_per_node: int | None = None,
    exclusive: bool | None = None,
    machine: str | None = None,
    device_kind: str = "GPUs",
) -> tuple[Site, str]:
    """The campaign's cluster: `machine` (machine_site, its devices of `device_kind`), or
    flags, else the validated config's `site`, else what the suite needs."""
    site = config["site"]
    if (
        machine is not None
        and nodes is not None
        and gpus_per_node is not None
        and exclusive is not None
    ):
        return Site(nodes, gpus_per_node, exclusive, device_kind), machine
    origin = []
    if nodes is None:
        nodes = int(site["nodes"])
        if nodes <= 0:
            nodes = max(s.cell.layout.nodes for s in specs)
            origin.append(f"nodes: {nodes}, the widest layout's (site.nodes unset)")
        else:
            origin.append(f"nodes: {nodes} from site.nodes")
    else:
        origin.append(f"nodes: {nodes} from --nodes")
    if gpus_per_node is None:
        gpus_per_node = int(site["gpus_per_node_max"])
        key = "site.gpus_per_node_max"
        if gpus_per_node <= 0:
            gpus_per_node = max(s.cell.layout.gpus_per_node for s in specs)
            key = f"the largest layout's, as {key} is 0"
        origin.append(f"GPUs per node: {gpus_per_node} from {key}")
    else:
        origin.append(f"GPUs per node: {gpus_per_node} from --gpus-per-node")
    if exclusive is None:
        exclusive = bool(site["exclusive"])
        origin.append(f"{'exclusive' if exclusive else 'shared'} from site.exclusive")
    else:
        origin.append(f"{'exclusive' if exclusive else 'shared'} from the flag")
    if nodes < 1 or gpus_per_node < 1:
        raise PlanError(
            f"a site needs at least 1 node and 1 GPU per node, not {nodes}x{gpus_per_node}"
        )
    return Site(nodes, gpus_per_node, exclusive), "; ".join(origin)


def _check_site(specs: list[CellSpec], site: Site, origin: str, machine: str | None) -> None:
    """Every layout fits the site; else which cell does not, and what set the site's size: the
    flag or key, or this machine (the local backend: no site key was read)."""
    for spec in specs:
        layout = spec.cell.layout
        fits = layout.nodes <= site.nodes and layout.gpus_per_node <= site.gpus_per_node
        if machine is not None and not fits:
            raise PlanError(
                f"cell {spec.id}: layout {layout} needs {layout.nodes} node(s) x "
                f"{layout.gpus_per_node} device(s); the site is {machine}. Drop the layout from the "
                "local suite, or plan it for a cluster (backend: slurm, or --nodes and "
                "--gpus-per-node)."
            )
        if layout.nodes > site.nodes:
            key = "--nodes" if "from --nodes" in origin else "site.nodes"
            raise PlanError(
                f"cell {spec.id}: layout {layout} needs {layout.nodes} nodes; the site has "
                f"{site.nodes} ({key}). Give the campaign more nodes or drop the layout."
            )
        if layout.gpus_per_node > site.gpus_per_node:
            key = (
                "--gpus-per-node" if "from --gpus-per-node" in origin else "site.gpus_per_node_max"
            )
            raise PlanError(
                f"cell {spec.id}: layout {layout} needs {layout.gpus_per_node} GPUs per node; "
                f"a node of the site has {site.gpus_per_node} ({key})."
            )


# ------------------------------------------------------------------------------ the plan


def make_plan(
    config: dict[str, Any],
    results: Path = RESULTS,
    *,
    nodes: int | None = None,
    gpus_per_node: int | None = None,
    exclusive: bool | None = None,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    machine: str | None = None,
    device_kind: str = "GPUs",
) -> Plan:
    """The plan of a validated suite config on its site (arguments override the site)."""
    suite = Suite(config)
    specs = suite.cell_specs()
    if not specs or suite.repeats < 1:
        raise PlanError("the suite has nothing to run: no cells (check its cases) or no repeats")
    site, origin = site_of(config, specs, nodes, gpus_per_node, exclusive, machine, device_kind)
    _check_site(specs, site, origin, machine)
    durations = cell_durations(
        specs,
        read_runs(Path(results)),
        float(config["time_limit_min"]) * 60,
        lambda cell_id: found_value(MaxBatchPaths(cell_id, Path(results)).result, cell_id),
    )
    round_jobs = [Job((d.cell_id, 1), d.nodes, d.gpus_per_node, d.wall_s) for d in durations]
    job = check_fits(round_jobs, site)
    if job is not None:  # _check_site said it first; kept as the scheduler's own guard
        raise PlanError(f"cell {job.key[0]} does not fit the site {site}")
    schedule = schedule_campaign(round_jobs, suite.repeats, site, time_limit_s)
    name = str(config["name"])
    unplanned = _unplanned(config, specs, suite.repeats)
    return Plan(name, site, origin, suite.repeats, tuple(durations), schedule, unplanned)


def _unplanned(config: dict[str, Any], specs: list[CellSpec], repeats: int) -> tuple[str, ...]:
    """What the plan leaves out, said beside its figures: the probe runs of `max` searches
    (each a run of its cell's allocation, before the cell's runs) and the runs adaptive repeats
    may add."""
    said = []
    searches = sum(searched(spec) is not None for spec in specs)
    if searches:
        said.append(
            f"the probe runs of {searches} max search{'es' * (searches > 1)} (each probe a run "
            "of its cell's allocation, and a whole run to confirm what it found)"
        )
    adaptive = config.get("adaptive_repeats") or {}
    extra = int(adaptive.get("max", repeats)) - repeats
    if extra > 0:
        said.append(
            f"up to {extra} more runs per cell that adaptive repeats may add "
            f"({extra * len(specs)} runs at most)"
        )
    return tuple(said)


def run_priorities(plan: Plan) -> dict[tuple[str, int], int]:
    """Priority per (cell_id, repeat) for Snakemake: higher starts earlier; repeat k of every
    cell comes before repeat k+1."""
    placements = plan.schedule.placements  # in the order the list scheduler was given them
    return {p.key: len(placements) - rank for rank, p in enumerate(placements)}


def cell_rows(plan: Plan) -> list[dict[str, Any]]:
    """Each cell's duration with its planned runs, GPU-hours and node-hours."""
    site = plan.site
    rows = []
    for d in plan.cells:
        shared = not site.exclusive and d.nodes == 1  # holds its GPUs' share of the node
        share = d.gpus_per_node / site.gpus_per_node if shared else d.nodes
        rows.append(
            {
                **d.__dict__,
                "runs": plan.repeats,
                "gpu_hours": d.devices * d.wall_s * plan.repeats / 3600,
                "node_hours": share * d.wall_s * plan.repeats / 3600,
            }
        )
    return rows


def layout_rows(plan: Plan) -> list[dict[str, Any]]:
    """Per layout (fewest devices first) and in total: runs, runs per duration source,
    GPU-hours and node-hours."""
    cells = cell_rows(plan)
    order = sorted({(c["devices"], c["nodes"], c["layout"]) for c in cells})
    groups = {layout: [c for c in cells if c["layout"] == layout] for *_, layout in order}
    groups["total"] = cells
    return [
        {
            "layout": layout,
            "runs": sum(c["runs"] for c in group),
            **{s: sum(c["runs"] for c in group if c["duration_source"] == s) for s in SOURCES},
            **{h: math.fsum(c[h] for c in group) for h in HOURS},
        }
        for layout, group in groups.items()
    ]


def run_rows(plan: Plan) -> list[dict[str, Any]]:
    """The schedule: each run's priority, planned start and end, and nodes."""
    priority = run_priorities(plan)
    return [
        {
            "cell_id": p.key[0],
            "repeat": p.key[1],
            "priority": priority[p.key],
            "start_s": p.start_s,
            "end_s": p.end_s,
            "nodes": ",".join(map(str, p.node_ids)),
        }
        for p in plan.schedule.placements
    ]


def text_table(
    rows: list[dict[str, Any]], columns: list[str], floatfmt: str, written: tuple[str, ...] = ()
) -> str:
    """Rows as a plain text table: text to the left, numbers to the right; `written`: number
    columns already written as text (hours), kept as they are."""
    table = [[r[c] for c in columns] for r in rows]
    if not written or not table:
        return tabulate(table, columns, "plain", floatfmt=floatfmt)
    align = [
        "right" if c in written or isinstance(table[0][i], int | float) else "left"
        for i, c in enumerate(columns)
    ]
    kept = [i for i, c in enumerate(columns) if c in written]
    return tabulate(
        table, columns, "plain", floatfmt=floatfmt, disable_numparse=kept, colalign=align
    )


def plan_dict(plan: Plan) -> dict[str, Any]:
    """The plan as plain data (JSON-ready), for the report to state the plan that was followed."""
    schedule, bounds = plan.schedule, plan.schedule.bounds
    return {
        "suite": plan.suite,
        "site": {**plan.site.__dict__, "origin": plan.site_origin},
        "repeats": plan.repeats,
        "runs": len(schedule.placements),
        "makespan_s": plan.makespan_s,
        "bounds": {**bounds.__dict__, "lower_s": bounds.lower_s},
        "gap": plan.gap,
        "solver": schedule.solver.__dict__,
        "scaling_rule": SCALING_RULE,
        "layouts": layout_rows(plan),
        "cells": cell_rows(plan),
    }


def hours_text(value_h: float) -> str:
    """Hours as the plan and its report section write them: two decimals, and three significant
    digits under an hour (a short campaign read '0.00 h'; 3599 s reads 1.00, not 1)."""
    short = f"{value_h:.3g}"
    return f"{value_h:.2f}" if value_h == 0 or value_h >= 1 or float(short) >= 1 else short


def hours(seconds: float) -> str:
    """Seconds in hours, written as hours_text writes them."""
    return hours_text(seconds / 3600)


def _hours(seconds: float) -> str:
    return f"{hours(seconds)} h"


def plan_text(plan: Plan, cells: bool = True) -> str:
    """The plan as the dry run's log shows it."""
    schedule, bounds = plan.schedule, plan.schedule.bounds
    layouts = ["layout", "runs", *SOURCES, *HOURS]
    lines = [
        f"plan of {plan.suite}: {len(plan.cells)} cells x {plan.repeats} repeats = "
        f"{len(schedule.placements)} runs on {plan.site}",
        f"  site: {plan.site_origin}",
        "",
        text_table(
            [{**r, **{h: hours_text(r[h]) for h in HOURS}} for r in layout_rows(plan)],
            layouts,
            ".2f",
            HOURS,
        ),
        "",
        f"makespan, planned: {_hours(plan.makespan_s)}",
        f"  sequential bound (one run after another): {_hours(bounds.sequential_s)} "
        f"(planned = {plan.makespan_s / bounds.sequential_s:.3f} of it)"
        if bounds.sequential_s
        else "  sequential bound: 0 h",
        f"  lower bound: {_hours(bounds.lower_s)} = max(allocated {plan.site.device}-hours / "
        f"{plan.site.gpus} {plan.site.device_kind} {_hours(bounds.area_s)}, longest run {_hours(bounds.longest_s)}, configuration LP "
        + (_hours(bounds.configuration_lp_s) if bounds.configuration_lp_s is not None else "n/a")
        + ")",
        f"  gap: planned is {plan.gap:.1%} above the lower bound",
        _solver_line(plan),
        "order: repeat k of every cell before repeat k+1; jobs that fit start at once, later ones "
        "backfill without delaying the first waiting run",
        f"durations: measured = median wall time (started on its nodes to noticed) of the cell's "
        f"earlier runs; {SCALING_RULE}; limit = time_limit_min (after the measured start-up)",
        *(f"not planned: {what}" for what in plan.unplanned),
    ]
    if cells:
        columns = ["cell_id", "wall_s", "duration_source", "basis"]
        lines += ["", text_table(cell_rows(plan), columns, ".0f")]
    return "\n".join(lines)


def _solver_line(plan: Plan) -> str:
    s = plan.schedule.solver
    objective = f"{_hours(s.objective_s)} per repeat round" if s.objective_s is not None else "none"
    text = (
        f"solver: CBC {s.method} over {s.groups} groups x {s.configurations} node configurations: "
        f"{s.status}, objective {objective}, {s.solve_s:.1f} s (limit {s.time_limit_s:g} s); "
        f"kept order: {s.order}"
    )
    return text + (f" ({s.note})" if s.note else "")
