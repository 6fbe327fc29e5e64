"""Waiting for a submitted run: every task's outcome file, the scheduler's view of the job, the
deadline, and the signals (Ctrl-C, scancel, a killed Snakemake) that cancel it."""

from __future__ import annotations

import math
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from types import FrameType
from typing import Any

import submitit

from dlperf.i18n import Phrase, english
from dlperf.launch.allocation import Allocation
from dlperf.launch.spec import Harness, RunSpec
from dlperf.launch.task import alive, load_task_outcomes
from dlperf.status import Status

POLL_S = 0.25
STATE_CHECK_S = 5.0  # scheduler queries are costlier than stat() of outcome files
ENDED_GRACE_S = 10.0  # after the job ended, outcome files may still be on their way (NFS lag)
# every task of a COMPLETED job wrote its outcome, which NFS's attribute caches (30-60 s) may
# hide from this host for a while: no reason to give up on it soon
COMPLETED_GRACE_S = 90.0
UNREACHABLE_S = 1800.0
HUNG_AFTER_FAILURE_S = 60.0  # a task failed and others still run: then they are cancelled (Hang)  # a controller that cannot be asked for this long: the run is given up
# Slurm job states after which nothing of the job runs any more (squeue --states=all)
SLURM_ENDED = frozenset(
    {
        "BOOT_FAIL",
        "CANCELLED",
        "COMPLETED",
        "DEADLINE",
        "FAILED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "REVOKED",
        "SPECIAL_EXIT",
        "TIMEOUT",
        "GONE",
    }
)


# End states in which Slurm, not the workload, stopped the job: its tasks' workloads die of the
# SIGTERM it sends, and a run recorded from their exits alone would read as the workload's failure
SCHEDULER_STOPS = frozenset(
    {"BOOT_FAIL", "CANCELLED", "DEADLINE", "NODE_FAIL", "PREEMPTED", "REVOKED"}
)


# States of a job Slurm requeued (after its tasks reported): it runs again under the same id
REQUEUED = frozenset({"PENDING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD"})


# Pending reasons that never clear by waiting: the job can never start as submitted (Slurm's
# job_reason_string names). Besides these, every per-job or per-node maximum and every minimum of a
# QOS or association (never_starts): the job's own request is over it, whatever else runs.
NEVER_STARTS = frozenset(
    {
        "PartitionTimeLimit",
        "PartitionNodeLimit",
        "PartitionConfig",
        "BadConstraints",
        "InvalidAccount",
        "InvalidQOS",
        "AccountNotAllowed",
        "QOSNotAllowed",
        "DependencyNeverSatisfied",
        "ReservationDeleted",
    }
)
# QOSMaxGRESPerJob, AssocMaxNodePerJobLimit, QOSMaxMemoryPerNode, QOSMinGRES...; not the per-user
# and group limits (QOSMaxGRESPerUser, AssocGrpGRES), which clear as other jobs end
REQUEST_OVER_A_LIMIT = re.compile(r"(QOS|Assoc)Max\w*Per(Job|Node)(Limit)?|QOSMin\w+")


def never_starts(reason: str) -> bool:
    """Whether a pending job's reason (squeue %r) never clears by waiting."""
    return reason in NEVER_STARTS or REQUEST_OVER_A_LIMIT.fullmatch(reason) is not None


class Interrupted(Exception):
    pass


