"""The phase MILP that orders one repeat round, and the configuration LP that bounds a campaign.

A node configuration is how many lanes of each multi-node width run side by side, the rest of the
nodes a GPU pool for single-node jobs. The MILP (CBC through PuLP, with a time limit) groups a
round's jobs by resource class and duration class and splits the groups over phases, each phase a
configuration; the LP is its preemptive relaxation: at any instant the running jobs fit one
configuration.
"""

from __future__ import annotations

import math
import time
import warnings
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import pulp

from dlperf.plan.jobs import Bounds, Job, Site, SolverReport

DURATION_CLASS_RATIO = 1.05  # jobs within 5% of each other's wall time share a MILP group
MAX_CONFIGURATIONS = 400  # more node configurations than this: no MILP, list schedule only
MAX_MILP_PAIRS = 20_000  # groups x configurations above this: CBC overruns its limit; no MILP
MILP_GAP_REL = 0.01  # CBC stops once its solution is within 1% of its own bound
# CBC writes its solution with 8 significant digits, rounded either way: a bound read as written
# may exceed the true optimum (and a makespan that meets it), so the LP is taken this much lower
LP_READ_REL = 1e-7
# The phase MILP's method and statuses as the plan records them (solver.method, solver.status);
# the report words each in every language (any other status is PuLP's own, shown as it is).
MILP_METHOD = "phase MILP"
MILP_OPTIMAL = f"optimal within {MILP_GAP_REL:.0%}"
MILP_FEASIBLE = "time limit, feasible"
MILP_NOT_RUN = "not run"


# ------------------------------------------------------------------------------ configurations


@dataclass(frozen=True)
class Configuration:
    """Lanes per multi-node width side by side; the remaining nodes form a GPU pool."""

    lanes: tuple[tuple[int, int], ...]  # (width in nodes, lanes)
    pool_nodes: int

    def lanes_of(self, width: int) -> int:
        return dict(self.lanes).get(width, 0)


