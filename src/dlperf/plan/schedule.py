"""Packing runs onto the nodes of a site and onto time: a list scheduler and the campaign.

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
from collections.abc import Sequence
from dataclasses import dataclass, field

from dlperf.plan.jobs import Job, Placement, Schedule, Site, SolverReport
from dlperf.plan.milp import MILP_METHOD, bounds, phase_milp

# queued jobs the list scheduler looks at per event (as Slurm's bf_max_job_test)
BACKFILL_LOOKAHEAD = 256
# the order a campaign follows where the MILP's gives none or a longer schedule (solver.order)
ORDER_WIDEST = "widest, longest first"


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
        _start_fitting(jobs, queue, cluster, now_s, placed)
        if queue:
            now_s = cluster.finish_next()
    return [placed[i] for i in range(len(jobs))]


def _start_fitting(
    jobs: Sequence[Job],
    queue: list[int],
    cluster: _Cluster,
    now_s: float,
    placed: dict[int, Placement],
) -> None:
    """Start what fits now among the queue's first BACKFILL_LOOKAHEAD jobs; the queue keeps the
    rest, in order."""
    reserved_s: float | None = None
    waiting: list[int] = []
    # shapes (nodes, GPUs per node) that found no nodes: starting jobs only takes GPUs, so they
    # find none until the next job ends (5,000 runs: half of the planner's time was this)
    unfit: set[tuple[int, int]] = set()
    head = queue[:BACKFILL_LOOKAHEAD]
    for position, i in enumerate(head):
        if not any(cluster.free_gpus):  # full: nothing more starts now
            waiting += head[position:]
            break
        job = jobs[i]
        shape = (job.nodes, job.gpus_per_node)
        nodes = None if shape in unfit else cluster.place(job)
        if nodes is None:
            unfit.add(shape)
        elif reserved_s is None or now_s + job.wall_s <= reserved_s:
            cluster.start(job, nodes, now_s)
            placed[i] = Placement(job.key, now_s, now_s + job.wall_s, nodes)
            continue
        if reserved_s is None and nodes is None:
            reserved_s = cluster.earliest_start(job, now_s)
        waiting.append(i)
    queue[: len(head)] = waiting  # in place: the queue is the campaign's every run


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
    candidates = [(ORDER_WIDEST, widest_longest_first(round_jobs))]
    if milp_order is not None:
        candidates.insert(0, (MILP_METHOD, milp_order))
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
    return Schedule(tuple(placements), makespan_s, bounds(round_jobs, rounds, site), solver)


def _repeat(job: Job, repeat: int) -> Job:
    return Job((job.key[0], repeat), job.nodes, job.gpus_per_node, job.wall_s)
