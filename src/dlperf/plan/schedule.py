"""Packing runs onto the nodes of a site and onto time: bounds, a phase MILP, a list scheduler.

Pure scheduling, no dlperf config: `dlperf.plan.plan` builds the jobs and prints the result.

Resource model. A site has `nodes` nodes with `gpus_per_node` GPUs each. A job (one run) asks for
`nodes` x `gpus_per_node`. A multi-node job holds whole nodes; so does every job on an exclusive
site. On a shared site a single-node job holds its GPUs only, and jobs share a node up to its GPU
count.

Method. Every repeat round (repeat k of every cell) holds the same jobs, so one round is packed:
its jobs are grouped by resource class and duration class and a compact MILP (CBC through PuLP,
with a time limit) splits the groups over phases, each phase a node configuration (how many lanes
of each multi-node width run side by side, the rest of the nodes a GPU pool for single-node jobs).
The phases give the order of a round; rounds follow each other (repeat k of every cell before
repeat k+1), and a list scheduler with backfilling (a reservation for the first job that does not
fit) places the campaign's jobs in that order. A widest-first, longest-first order is scheduled
too and the shorter of the two campaigns is kept. The lower bound is the largest of: allocated
GPU-hours over the site's GPUs, the longest job, and the configuration LP (the preemptive
relaxation: at any instant the running jobs fit one node configuration).
"""

from __future__ import annotations

import heapq
import math
import time
import warnings
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import pulp

DURATION_CLASS_RATIO = 1.05  # jobs within 5% of each other's wall time share a MILP group
MAX_CONFIGURATIONS = 400  # more node configurations than this: no MILP, list schedule only
# queued jobs the list scheduler looks at per event (as Slurm's bf_max_job_test)
BACKFILL_LOOKAHEAD = 256
MAX_MILP_PAIRS = 20_000  # groups x configurations above this: CBC overruns its limit; no MILP
MILP_GAP_REL = 0.01  # CBC stops once its solution is within 1% of its own bound
# The phase MILP's method and statuses as the plan records them (solver.method, solver.status);
# the report words each in every language (any other status is PuLP's own, shown as it is).
MILP_METHOD = "phase MILP"
MILP_OPTIMAL = f"optimal within {MILP_GAP_REL:.0%}"
MILP_FEASIBLE = "time limit, feasible"
MILP_NOT_RUN = "not run"


@dataclass(frozen=True)
class Site:
    """The cluster the campaign runs on."""

    nodes: int
    gpus_per_node: int
    exclusive: bool

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    def __str__(self) -> str:
        share = "exclusive" if self.exclusive else "shared"
        return f"{self.nodes} nodes x {self.gpus_per_node} GPUs ({share})"


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


