"""A run's record (its manifest) from what became of it: the tasks' outcome files, the job's end,
or why it was never submitted; every task's log, even one that never started."""

from __future__ import annotations

import math
import re
import signal
import sys
import time
from pathlib import Path
from typing import Any

import submitit
from submitit.core.utils import JobPaths

from dlperf import logline
from dlperf.adapters import Launcher, get_adapter
from dlperf.adapters.upstream import UpstreamAdapter
from dlperf.i18n import Phrase, english
from dlperf.launch.allocation import Allocation
from dlperf.launch.record import RunRecord
from dlperf.launch.spec import Harness, RunSpec
from dlperf.launch.task import load_task_outcomes, log_tail
from dlperf.launch.taskoutcome import log_fingerprint
from dlperf.launch.watch import slurm_state
from dlperf.status import Status, run_status
from dlperf.util import atomic_write_text


def record_unlaunched(
    spec: RunSpec,
    allocation: Allocation,
    harness: Harness,
    measure: dict[str, Any],
    manifest_path: Path,
    detail: str,
    status: str = Status.FAILED,
) -> RunRecord:
    """A run that could not be submitted (its environment did not build, or its `max` batch
    search found no batch size): `failed` (or the search's status), with why."""
    spec.paths.dir.mkdir(parents=True, exist_ok=True)
    mark_silent_tasks(spec, allocation, status, detail)
    record = _run_record(
        spec, allocation, harness, measure, status, detail,
        job_state="NOT_SUBMITTED", tasks=[], noticed_at=time.time(),
    )  # fmt: skip
    return record.write(manifest_path)


def record_outcome(
    spec: RunSpec,
    allocation: Allocation,
    harness: Harness,
    measure: dict[str, Any],
    job: submitit.Job,
    job_status: str | None,
    detail: str,
    submitted: float,
    noticed: float,
) -> RunRecord:
    tasks = allocation.nodes * allocation.tasks_per_node
    outcomes = load_task_outcomes(spec.paths, tasks, str(job.job_id))
    if job_status == Status.OOM:
        outcomes = {task: memory_killed(o) for task, o in outcomes.items()}
    ends = [(o.get("status", Status.FAILED), o.get("ended_at")) for o in outcomes.values()]
    if len(outcomes) < tasks:
        ends.append((job_status or Status.FAILED, None))
        missing = sorted(set(range(tasks)) - set(outcomes))
        detail = detail or english(Phrase.of("detail.never_reported", tasks=str(missing)))
        detail = "; ".join(filter(None, (detail, unreported_cause(spec, str(job.job_id), missing))))
    status = run_status(ends)
    # why the job ended (the scheduler stopped it, dlperf cancelled it), then the first task's
    # that ended so (a rank that failed while the others hung, which never reported)
    detail = "; ".join(filter(None, (detail, first_cause(outcomes, status, tasks))))
    starts = [o["started_at"] for o in outcomes.values()]
    ends = [o["ended_at"] for o in outcomes.values()]
    facts = {
        o["host"] + f"#node{o['node_rank']}": o["facts"] for o in outcomes.values() if "facts" in o
    }
    return _run_record(
        spec,
        allocation,
        harness,
        measure,
        status,
        detail,
        job_id=job.job_id,
        job_state=ended_state(job, harness.backend) if job_status else "TASKS_REPORTED",
        tasks=[_task_entry(spec, outcomes[i]) for i in sorted(outcomes)],
        nodes=facts,
        hosts=sorted({o["host"] for o in outcomes.values()}),
        node_names=sorted({o.get("node") or o["host"] for o in outcomes.values()}),
        submitted_at=submitted,
        started_at=min(starts) if starts else None,
        ended_at=max(ends) if ends else None,
        noticed_at=noticed,
    )


# A workload's exit when SIGKILL ended it: its own (-9), or a shell's or launcher's (128 + 9)
SIGKILLED = (-signal.SIGKILL, 128 + signal.SIGKILL)


def memory_killed(outcome: dict[str, Any]) -> dict[str, Any]:
    """A task's outcome in a job Slurm ended OUT_OF_MEMORY: a workload SIGKILL ended ran out of
    memory (the kernel's OOM killer in the job's cgroup, or Slurm's own memory enforcement),
    though its task could not tell: no OOM kill count in the cgroup it sees (a kernel before
    4.13, a container's view of it) or no kernel kill at all (JobAcctGatherParams=OverMemoryKill)."""
    if outcome.get("status") == Status.FAILED and outcome.get("exit_code") in SIGKILLED:
        return outcome | {"status": Status.OOM}
    return outcome


def ended_state(job: submitit.Job, backend: str) -> str:
    """The scheduler's state of a job that ended: on Slurm squeue's, as the watch read it
    (submitit's `state` asks sacct, which a cluster without accounting does not answer: UNKNOWN,
    and a warning in the rule's log)."""
    return slurm_state(job)[0] if backend == "slurm" else str(job.state)


