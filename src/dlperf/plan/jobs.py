"""What the scheduler works with: the site, its jobs (runs), where and when each ran, and the
bounds and solver report of a schedule."""

from __future__ import annotations

from dataclasses import dataclass

from dlperf.errors import ConfigError

# The plan solver's time limit, in seconds. `dlperf plan` (its --time-limit-s, and make_plan's
# default) may wait longer for a better order than the plan the workflow makes when it starts,
# which every run and dry run waits for; the plan rule makes that same plan with the same limit,
# so the report states the one followed.
DEFAULT_TIME_LIMIT_S = 4.0
WORKFLOW_TIME_LIMIT_S = 2.0


class PlanError(ConfigError):
    """A plan that cannot be made; the message says what to change."""


@dataclass(frozen=True)
class Site:
    """The cluster the campaign runs on."""

    nodes: int
    gpus_per_node: int
    exclusive: bool
    device_kind: str = (
        "GPUs"  # what its devices are: the local machine's kind, else a cluster's GPUs
    )

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def device(self) -> str:
        """One of its devices, as in 'GPU-hours'."""
        return self.device_kind.removesuffix("s")

    def __str__(self) -> str:
        share = "exclusive" if self.exclusive else "shared"
        return f"{self.nodes} nodes x {self.gpus_per_node} {self.device_kind} ({share})"


@dataclass(frozen=True)
class Job:
    """One run: what it asks for and how long it holds it."""

    key: tuple[str, int]  # (cell_id, repeat)
    nodes: int
    gpus_per_node: int
    wall_s: float

    def whole_nodes(self, site: Site) -> bool:
        return site.exclusive or self.nodes > 1

    def held_gpus(self, site: Site) -> int:
        """GPUs nobody else can use while the job runs."""
        return self.nodes * site.gpus_per_node if self.whole_nodes(site) else self.gpus_per_node

    def held_nodes(self, site: Site) -> float:
        return self.held_gpus(site) / site.gpus_per_node


@dataclass(frozen=True)
class Placement:
    key: tuple[str, int]
    start_s: float
    end_s: float
    node_ids: tuple[int, ...]


@dataclass(frozen=True)
class Bounds:
    """Makespan bounds of a campaign (seconds)."""

    sequential_s: float  # every job one after another
    area_s: float  # allocated GPU-seconds / the site's GPUs
    longest_s: float  # the longest job
    configuration_lp_s: float | None  # the preemptive relaxation; None when not solved

    @property
    def lower_s(self) -> float:
        return max(self.area_s, self.longest_s, self.configuration_lp_s or 0.0)


@dataclass(frozen=True)
class SolverReport:
    """What the solver did, for the plan's text: never hides a failure."""

    method: str  # "phase MILP" or "list schedule"
    status: str
    objective_s: float | None  # MILP objective: one round's length (area within phases)
    solve_s: float
    time_limit_s: float
    groups: int
    configurations: int
    order: str  # which order the kept schedule followed
    note: str = ""


@dataclass(frozen=True)
class Schedule:
    placements: tuple[Placement, ...]  # in priority order (earliest planned first)
    makespan_s: float
    bounds: Bounds
    solver: SolverReport