class Interrupts:
    """SIGINT, SIGTERM, SIGHUP: noted while the job is submitted, raised once it can be cancelled.

    Snakemake passes no signal on to its jobs: these come from the terminal's Ctrl-C (the whole
    foreground process group) or from whatever stops the process tree (scancel, systemd, timeout).
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self) -> None:
        self.received: str | None = None
        self.armed = False
        self.previous: dict[int, Any] = {}

    def __enter__(self) -> Interrupts:
        for sig in self.SIGNALS:
            self.previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        first = self.received is None
        self.received = self.received or signal.Signals(signum).name
        if self.armed and first:  # a second signal must not interrupt the cancellation
            self.armed = False
            raise Interrupted(self.received)

    def check(self) -> None:
        if self.received:
            raise SystemExit(130)

    def arm(self) -> None:
        """From now on a signal raises Interrupted (at once, if one came during submission)."""
        if self.received:
            raise Interrupted(self.received)
        self.armed = True


def wait_for_outcomes(
    job: submitit.Job, spec: RunSpec, allocation: Allocation, harness: Harness
) -> tuple[str | None, str]:
    """Wait for every task's outcome file; on interrupt cancel the job; past the deadline, give up."""
    tasks = allocation.nodes * allocation.tasks_per_node
    # the job may run for its whole time (start-up included) before the scheduler ends it
    deadline_s = harness.job_time_min * 60 + harness.wait_grace_s
    clock = time.time()  # the deadline counts from the last moment the job was known to be pending
    checked = 0.0
    ended: tuple[float, str] | None = None  # when the job was first seen ended, and its state
    unreachable: float | None = None  # since when squeue could not be asked
    starters = _starters()
    attempt = 0  # a requeued job's earlier attempts' outcomes are not the run's
    hang = Hang(tasks)
    running = False  # the job runs (squeue's RUNNING, or a local job not done)
    while True:
        outcomes = load_task_outcomes(spec.paths, tasks, str(job.job_id), attempt)
        if len(outcomes) >= tasks:
            if hang.detail:  # dlperf cancelled it: no scheduler's stop, nor the workload's alone
                return None, hang.detail
            failed = any(
                o.get("status") not in (Status.OK, Status.SKIPPED) for o in outcomes.values()
            )
            if harness.backend != "slurm" or not failed:
                return None, ""
            state = end_state(job)
            if state not in REQUEUED:
                return ended_as(state)
            attempt = max(o.get("attempt", 0) for o in outcomes.values()) + 1
            clock = time.time()
            continue
        gone = [pid for pid in starters if not alive(pid)]
        if gone:  # Snakemake (or the rule's shell) was killed: nobody will record this run
            raise Interrupted(f"process {gone[0]} that started this run is gone")
        now = time.time()
        if harness.backend != "slurm":
            if ended is None and job.done():
                ended = (now, str(job.state))
            running = ended is None
        if harness.backend == "slurm" and now - checked > STATE_CHECK_S:
            checked = now  # squeue, not submitit's sacct: it works without accounting too
            state, reason = slurm_state(job)
            if state == "PENDING" and never_starts(reason):
                job.cancel(check=False)
                return Status.FAILED, english(Phrase.of("detail.never_starts", reason=reason))
            running = state == "RUNNING"
            if state in REQUEUED and outcomes:  # requeued: what its tasks reported is history
                attempt = max(o.get("attempt", 0) for o in outcomes.values()) + 1
            unreachable = (unreachable or now) if state == "UNKNOWN" else None
            if state == "PENDING" or (unreachable and now - unreachable < UNREACHABLE_S):
                # pending, or a controller that cannot be asked (an outage is no sign of a lost
                # job, and a cancel could not reach it): the deadline does not run meanwhile
                clock = now
            if ended is None and state in SLURM_ENDED:
                ended = (now, state)
        hang.check(job, outcomes, running, now)
        if ended is not None and now - ended[0] > _ended_grace_s(harness.backend, ended[1]):
            if hang.detail:
                return Status.FAILED, hang.detail
            detail = english(Phrase.of("detail.job_ended", state=ended[1]))
            if ended[1] in SCHEDULER_STOPS:
                detail += "; " + english(Phrase.of("detail.scheduler_stopped", state=ended[1]))
            return job_state(ended[1]), detail
        if now - clock > deadline_s:
            job.cancel(check=False)
            lost = Phrase.of("detail.job_lost", seconds=f"{deadline_s:.0f}")
            return Status.TIMEOUT, english(lost)
        time.sleep(POLL_S)


