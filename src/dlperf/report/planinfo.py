"""The campaign plan the runs followed (dlperf.plan.plan_dict), as the report states it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PlanLayout:
    layout: str  # or "total"
    runs: int
    measured: int  # runs whose planned duration came from earlier runs of the cell
    scaled: int  # ... from a measured cell of the same framework and model
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
    solver: str  # method and status
    layouts: tuple[PlanLayout, ...]


def _hours(seconds: Any) -> str:
    return f"{float(seconds) / 3600:.2f}"


def plan_info(plan: Mapping[str, Any]) -> PlanInfo:
    bounds, site, solver = plan["bounds"], plan["site"], plan["solver"]
    return PlanInfo(
        runs=int(plan["runs"]),
        repeats=int(plan["repeats"]),
        nodes=int(site["nodes"]),
        gpus_per_node=int(site["gpus_per_node"]),
        exclusive=bool(site["exclusive"]),
        site_origin=str(site["origin"]),
        makespan_h=_hours(plan["makespan_s"]),
        sequential_h=_hours(bounds["sequential_s"]),
        lower_h=_hours(bounds["lower_s"]),
        gap=f"{float(plan['gap']) * 100:.1f}%",
        solver=f"{solver['method']}: {solver['status']}",
        layouts=tuple(
            PlanLayout(
                str(row["layout"]),
                int(row["runs"]),
                int(row["measured"]),
                int(row["scaled"]),
                int(row["limit"]),
                f"{float(row['gpu_hours']):.3f}",
            )
            for row in plan["layouts"]
        ),
    )
