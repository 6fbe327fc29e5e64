"""The submitter: one submitit job per run, waited on with a deadline, cancelled on interrupt.

Runs as one Snakemake job. Its only output is the run's manifest, written last and atomically:
a run interrupted half-way leaves no manifest, so Snakemake redoes exactly that run.
"""

from __future__ import annotations

import logging
import math
import signal
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import submitit

from dlperf import SCHEMA_VERSION, __version__
from dlperf.adapters import get_adapter
from dlperf.launch.allocation import Allocation, allocate
from dlperf.launch.spec import RunSpec, cell_from_key
from dlperf.launch.task import load_task_outcomes, run_task
from dlperf.util import atomic_write_json

log = logging.getLogger(__name__)
STATUS_ORDER = ("oom", "timeout", "failed", "skipped", "ok")  # worst first: a run takes its worst task's
POLL_S = 0.25
STATE_CHECK_S = 5.0  # scheduler queries are costlier than stat() of outcome files


@dataclass(frozen=True)
class Harness:
    """Where and how runs are launched: not part of what is measured, so never a rule param."""

    backend: str = "local"
    site: dict[str, Any] | None = None
    time_limit_min: float = 30
    wait_grace_s: float = 120
    results_root: str = "results"


class Interrupted(Exception):
    pass


def build_spec(measure: dict[str, Any], repeat: int, harness: Harness) -> tuple[RunSpec, Allocation]:
    cell = cell_from_key(measure["cell"])
    adapter = get_adapter(cell.framework)
    site = harness.site or {}
    allocation = allocate(cell, adapter.launcher, harness.backend, site)
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
        port=_free_port() if harness.backend == "local" else None,
    )
    return spec, allocation


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def executor_for(spec: RunSpec, allocation: Allocation, harness: Harness) -> submitit.Executor:
    site = harness.site or {}
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


def run_cell(measure: dict[str, Any], repeat: int, harness: Harness, manifest_path: Path) -> dict[str, Any]:
    """Submit one run, wait for it, write its manifest; return the manifest."""
    spec, allocation = build_spec(measure, repeat, harness)
    if spec.paths.manifest.resolve() != manifest_path.resolve():
        raise ValueError(f"manifest path {manifest_path} does not belong to {spec.cell.id} r{repeat}")
    run_dir = spec.paths.dir
    run_dir.mkdir(parents=True, exist_ok=True)
    for stale in list(run_dir.glob("task*.json")) + list(run_dir.glob("rank*.log")) + list(run_dir.glob("node*.log")):
        stale.unlink()  # a half-finished earlier attempt's files; its run never got a manifest
    executor = executor_for(spec, allocation, harness)
    submitted = time.time()
    job = executor.submit(run_task, spec.to_dict())
    log.info("submitted %s r%d as %s job %s", spec.cell.id, repeat, harness.backend, job.job_id)
    job_status, detail = _wait(job, spec, allocation, harness)
    noticed = time.time()
    manifest = _manifest(spec, allocation, harness, measure, job, job_status, detail, submitted, noticed)
    atomic_write_json(manifest_path, manifest)
    return manifest


def _wait(job: submitit.Job, spec: RunSpec, allocation: Allocation, harness: Harness) -> tuple[str | None, str]:
    """Wait for every task's outcome file; on interrupt cancel the job; past the deadline, give up."""
    tasks = allocation.nodes * allocation.tasks_per_node
    deadline_s = harness.time_limit_min * 60 + harness.wait_grace_s
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise Interrupted(signal.Signals(signum).name)

    for sig in previous:
        signal.signal(sig, interrupt)
    clock = time.time()  # the deadline counts from the last moment the job was known to be pending
    checked = 0.0
    try:
        while True:
            if len(load_task_outcomes(spec.paths.dir)) >= tasks:
                return None, ""
            if job.done():
                time.sleep(1)  # outcome files are written before a task returns; allow for NFS lag
                if len(load_task_outcomes(spec.paths.dir)) >= tasks:
                    return None, ""
                return _job_state(job), f"job ended as {job.state} before every task reported"
            now = time.time()
            if now - checked > STATE_CHECK_S:
                checked = now
                if job.state == "PENDING":
                    clock = now
            if now - clock > deadline_s:
                job.cancel(check=False)
                return "timeout", f"no outcome {deadline_s:.0f} s after start: job lost or hung; cancelled"
            time.sleep(POLL_S)
    except Interrupted as err:
        log.warning("%s: cancelling job %s", err, job.job_id)
        job.cancel(check=False)
        raise SystemExit(130) from None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _job_state(job: submitit.Job) -> str:
    state = str(job.state).upper()
    if state.startswith("TIMEOUT"):
        return "timeout"
    if state.startswith("OUT_OF_ME"):
        return "oom"
    return "failed"


def _manifest(
    spec: RunSpec,
    allocation: Allocation,
    harness: Harness,
    measure: dict[str, Any],
    job: submitit.Job,
    job_status: str | None,
    detail: str,
    submitted: float,
    noticed: float,
) -> dict[str, Any]:
    outcomes = load_task_outcomes(spec.paths.dir)
    tasks = allocation.nodes * allocation.tasks_per_node
    statuses = [o.get("status", "failed") for o in outcomes.values()]
    if len(outcomes) < tasks:
        statuses.append(job_status or "failed")
        missing = sorted(set(range(tasks)) - set(outcomes))
        detail = detail or f"tasks {missing} never reported"
    status = next(s for s in STATUS_ORDER if s in statuses or s == "ok")
    if not detail:
        detail = next((o.get("detail", "") for o in outcomes.values() if o.get("status") == status), "")
    adapter = get_adapter(spec.adapter)
    starts = [o["started_at"] for o in outcomes.values()]
    ends = [o["ended_at"] for o in outcomes.values()]
    facts = {o["host"] + f"#node{o['node_rank']}": o["facts"] for o in outcomes.values() if "facts" in o}
    return {
        "schema_version": SCHEMA_VERSION,
        "dlperf_version": __version__,
        "cell": spec.cell.key(),
        "repeat": spec.repeat,
        "status": status,
        "status_detail": detail,
        "adapter": {"name": adapter.name, "version": adapter.version, "launcher": str(adapter.launcher)},
        "measure": measure,
        "backend": harness.backend,
        "allocation": allocation.as_dict(),
        "job_id": job.job_id,
        "job_state": str(job.state) if job_status else "COMPLETED",
        "tasks": [{k: v for k, v in outcomes[i].items() if k != "facts"} for i in sorted(outcomes)],
        "nodes": facts,
        "hosts": sorted({o["host"] for o in outcomes.values()}),
        "submitted_at": submitted,
        "started_at": min(starts) if starts else None,
        "ended_at": max(ends) if ends else None,
        "noticed_at": noticed,
        "python": sys.version.split()[0],
    }