class Hang:
    """Tasks still running long after another task of the run failed or ran out of memory: they
    wait in a collective for the rank that is gone (NCCL, Horovod and most launchers wait 10 to
    30 minutes, or for ever), holding every node of the job to the time limit. They are given
    HUNG_AFTER_FAILURE_S to fail of the broken connection and say so themselves; then the job is
    cancelled, and its tasks report their workloads killed."""

    def __init__(self, tasks: int) -> None:
        self.tasks = tasks
        self.since: float | None = None  # when a broken task was first seen, the others running
        self.detail = ""  # why dlperf cancelled the job ('' while it has not)

    def check(
        self, job: submitit.Job, outcomes: dict[int, dict[str, Any]], running: bool, now: float
    ) -> None:
        if self.detail:
            return
        broken = [t for t, o in outcomes.items() if o.get("status") in (Status.FAILED, Status.OOM)]
        if not broken or not running:
            self.since = None
            return
        self.since = self.since or now
        if now - self.since < HUNG_AFTER_FAILURE_S:
            return
        job.cancel(check=False)
        first = min(broken, key=lambda t: (outcomes[t].get("ended_at") or math.inf, t))
        hung = Phrase.of(
            "detail.hung_on_failure",
            task=str(first),
            status=str(outcomes[first]["status"]),
            tasks=str(sorted(set(range(self.tasks)) - set(outcomes))),
            seconds=f"{HUNG_AFTER_FAILURE_S:.0f}",
        )
        self.detail = english(hung)


def end_state(job: submitit.Job) -> str:
    """The state of a job whose tasks all reported, some not ok: ended, requeued, or (asked for
    ENDED_GRACE_S: the job ends seconds after its tasks wrote their outcomes) still running."""
    until = time.time() + ENDED_GRACE_S
    while True:
        state = slurm_state(job)[0]
        if state in SLURM_ENDED | REQUEUED or state == "UNKNOWN" or time.time() > until:
            return state
        time.sleep(1.0)


def ended_as(state: str) -> tuple[str | None, str]:
    """What the end state of a job whose tasks all reported, some not ok, adds to theirs: Slurm
    killed a process of it for memory (OUT_OF_MEMORY: `oom`, which a task whose workload got
    SIGKILL could not always tell, dlperf.launch.outcome.memory_killed), Slurm stopped it
    (scheduler_stop), or nothing (None, '': the tasks' statuses are the run's)."""
    if job_state(state) == Status.OOM:
        return Status.OOM, english(Phrase.of("detail.slurm_oom", state=state))
    return None, scheduler_stop(state)


def scheduler_stop(state: str) -> str:
    """Where Slurm stopped the job (preempted, cancelled, a node lost), that it did: its tasks saw
    only their workloads killed by its SIGTERM, which reads as the workload's failure."""
    if state in SCHEDULER_STOPS:
        return english(Phrase.of("detail.scheduler_stopped", state=state))
    return ""


def _ended_grace_s(backend: str, state: str) -> float:
    """How long after the job's end its tasks' outcome files may still come."""
    if backend != "slurm":
        return 1.0
    return COMPLETED_GRACE_S if state == "COMPLETED" else ENDED_GRACE_S


def _starters() -> list[int]:
    """The processes that started this submitter: its parent (the rule's shell) and that one's
    parent (Snakemake). A submitter whose starter was killed cancels its run and exits, as on
    Ctrl-C: SIGKILL to Snakemake must not leave runs training with no one to record them."""
    starters, pid = [], os.getpid()
    for _ in range(2):
        pid = _parent_of(pid)
        if pid <= 1:
            break
        starters.append(pid)
    return starters


def _parent_of(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return os.getppid() if pid == os.getpid() else 0
    return int(stat.rsplit(")", 1)[1].split()[1])  # the field after the (name) is the state


def slurm_state(job: submitit.Job) -> tuple[str, str]:
    """The job's state from squeue (GONE once the controller forgot it; UNKNOWN on errors) and
    squeue's reason for it ("" where it gives none)."""
    try:
        out = subprocess.run(
            ["squeue", "--noheader", "--states=all", "--jobs", str(job.job_id), "--format=%T %r"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "UNKNOWN", ""
    if out.returncode == 0:
        # nothing listed: the controller forgot the job (MinJobAge after its end)
        words = out.stdout.split()
        return (words[0], words[1] if len(words) > 1 else "") if words else ("GONE", "")
    return ("GONE" if "Invalid job id" in out.stderr else "UNKNOWN"), ""


def job_state(state: str) -> str:
    state = state.upper()
    if state.startswith("TIMEOUT"):
        return Status.TIMEOUT
    if state.startswith("OUT_OF_ME"):
        return Status.OOM
    return Status.FAILED