def _run_record(
    spec: RunSpec,
    allocation: Allocation,
    harness: Harness,
    measure: dict[str, Any],
    status: str,
    detail: str,
    **what_happened: Any,
) -> RunRecord:
    """The record of a run of `spec`: what it measured, where, and `what_happened` to it."""
    return RunRecord(
        cell=spec.cell.key(),
        repeat=spec.repeat,
        batch_size_resolved=_batch_size(spec),
        options_resolved={
            k: spec.options[k]
            for k, v in measure.get("options", {}).items()
            if v == "max" and spec.options.get(k) != "max"
        },
        status=status,
        status_detail=detail,
        adapter=adapter_summary(spec.adapter, spec.options),
        measure=measure,
        backend=harness.backend,
        allocation=allocation.as_dict(),
        python=sys.version.split()[0],
        site=harness.site,  # where and how it ran: partition, container, setup lines, env
        time_limit_min=harness.time_limit_min,
        **what_happened,
    )


def _batch_size(spec: RunSpec) -> int | None:
    """The batch size per device the run trained with (None: a `max` cell with none found)."""
    batch = spec.trained_cell.batch_size
    return batch if isinstance(batch, int) else None


def adapter_summary(name: str, options: dict[str, Any]) -> dict[str, str]:
    """The adapter that ran, at the version the run's options chose (an upstream `release`).
    Not the release's image: the run may not have run in it (RunRecord.ran_in says what it did)."""
    adapter = get_adapter(name)
    summary = {"name": adapter.name, "version": adapter.version, "launcher": str(adapter.launcher)}
    if isinstance(adapter, UpstreamAdapter) and adapter.release(options) is not None:
        summary["version"] = adapter.version_of(options)
        summary["release"] = adapter.release_name(options)
    return summary


def mark_silent_tasks(
    spec: RunSpec, allocation: Allocation, job_status: str | None, detail: str
) -> None:
    """Every task has a log, even one that never started: a line there says why it is empty, so
    each run's files are the same set whatever became of it."""
    per_node = get_adapter(spec.adapter).launcher is Launcher.PER_NODE
    for task in range(allocation.nodes * allocation.tasks_per_node):
        path = spec.paths.task_log(task, per_node)
        if not path.exists():
            note = detail or f"the job ended as {job_status or 'unknown'} before this task started"
            atomic_write_text(
                path, logline.format_line(logline.HARNESS, task=task, note=note) + "\n"
            )


# Lines of a task's stderr that say what srun or submitit did, not why the task ended ("srun:
# error: node1: tasks 0-1: Exited with exit code 1", "submitit WARNING ... Bypassing signal")
NOT_A_CAUSE = re.compile(r"srun: |submitit (INFO|WARNING) ")


def unreported_cause(spec: RunSpec, job_id: str, missing: list[int]) -> str:
    """Why a task that never reported ended, as its stderr (submitit's file: the task's Python,
    the batch script's setup lines for task 0, srun's and slurmstepd's messages) last says it:
    a traceback's error, `execve(): ...: No such file or directory`, Slurm's `*** JOB ...
    CANCELLED ... DUE TO TIME LIMIT ***`; '' where no such file says anything."""
    for task in missing:
        stderr = JobPaths(spec.paths.submitit, job_id=job_id, task_id=task).stderr
        try:
            lines = [line.strip() for line in log_tail(stderr).splitlines() if line.strip()]
        except OSError:
            continue
        telling = [line for line in lines if not NOT_A_CAUSE.match(line)] or lines
        if telling:
            where = (spec.paths.submitit / stderr.name).relative_to(spec.paths.dir)
            return english(
                Phrase.of(
                    "detail.task_stderr", task=str(task), file=str(where), line=telling[-1][:300]
                )
            )
    return ""


def _task_entry(spec: RunSpec, outcome: dict[str, Any]) -> dict[str, Any]:
    """A task's outcome as the record keeps it: without its node facts (kept once per node),
    with its log's fingerprint as the run left it."""
    entry = {k: v for k, v in outcome.items() if k != "facts"}
    log = spec.paths.dir / str(outcome.get("log", ""))
    if outcome.get("log") and log.is_file():
        entry |= log_fingerprint(log)
    return entry


def first_cause(outcomes: dict[int, dict[str, Any]], status: str, tasks: int = 0) -> str:
    """The detail of the task that ended first with the run's status: when one rank is killed,
    the others die after it of the broken connection, and the killed one is the cause. It names
    the task where the run has several (`tasks` launched, or outcomes)."""
    ended = sorted(
        (o.get("ended_at", math.inf), task, o.get("detail", ""))
        for task, o in outcomes.items()
        if o.get("status") == status
    )
    if not ended:
        return ""
    _, task, detail = ended[0]
    if max(tasks, len(outcomes)) > 1 and detail:
        return english(Phrase.of("detail.first_cause", task=str(task), detail=detail))
    return detail
