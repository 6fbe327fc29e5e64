"""The submitter: one submitit job per run, waited on with a deadline, cancelled on interrupt.

Runs as one Snakemake job. Its only output is the run's manifest, written last and atomically:
a run interrupted half-way leaves no manifest, so Snakemake redoes exactly that run.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from types import FrameType
from typing import Any

import submitit

from dlperf import environments, logline, maxbatch
from dlperf.adapters import Launcher, get_adapter
from dlperf.adapters.upstream import UpstreamAdapter
from dlperf.launch.allocation import Allocation, LocalMachine, allocate
from dlperf.launch.record import RunRecord, log_fingerprint
from dlperf.launch.spec import RunSpec
from dlperf.launch.task import alive, load_task_outcomes, run_task
from dlperf.matrix import Cell
from dlperf.paths import MaxBatchPaths, ResultPaths
from dlperf.status import RUN_STATUSES, Status, worst
from dlperf.util import atomic_write_text

log = logging.getLogger(__name__)
POLL_S = 0.25
STATE_CHECK_S = 5.0  # scheduler queries are costlier than stat() of outcome files
ENDED_GRACE_S = 10.0  # after the job ended, outcome files may still be on their way (NFS lag)
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


@dataclass(frozen=True)
class Harness:
    """Where and how runs are launched: not part of what is measured, so never a rule param.
    Values come from a validated config (the schema owns the defaults)."""

    backend: str
    site: dict[str, Any]
    time_limit_min: float
    wait_grace_s: float
    local_devices: int = (
        0  # devices the local backend may use: CPUs, or GPUs when it trains on them
    )
    results_root: str = "results"


def harness_json(config: dict[str, Any]) -> str:
    """The harness part of a validated config, as run-cell reads it."""
    keys = ("backend", "site", "time_limit_min", "wait_grace_s")
    return json.dumps({k: config[k] for k in keys}, sort_keys=True)


class Interrupted(Exception):
    pass


class _Interrupts:
    """SIGINT, SIGTERM, SIGHUP: noted while the job is submitted, raised once it can be cancelled.

    Snakemake passes no signal on to its jobs: these come from the terminal's Ctrl-C (the whole
    foreground process group) or from whatever stops the process tree (scancel, systemd, timeout).
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self) -> None:
        self.received: str | None = None
        self.armed = False
        self.previous: dict[int, Any] = {}

    def __enter__(self) -> _Interrupts:
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


def build_spec(
    measure: dict[str, Any], repeat: int, harness: Harness
) -> tuple[RunSpec, Allocation]:
    cell = Cell.from_key(measure["cell"])
    adapter = get_adapter(cell.framework)
    site = harness.site
    local = LocalMachine.probe(measure["device"]) if harness.backend == "local" else None
    allocation = allocate(cell, adapter.launcher, harness.backend, site, local)
    spec = RunSpec(
        cell=cell,
        repeat=repeat,
        adapter=adapter.name,
        options=measure["options"],
        steps=measure["steps"],
        device=measure["device"],
        time_limit_min=harness.time_limit_min,
        backend=harness.backend,
        allocation=allocation.as_dict(),
        results_root=harness.results_root,
        env=dict(site.get("env", {})),
        container=site.get("container") if harness.backend == "slurm" else None,
        port=_free_port() if harness.backend == "local" else None,
        submitter_pid=os.getpid() if harness.backend == "local" else None,
    )
    return spec, allocation


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def executor_for(spec: RunSpec, allocation: Allocation, harness: Harness) -> submitit.Executor:
    site = harness.site
    executor = submitit.AutoExecutor(folder=spec.paths.submitit, cluster=harness.backend)
    params: dict[str, Any] = {
        "name": f"dlperf.{spec.cell.id}.r{spec.repeat}",
        # the task enforces the limit itself; the scheduler's kill is the backstop for a hung node
        "timeout_min": math.ceil(harness.time_limit_min) + 2,
        "nodes": allocation.nodes,
        "tasks_per_node": allocation.tasks_per_node,
        "cpus_per_task": allocation.cpus_per_task,
        "gpus_per_node": allocation.gpus_per_node,
    }
    if harness.backend == "slurm":
        params |= _slurm_params(site)
    executor.update_parameters(**params)
    return executor