def configurations(widths: Sequence[int], site: Site, pool_used: bool) -> list[Configuration]:
    """Every way to run lanes of `widths` side by side; without pool jobs only maximal ones."""
    widths = sorted(set(widths), reverse=True)
    found: list[Configuration] = []

    def extend(i: int, free: int, lanes: tuple[tuple[int, int], ...]) -> None:
        if len(found) > MAX_CONFIGURATIONS:
            return
        if i == len(widths):
            maximal = not widths or free < widths[-1]
            if lanes and (pool_used or maximal):
                found.append(Configuration(lanes, free))
            elif pool_used and free:
                found.append(Configuration((), free))
            return
        for count in range(free // widths[i], -1, -1):
            step = ((widths[i], count),) if count else ()
            extend(i + 1, free - count * widths[i], lanes + step)

    extend(0, site.nodes, ())
    return found


# ------------------------------------------------------------------------------ bounds


def bounds(round_jobs: Sequence[Job], rounds: int, site: Site) -> Bounds:
    """The bounds of `rounds` repeats of `round_jobs` (summed run by run, in campaign order)."""
    every = [j for _ in range(rounds) for j in round_jobs]  # no copies: 5,000 runs, 1,000 jobs
    area = sum(j.held_gpus(site) * j.wall_s for j in every) / site.gpus
    lp = configuration_lp(round_jobs, site)
    return Bounds(
        sequential_s=sum(j.wall_s for j in every),
        area_s=area,
        longest_s=max((j.wall_s for j in every), default=0.0),
        configuration_lp_s=None if lp is None else lp * rounds,
    )


def configuration_lp(jobs: Sequence[Job], site: Site) -> float | None:
    """Shortest preemptive schedule of `jobs`: time per node configuration, work covered."""
    lane_work: dict[int, float] = defaultdict(float)
    pool_gpu_s = 0.0
    for job in jobs:
        if job.whole_nodes(site):
            lane_work[job.nodes] += job.wall_s
        else:
            pool_gpu_s += job.gpus_per_node * job.wall_s
    configs = configurations(list(lane_work), site, pool_gpu_s > 0)
    if not configs or len(configs) > MAX_CONFIGURATIONS:
        return None
    prob = pulp.LpProblem("configuration_lp", pulp.LpMinimize)
    x = [_variable(prob, f"x{c}", 0) for c in range(len(configs))]
    prob += pulp.lpSum(x)
    for width, work_s in lane_work.items():
        prob += pulp.lpSum(cfg.lanes_of(width) * x[c] for c, cfg in enumerate(configs)) >= work_s
    if pool_gpu_s:
        pool = [cfg.pool_nodes * site.gpus_per_node for cfg in configs]
        prob += pulp.lpSum(pool[c] * x[c] for c in range(len(configs))) >= pool_gpu_s
    if _solve(prob, time_limit_s=10.0) != pulp.LpSolutionOptimal:
        return None
    return float(pulp.value(prob.objective) or 0.0) * (1 - LP_READ_REL)


def _variable(
    prob: pulp.LpProblem,
    name: str,
    low: float,
    high: float | None = None,
    cat: str = pulp.LpContinuous,
) -> pulp.LpVariable:
    if hasattr(prob, "add_variable"):  # PuLP 3.3 and later
        return prob.add_variable(name, low, high, cat=cat)
    return pulp.LpVariable(name, low, high, cat=cat)


def _solve(prob: pulp.LpProblem, time_limit_s: float) -> int:
    """CBC as PuLP bundles it; a solver that fails to run counts as finding nothing."""
    with warnings.catch_warnings():  # PuLP 3.3 announces that 4.0 unbundles CBC
        warnings.simplefilter("ignore", DeprecationWarning)
        solver = pulp.PULP_CBC_CMD(
            msg=False,
            timeLimit=max(1, math.ceil(time_limit_s)),
            gapRel=MILP_GAP_REL,
            threads=1,
        )
        try:
            prob.solve(solver)
        except (pulp.PulpError, OSError):
            return pulp.LpSolutionNoSolutionFound
    return int(prob.sol_status)


# ------------------------------------------------------------------------------ phase MILP


@dataclass(frozen=True)
class _Group:
    whole: bool
    size: int  # nodes (whole) or GPUs (pool)
    wall_s: float  # the longest member: conservative
    members: tuple[int, ...]  # indices into the round's jobs, longest first


def _groups(jobs: Sequence[Job], site: Site) -> list[_Group]:
    buckets: dict[tuple[bool, int, int], list[int]] = defaultdict(list)
    for i, job in enumerate(jobs):
        whole = job.whole_nodes(site)
        size = job.nodes if whole else job.gpus_per_node
        duration_class = math.floor(math.log(max(job.wall_s, 1e-3), DURATION_CLASS_RATIO))
        buckets[(whole, size, duration_class)].append(i)
    groups = []
    for (whole, size, _), members in sorted(buckets.items(), reverse=True):
        members.sort(key=lambda i: -jobs[i].wall_s)
        groups.append(_Group(whole, size, jobs[members[0]].wall_s, tuple(members)))
    return groups


def _fits(group: _Group, config: Configuration) -> bool:
    return config.lanes_of(group.size) > 0 if group.whole else config.pool_nodes > 0


def phase_milp(
    jobs: Sequence[Job], site: Site, time_limit_s: float
) -> tuple[list[int] | None, SolverReport]:
    """One round's order by phases (None when the solver found nothing), and what it did."""
    start = time.perf_counter()
    groups = _groups(jobs, site)
    widths = sorted({g.size for g in groups if g.whole})
    configs = configurations(widths, site, any(not g.whole for g in groups))

    def report(status: str, objective: float | None, note: str = "") -> SolverReport:
        elapsed = time.perf_counter() - start
        return SolverReport(
            MILP_METHOD, status, objective, elapsed, time_limit_s, len(groups), len(configs), "",
            note,
        )  # fmt: skip

    if len(configs) > MAX_CONFIGURATIONS:
        note = f"more than {MAX_CONFIGURATIONS} node configurations"
        return None, report(MILP_NOT_RUN, None, note)
    if len(groups) * len(configs) > MAX_MILP_PAIRS:
        note = f"MILP too large: more than {MAX_MILP_PAIRS} groups x configurations"
        return None, report(MILP_NOT_RUN, None, note)
    prob = pulp.LpProblem("phases", pulp.LpMinimize)
    x = [_variable(prob, f"x{c}", 0) for c in range(len(configs))]
    y: dict[tuple[int, int], pulp.LpVariable] = {}
    for k, group in enumerate(groups):
        n = len(group.members)
        for c, config in enumerate(configs):
            if not _fits(group, config):
                continue
            y[k, c] = _variable(prob, f"y{k}_{c}", 0, n, pulp.LpInteger)
            used = _variable(prob, f"z{k}_{c}", 0, 1, pulp.LpBinary)
            prob += y[k, c] <= n * used
            prob += group.wall_s * used <= x[c]
        prob += pulp.lpSum(y[k, c] for c in range(len(configs)) if (k, c) in y) == n
    for c, config in enumerate(configs):
        for width, lanes in config.lanes:
            work = [
                groups[k].wall_s * y[k, c]
                for k in range(len(groups))
                if (k, c) in y and groups[k].whole and groups[k].size == width
            ]
            prob += pulp.lpSum(work) <= lanes * x[c]
        if config.pool_nodes:
            pool = [
                groups[k].size * groups[k].wall_s * y[k, c]
                for k in range(len(groups))
                if (k, c) in y and not groups[k].whole
            ]
            prob += pulp.lpSum(pool) <= config.pool_nodes * site.gpus_per_node * x[c]
    prob += pulp.lpSum(x)
    status = _solve(prob, time_limit_s)
    if status not in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible):
        return None, report(pulp.LpSolution[status], None)
    order = _phase_order(jobs, groups, configs, x, y)
    name = MILP_OPTIMAL if status == pulp.LpSolutionOptimal else MILP_FEASIBLE
    return order, report(name, float(pulp.value(prob.objective) or 0.0))


def _phase_order(
    jobs: Sequence[Job],
    groups: list[_Group],
    configs: list[Configuration],
    x: list[pulp.LpVariable],
    y: dict[tuple[int, int], pulp.LpVariable],
) -> list[int]:
    """Phases widest first (then longest); a group's longest members go to the first phases."""
    phases = sorted(
        range(len(configs)),
        key=lambda c: (-max((w for w, _ in configs[c].lanes), default=0), -(x[c].value() or 0)),
    )
    taken: dict[int, int] = defaultdict(int)
    order: list[int] = []
    for c in phases:
        phase: list[int] = []
        for k, group in enumerate(groups):
            count = round(y[k, c].value() or 0) if (k, c) in y else 0
            phase += group.members[taken[k] : taken[k] + count]
            taken[k] += count
        order += sorted(phase, key=lambda i: (-jobs[i].nodes, -jobs[i].wall_s))
    for k, group in enumerate(groups):  # rounding left some out: they go last
        order += group.members[taken[k] :]
    return order