def bounds(jobs: Sequence[Job], site: Site, round_jobs: Sequence[Job], rounds: int) -> Bounds:
    area = sum(j.held_gpus(site) * j.wall_s for j in jobs) / site.gpus
    lp = configuration_lp(round_jobs, site)
    return Bounds(
        sequential_s=sum(j.wall_s for j in jobs),
        area_s=area,
        longest_s=max((j.wall_s for j in jobs), default=0.0),
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
    return float(pulp.value(prob.objective) or 0.0)


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


def widest_longest_first(jobs: Sequence[Job]) -> list[int]:
    return sorted(
        range(len(jobs)), key=lambda i: (-jobs[i].nodes, -jobs[i].gpus_per_node, -jobs[i].wall_s)
    )


# ------------------------------------------------------------------------------ list scheduler


@dataclass
class _Cluster:
    site: Site
    free_gpus: list[int]
    running: list[tuple[float, int, tuple[int, ...], int]] = field(default_factory=list)
    seq: int = 0

    def place(self, job: Job, free_gpus: list[int] | None = None) -> tuple[int, ...] | None:
        """Nodes for `job` now (best fit for a shared job), or None."""
        free = self.free_gpus if free_gpus is None else free_gpus
        g_max = self.site.gpus_per_node
        if job.whole_nodes(self.site):
            idle = [n for n, f in enumerate(free) if f == g_max]
            return tuple(idle[: job.nodes]) if len(idle) >= job.nodes else None
        fitting = [(f, n) for n, f in enumerate(free) if f >= job.gpus_per_node]
        return (min(fitting)[1],) if fitting else None

    def start(self, job: Job, nodes: tuple[int, ...], now_s: float) -> None:
        held = job.held_gpus(self.site) // len(nodes)
        for n in nodes:
            self.free_gpus[n] -= held
        self.seq += 1
        heapq.heappush(self.running, (now_s + job.wall_s, self.seq, nodes, held))

    def finish_next(self) -> float:
        """Free every job ending at the next end time; return that time."""
        end_s = self.running[0][0]
        while self.running and self.running[0][0] <= end_s:
            _, _, nodes, held = heapq.heappop(self.running)
            for n in nodes:
                self.free_gpus[n] += held
        return end_s

    def earliest_start(self, job: Job, now_s: float) -> float:
        free = list(self.free_gpus)
        for end_s, _, nodes, held in sorted(self.running):
            for n in nodes:
                free[n] += held
            if self.place(job, free) is not None:
                return end_s
        return now_s  # fits now (not reached: the caller asks for jobs that do not fit)


def list_schedule(jobs: Sequence[Job], site: Site) -> list[Placement]:
    """Start jobs in the given order as they fit; later jobs backfill when they do not delay the
    first waiting one (it holds a reservation). Returns placements in the given order."""
    cluster = _Cluster(site, [site.gpus_per_node] * site.nodes)
    placed: dict[int, Placement] = {}
    queue = list(range(len(jobs)))
    now_s = 0.0
    while queue:
        queue = _start_fitting(jobs, queue, cluster, now_s, placed)
        if queue:
            now_s = cluster.finish_next()
    return [placed[i] for i in range(len(jobs))]


def _start_fitting(
    jobs: Sequence[Job],
    queue: list[int],
    cluster: _Cluster,
    now_s: float,
    placed: dict[int, Placement],
) -> list[int]:
    reserved_s: float | None = None
    waiting: list[int] = []
    head, rest = queue[:BACKFILL_LOOKAHEAD], queue[BACKFILL_LOOKAHEAD:]
    for position, i in enumerate(head):
        if not any(cluster.free_gpus):  # full: nothing more starts now
            waiting += head[position:]
            break
        job = jobs[i]
        nodes = cluster.place(job)
        if nodes is not None and (reserved_s is None or now_s + job.wall_s <= reserved_s):
            cluster.start(job, nodes, now_s)
            placed[i] = Placement(job.key, now_s, now_s + job.wall_s, nodes)
            continue
        if reserved_s is None and nodes is None:
            reserved_s = cluster.earliest_start(job, now_s)
        waiting.append(i)
    return waiting + rest


# ------------------------------------------------------------------------------ the campaign


def check_fits(jobs: Sequence[Job], site: Site) -> Job | None:
    """The first job the site cannot host, or None."""
    for job in jobs:
        if job.nodes > site.nodes or job.gpus_per_node > site.gpus_per_node:
            return job
    return None


def schedule_campaign(
    round_jobs: Sequence[Job], rounds: int, site: Site, time_limit_s: float
) -> Schedule:
    """`rounds` copies of `round_jobs` (repeat k = round k), packed and list-scheduled."""
    milp_order, solver = phase_milp(round_jobs, site, time_limit_s)
    candidates = [("widest, longest first", widest_longest_first(round_jobs))]
    if milp_order is not None:
        candidates.insert(0, ("phase MILP", milp_order))
    best: tuple[str, list[Placement], float] | None = None
    for name, order in candidates:
        campaign = [_repeat(round_jobs[i], r) for r in range(1, rounds + 1) for i in order]
        placements = list_schedule(campaign, site)
        makespan_s = max((p.end_s for p in placements), default=0.0)
        if best is None or makespan_s < best[2] - 1e-6:
            best = (name, placements, makespan_s)
    assert best is not None
    name, placements, makespan_s = best
    note = solver.note
    if milp_order is None:
        note = (note + "; " if note else "") + "no MILP solution: the list schedule alone"
    solver = SolverReport(**{**solver.__dict__, "order": name, "note": note})
    all_jobs = [_repeat(j, r) for r in range(1, rounds + 1) for j in round_jobs]
    return Schedule(
        tuple(placements), makespan_s, bounds(all_jobs, site, round_jobs, rounds), solver
    )


def _repeat(job: Job, repeat: int) -> Job:
    return Job((job.key[0], repeat), job.nodes, job.gpus_per_node, job.wall_s)