def _slurm_params(site: dict[str, Any]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for key in ("partition", "account", "qos", "constraint"):
        if site.get(key):
            params[f"slurm_{key}"] = site[key]
    if site.get("mem_gb"):
        params["mem_gb"] = site["mem_gb"]
    if site.get("setup"):
        params["slurm_setup"] = list(site["setup"])
    extra = dict(site.get("extra_args", {}))
    if "requeue" not in extra and "no-requeue" not in extra:
        # a run Slurm requeued after a node failure would mix two attempts' outcome files:
        # the job ends as NODE_FAIL and the run is recorded as failed
        extra["no-requeue"] = True
    if site.get("exclusive"):
        extra["exclusive"] = True
    if extra:
        params["slurm_additional_parameters"] = extra
    container = site.get("container")
    if container and container.get("runtime", "pyxis") == "pyxis":
        srun = [f"--container-image={container['image']}"]
        if container.get("mounts"):
            srun.append("--container-mounts=" + ",".join(container["mounts"]))
        params["slurm_srun_args"] = srun
    return params


def run_cell(
    measure: dict[str, Any], repeat: int, harness: Harness, manifest_path: Path
) -> RunRecord:
    """Submit one run, wait for it, write its record (the manifest); return the record."""
    spec, allocation = build_spec(measure, repeat, harness)
    if spec.paths.manifest.resolve() != manifest_path.resolve():
        raise ValueError(
            f"manifest path {manifest_path} does not belong to {spec.cell.id} r{repeat}"
        )
    run_dir = spec.paths.dir
    run_dir.mkdir(parents=True, exist_ok=True)
    for stale in [
        *run_dir.glob("task*.json"),
        *run_dir.glob("rank*.log"),
        *run_dir.glob("node*.log"),
        *run_dir.glob("measured-*"),
    ]:
        stale.unlink()  # a half-finished earlier attempt's files; its run never got a manifest
    retract_figures(ResultPaths(Path(harness.results_root)), spec.cell.id, repeat)
    spec, unresolved = with_resolved_batch(spec, harness)
    if unresolved is not None:
        status, detail = unresolved
        return _unlaunched(spec, allocation, harness, measure, manifest_path, detail, status=status)
    try:
        spec, environment = with_environment(spec, harness)
    except environments.EnvironmentBuildError as err:
        return _unlaunched(spec, allocation, harness, measure, manifest_path, str(err))
    executor = executor_for(spec, allocation, harness)
    with _Interrupts() as interrupts:  # a signal during submission cancels the job once submitted
        interrupts.check()
        submitted = time.time()
        job = executor.submit(run_task, spec.to_dict())
        log.info("submitted %s r%d as %s job %s", spec.cell.id, repeat, harness.backend, job.job_id)
        try:
            interrupts.arm()
            job_status, detail = _wait(job, spec, allocation, harness)
        except Interrupted as err:
            log.warning("%s: cancelling job %s", err, job.job_id)
            job.cancel(check=False)
            raise SystemExit(130) from None
    noticed = time.time()
    _mark_silent_tasks(spec, allocation, job_status, detail)
    record = _record(
        spec, allocation, harness, measure, job, job_status, detail, submitted, noticed
    )
    return replace(record, environment=environment).write(manifest_path)


def retract_figures(results: ResultPaths, cell_id: str, repeat: int) -> None:
    """A run being redone takes its old figure out of the tables and reports that show it (its
    per-run JSON says they do): interrupted, it leaves none showing a measurement that is gone,
    and the next invocation remakes them (they are the tables' and report's outputs)."""
    figure = results.run(cell_id, repeat).json
    if not figure.exists():
        return  # a first run: no table shows it
    shown = [results.runs, results.cells, results.steps, figure, *results.reports()]
    for path in shown:
        path.unlink(missing_ok=True)
    shutil.rmtree(results.plots, ignore_errors=True)
    log.info("%s r%d is redone: its old figure's tables and reports are removed", cell_id, repeat)


def with_resolved_batch(spec: RunSpec, harness: Harness) -> tuple[RunSpec, tuple[str, str] | None]:
    """A `max` cell's spec at the value its search found (the find_max_batch rule's output): its
    batch size, or the option it sweeps with `max`; else (status, reason) of the search that
    found none: the run is recorded with it, unrun."""
    option = maxbatch.searched_in(spec.cell, spec.options)
    if option is None:
        return spec, None
    path = MaxBatchPaths(spec.cell.id, Path(harness.results_root)).result
    found = maxbatch.load_result(path)
    if found.value is None:
        status = found.status if found.status in RUN_STATUSES else Status.FAILED
        return spec, (status, f"{option} max: {found.detail} (search: {path})")
    if option == maxbatch.BATCH:
        return replace(spec, batch_size_resolved=found.value), None
    return replace(spec, options=spec.options | {option: found.value}), None


def with_environment(spec: RunSpec, harness: Harness) -> tuple[RunSpec, dict[str, Any] | None]:
    """The run's spec on its framework's own interpreter, and that environment's record (None:
    the workload runs in dlperf's own environment). Builds the environment the first time."""
    adapter = get_adapter(spec.adapter)
    requirements = getattr(adapter, "requirements", None)
    if not requirements:
        return spec, None
    settings = harness.site.get("environments", {})
    site_python = settings.get("python", {}).get(adapter.name)
    if site_python:
        record = environments.site_python_record(adapter.name, site_python)
    else:
        workflow_dir = Path(os.environ.get("DLPERF_WORKFLOW_DIR", "."))
        env = environments.environment_for(
            workflow_dir / requirements, Path(settings.get("root", environments.DEFAULT_ROOT))
        )
        record = environments.ensure(env)
    # the workload imports dlperf's stdlib-only modules, and nothing else of dlperf's environment;
    # a site's interpreter keeps the PYTHONPATH the site set up for it (`module load` sets one)
    pythonpath = str(
        environments.dlperf_only_path(Path(settings.get("root", environments.DEFAULT_ROOT)))
    )
    inherited = os.environ.get("PYTHONPATH") if site_python else None
    env_vars = spec.env | {
        "PYTHONPATH": os.pathsep.join(
            filter(None, [pythonpath, spec.env.get("PYTHONPATH"), inherited])
        )
    }
    return replace(spec, python=record["python"], env=env_vars), record


def _unlaunched(
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
    _mark_silent_tasks(spec, allocation, status, detail)
    record = _run_record(
        spec, allocation, harness, measure, status, detail,
        job_state="NOT_SUBMITTED", tasks=[], noticed_at=time.time(),
    )  # fmt: skip
    return record.write(manifest_path)


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
        adapter=_adapter_summary(spec.adapter, spec.options),
        measure=measure,
        backend=harness.backend,
        allocation=allocation.as_dict(),
        python=sys.version.split()[0],
        site=harness.site,  # where and how it ran: partition, container, setup lines, env
        **what_happened,
    )


def _batch_size(spec: RunSpec) -> int | None:
    """The batch size per device the run trained with (None: a `max` cell with none found)."""
    batch = spec.trained_cell.batch_size
    return batch if isinstance(batch, int) else None


def _adapter_summary(name: str, options: dict[str, Any]) -> dict[str, str]:
    """The adapter that ran, at the version the run's options chose (an upstream `release`)."""
    adapter = get_adapter(name)
    summary = {"name": adapter.name, "version": adapter.version, "launcher": str(adapter.launcher)}
    if isinstance(adapter, UpstreamAdapter) and adapter.release(options) is not None:
        summary["version"] = adapter.version_of(options)
        summary["release"] = adapter.release_name(options)
        summary["environment"] = adapter.environment_of(options)
    return summary


def _wait(
    job: submitit.Job, spec: RunSpec, allocation: Allocation, harness: Harness
) -> tuple[str | None, str]:
    """Wait for every task's outcome file; on interrupt cancel the job; past the deadline, give up."""
    tasks = allocation.nodes * allocation.tasks_per_node
    deadline_s = harness.time_limit_min * 60 + harness.wait_grace_s
    clock = time.time()  # the deadline counts from the last moment the job was known to be pending
    checked = 0.0
    ended: tuple[float, str] | None = None  # when the job was first seen ended, and its state
    ended_grace_s = ENDED_GRACE_S if harness.backend == "slurm" else 1.0
    starters = _starters()
    while True:
        if len(load_task_outcomes(spec.paths.dir)) >= tasks:
            return None, ""
        gone = [pid for pid in starters if not alive(pid)]
        if gone:  # Snakemake (or the rule's shell) was killed: nobody will record this run
            raise Interrupted(f"process {gone[0]} that started this run is gone")
        now = time.time()
        if harness.backend != "slurm" and ended is None and job.done():
            ended = (now, str(job.state))
        if harness.backend == "slurm" and now - checked > STATE_CHECK_S:
            checked = now  # squeue, not submitit's sacct: it works without accounting too
            state = _slurm_state(job)
            if state == "PENDING":
                clock = now
            if ended is None and state in SLURM_ENDED:
                ended = (now, state)
        if ended is not None and now - ended[0] > ended_grace_s:
            return _job_state(ended[1]), f"job ended as {ended[1]} before every task reported"
        if now - clock > deadline_s:
            job.cancel(check=False)
            return (
                Status.TIMEOUT,
                f"no outcome {deadline_s:.0f} s after start: job lost or hung; cancelled",
            )
        time.sleep(POLL_S)


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


def _mark_silent_tasks(
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


def _slurm_state(job: submitit.Job) -> str:
    """The job's state from squeue (GONE once the controller forgot it); UNKNOWN on errors."""
    try:
        out = subprocess.run(
            ["squeue", "--noheader", "--states=all", "--jobs", str(job.job_id), "--format=%T"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "UNKNOWN"
    if out.returncode == 0:
        # nothing listed: the controller forgot the job (MinJobAge after its end)
        return out.stdout.split()[0] if out.stdout.strip() else "GONE"
    return "GONE" if "Invalid job id" in out.stderr else "UNKNOWN"


def _job_state(state: str) -> str:
    state = state.upper()
    if state.startswith("TIMEOUT"):
        return Status.TIMEOUT
    if state.startswith("OUT_OF_ME"):
        return Status.OOM
    return Status.FAILED


def _task_entry(spec: RunSpec, outcome: dict[str, Any]) -> dict[str, Any]:
    """A task's outcome as the record keeps it: without its node facts (kept once per node),
    with its log's fingerprint as the run left it."""
    entry = {k: v for k, v in outcome.items() if k != "facts"}
    log = spec.paths.dir / str(outcome.get("log", ""))
    if outcome.get("log") and log.is_file():
        entry |= log_fingerprint(log)
    return entry


def first_cause(outcomes: dict[int, dict[str, Any]], status: str) -> str:
    """The detail of the task that ended first with the run's status: when one rank is killed,
    the others die after it of the broken connection, and the killed one is the cause."""
    ended = sorted(
        (o.get("ended_at", math.inf), task, o.get("detail", ""))
        for task, o in outcomes.items()
        if o.get("status") == status
    )
    if not ended:
        return ""
    _, task, detail = ended[0]
    return f"task {task} ended first: {detail}" if len(outcomes) > 1 and detail else detail


def _record(
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
    outcomes = load_task_outcomes(spec.paths.dir)
    tasks = allocation.nodes * allocation.tasks_per_node
    statuses = [o.get("status", Status.FAILED) for o in outcomes.values()]
    if len(outcomes) < tasks:
        statuses.append(job_status or Status.FAILED)
        missing = sorted(set(range(tasks)) - set(outcomes))
        detail = detail or f"tasks {missing} never reported"
    status = worst(statuses)
    if not detail:
        detail = first_cause(outcomes, status)
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
        job_state=str(job.state) if job_status else "COMPLETED",
        tasks=[_task_entry(spec, outcomes[i]) for i in sorted(outcomes)],
        nodes=facts,
        hosts=sorted({o["host"] for o in outcomes.values()}),
        node_names=sorted({o.get("node") or o["host"] for o in outcomes.values()}),
        submitted_at=submitted,
        started_at=min(starts) if starts else None,
        ended_at=max(ends) if ends else None,
        noticed_at=noticed,
    )
