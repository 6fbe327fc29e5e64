"""The campaign plan the runs followed (dlperf.plan.plan_dict), as the report states it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dlperf.i18n import Phrase, Text
from dlperf.plan.milp import (
    MILP_FEASIBLE,
    MILP_GAP_REL,
    MILP_METHOD,
    MILP_NOT_RUN,
    MILP_OPTIMAL,
)
from dlperf.plan.plan import hours, hours_text
from dlperf.plan.schedule import ORDER_WIDEST


@dataclass(frozen=True)
class PlanLayout:
    layout: str  # or "total"
    runs: int
    measured: int  # runs whose planned duration came from earlier runs of the cell
    scaled: int  # ... from a cell of the same framework and model with ok runs
    limit: int  # ... from the time limit (an upper bound)
    gpu_hours: str


@dataclass(frozen=True)
class PlanInfo:
    runs: int
    repeats: int
    nodes: int
    gpus_per_node: int
    exclusive: bool
    site_origin: str
    makespan_h: str
    sequential_h: str
    lower_h: str
    gap: str  # planned over the lower bound, minus one
    solver: Text  # method and status
    layouts: tuple[PlanLayout, ...]
    device_kind: str = "GPUs"  # the site's (dlperf.plan.jobs.Site): GPUs, or a CPU site's CPUs


def solver_text(method: str, status: str, order: str = MILP_METHOD) -> Text:
    """The solver's method and status in words: dlperf.plan.milp's own in the catalogs, any other
    (PuLP's status) as recorded; and the order the runs follow where it is not the MILP's (it
    gave none, or the list schedule's own order was shorter)."""
    statuses: dict[str, Text] = {
        MILP_OPTIMAL: Phrase.of("plan.status_optimal", gap=f"{MILP_GAP_REL:.0%}"),
        MILP_FEASIBLE: Phrase.of("plan.status_feasible"),
        MILP_NOT_RUN: Phrase.of("plan.status_not_run"),
    }
    solver = Phrase.of(
        "plan.solver_value",
        method=Phrase.of("plan.method_milp") if method == MILP_METHOD else method,
        status=statuses.get(status, status),
    )
    if order == MILP_METHOD:
        return solver
    followed = Phrase.of("plan.order_widest") if order == ORDER_WIDEST else order
    return Phrase.of("plan.solver_order", solver=solver, order=followed)


def plan_info(plan: Mapping[str, Any]) -> PlanInfo:
    bounds, site, solver = plan["bounds"], plan["site"], plan["solver"]
    return PlanInfo(
        runs=int(plan["runs"]),
        repeats=int(plan["repeats"]),
        nodes=int(site["nodes"]),
        gpus_per_node=int(site["gpus_per_node"]),
        exclusive=bool(site["exclusive"]),
        site_origin=str(site["origin"]),
        makespan_h=hours(float(plan["makespan_s"])),
        sequential_h=hours(float(bounds["sequential_s"])),
        lower_h=hours(float(bounds["lower_s"])),
        gap=f"{float(plan['gap']) * 100:.1f}%",
        solver=solver_text(
            str(solver["method"]), str(solver["status"]), str(solver.get("order", MILP_METHOD))
        ),
        layouts=tuple(
            PlanLayout(
                str(row["layout"]),
                int(row["runs"]),
                int(row["measured"]),
                int(row["scaled"]),
                int(row["limit"]),
                hours_text(float(row["gpu_hours"])),
            )
            for row in plan["layouts"]
        ),
        device_kind=str(site.get("device_kind", "GPUs")),  # a plan written before it was recorded
    )
