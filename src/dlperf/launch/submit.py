"""The submitter: one submitit job per run, waited on with a deadline, cancelled on interrupt.

Runs as one Snakemake job. Its only output is the run's manifest, written last and atomically:
a run interrupted half-way leaves no manifest, so Snakemake redoes exactly that run.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import socket
import subprocess
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import submitit
from submitit.core.utils import FailedJobError, FailedSubmissionError

from dlperf import environments
from dlperf.adapters import get_adapter
from dlperf.launch.allocation import Allocation, LocalMachine, allocate
from dlperf.launch.measured import launched_with, ran_in
from dlperf.launch.outcome import mark_silent_tasks, record_outcome, record_unlaunched
from dlperf.launch.record import RunRecord
from dlperf.launch.spec import Harness, RunSpec
from dlperf.launch.task import run_task
from dlperf.launch.watch import Interrupted, Interrupts, wait_for_outcomes
from dlperf.matrix import Cell
from dlperf.paths import MaxBatchPaths, ResultPaths
from dlperf.plan import maxbatch
from dlperf.status import RUN_STATUSES, Status
from dlperf.util import remove_reports

log = logging.getLogger(__name__)


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
        options=adapter.resolved_options(measure["options"]),  # the measure's quiet ones too
        steps=measure["steps"],
        device=measure["device"],
        time_limit_min=harness.time_limit_min,
        backend=harness.backend,
        allocation=allocation.as_dict(),
        results_root=harness.results_root,
        env=dict(site["env"]),
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
        "name": job_name(spec),
        # the task enforces the limit itself; the scheduler's kill is the backstop for a hung node
        # and starts its clock only once setup lines, container and imports are done: Slurm's
        # --time leaves room for those, and its SIGUSR2 (submitit's timeout signal, sent up to
        # 60 s before signal_delay_s) comes minutes after the run's own limit
        "timeout_min": harness.job_time_min,
        "nodes": allocation.nodes,
        "tasks_per_node": allocation.tasks_per_node,
        "cpus_per_task": allocation.cpus_per_task,
        "gpus_per_node": allocation.gpus_per_node,
    }
    if harness.backend == "slurm":
        params |= _slurm_params(site) | {"slurm_signal_delay_s": 60}
    executor.update_parameters(**params)
    return executor


def job_name(spec: RunSpec) -> str:
    return f"dlperf.{spec.cell.id}.r{spec.repeat}"


def cancel_earlier_jobs(spec: RunSpec) -> list[str]:
    """Cancel the Slurm jobs an earlier attempt at this run submitted (their ids name the pickles
    in its submitit folder), if Slurm still holds them: a submitter killed with SIGKILL (with its
    whole process group, or its login node lost) cancelled nothing, and its job would train on
    beside the redo's, contending for the nodes and network it measures. Only jobs of this run's
    name are cancelled; the ids asked about."""
    ids = sorted({p.name.split("_")[0] for p in spec.paths.submitit.glob("*_submitted.pkl")})
    if not ids:
        return []
    try:
        subprocess.run(
            ["scancel", f"--name={job_name(spec)}", *ids],
            capture_output=True,
            timeout=60,
            check=False,  # an id Slurm forgot, or a job already ended: nothing to cancel
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        log.warning(
            "%s r%d: earlier jobs %s not cancelled: %s", spec.cell.id, spec.repeat, ids, err
        )
        return ids
    log.info("%s r%d: earlier attempt's jobs %s cancelled if held", spec.cell.id, spec.repeat, ids)
    return ids


def _slurm_params(site: dict[str, Any]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for key in ("partition", "account", "qos", "constraint"):
        if site.get(key):
            params[f"slurm_{key}"] = site[key]
    if site["mem_gb"]:
        params["mem_gb"] = site["mem_gb"]
    if site["setup"]:
        params["slurm_setup"] = list(site["setup"])
    extra = dict(site["extra_args"])
    if "requeue" not in extra and "no-requeue" not in extra:
        # a run Slurm requeued after a node failure would mix two attempts' outcome files:
        # the job ends as NODE_FAIL and the run is recorded as failed
        extra["no-requeue"] = True
    if site["exclusive"]:
        extra["exclusive"] = True
    if extra:
        params["slurm_additional_parameters"] = extra
    container = site.get("container")
    if container and container["runtime"] == "pyxis":
        srun = [f"--container-image={container['image']}"]
        if container["mounts"]:
            srun.append("--container-mounts=" + ",".join(container["mounts"]))
        params["slurm_srun_args"] = srun
    return params


def run_cell(
    measure: dict[str, Any], repeat: int, harness: Harness, manifest_path: Path
) -> RunRecord:
    """Submit one run, wait for it, write its record (the manifest); return the record."""
    measure = launched_with(measure, harness.backend, harness.site)
    spec, allocation = build_spec(measure, repeat, harness)
    if spec.paths.manifest.resolve() != manifest_path.resolve():
        raise ValueError(
            f"manifest path {manifest_path} does not belong to {spec.cell.id} r{repeat}"
        )
    # An earlier attempt's job goes, and its files, whatever wrote them: its logs and outcomes,
    # and what an upstream trainer left in its output folder (a checkpoint a TF1 Estimator would
    # restore from, training no step of this run). Its manifest is gone: Snakemake removed it.
    if harness.backend == "slurm":
        cancel_earlier_jobs(spec)
    try:
        shutil.rmtree(spec.paths.dir, ignore_errors=False)
    except FileNotFoundError:
        pass
    except OSError as err:  # a file it may not delete (root's, NFS's .nfs*): a status naming it
        spec.paths.dir.mkdir(parents=True, exist_ok=True)
        detail = f"an earlier attempt's files in {spec.paths.dir} cannot be removed: {err}"
        return record_unlaunched(spec, allocation, harness, measure, manifest_path, detail)
    spec.paths.dir.mkdir(parents=True)
    retract_figures(ResultPaths(Path(harness.results_root)), spec.cell.id, repeat)
    skipped = get_adapter(spec.adapter).skip_reason(spec.cell, spec.options)
    if skipped:  # decided by the suite alone: no job queues for it, no search probes
        return record_unlaunched(
            spec, allocation, harness, measure, manifest_path, skipped, status=Status.SKIPPED
        )
    spec, unresolved = with_resolved_batch(spec, harness)
    if unresolved is not None:
        status, detail = unresolved
        return record_unlaunched(
            spec, allocation, harness, measure, manifest_path, detail, status=status
        )
    try:
        spec, environment = with_environment(spec, harness)
    except environments.EnvironmentBuildError as err:
        return record_unlaunched(spec, allocation, harness, measure, manifest_path, str(err))
    measure = ran_in(measure, environment)
    executor = executor_for(spec, allocation, harness)
    with Interrupts() as interrupts:  # a signal during submission cancels the job once submitted
        interrupts.check()
        submitted = time.time()
        job = submit_patiently(executor, spec, interrupts)
        log.info("submitted %s r%d as %s job %s", spec.cell.id, repeat, harness.backend, job.job_id)
        try:
            interrupts.arm()
            job_status, detail = wait_for_outcomes(job, spec, allocation, harness)
        except Interrupted as err:
            log.warning("%s: cancelling job %s", err, job.job_id)
            job.cancel(check=False)
            raise SystemExit(130) from None
    noticed = time.time()
    mark_silent_tasks(spec, allocation, job_status, detail)
    record = record_outcome(
        spec, allocation, harness, measure, job, job_status, detail, submitted, noticed
    )
    return replace(record, environment=environment).write(manifest_path)


SUBMIT_RETRY_S = (10.0, 30.0, 60.0)  # waits before submitting again after sbatch failed
SUBMIT_ERRORS = (FailedJobError, FailedSubmissionError)  # submitit's: sbatch's exit or output
# sbatch's refusals of the job as asked, which no wait clears (Slurm's slurm_errtab: "Invalid
# partition name specified", "Invalid account or account/partition combination specified",
# "Requested node configuration is not available", "Invalid feature specification", "Memory
# specification can not be satisfied", "Access/permission denied"...), unlike a controller out of
# reach or busy ("Unable to contact slurm controller", "Socket timed out", a submit limit)
REFUSED = re.compile(
    r"invalid|not available|can not be satisfied|not permitted|permission denied", re.IGNORECASE
)


def submit_patiently(
    executor: submitit.Executor, spec: RunSpec, interrupts: Interrupts
) -> submitit.Job:
    """The run submitted; sbatch failing (a controller restarting, a brief outage) is tried
    again after each of SUBMIT_RETRY_S, then ends the rule with its message, not a traceback
    (no manifest is written: the next invocation submits the run again). sbatch refusing the
    job as asked (REFUSED: an invalid partition...) ends it at the first try."""
    for wait_s in (*SUBMIT_RETRY_S, None):
        try:
            return executor.submit(run_task, spec.to_dict())
        except SUBMIT_ERRORS as err:
            # the last try, or the site's settings or the layout refused: no retry helps those
            if wait_s is None or REFUSED.search(str(err)):
                message = f"dlperf: {spec.cell.id} r{spec.repeat} not submitted: {err}"
                raise SystemExit(message) from None
            log.warning("submitting %s failed (%s); again in %.0f s", spec.cell.id, err, wait_s)
            time.sleep(wait_s)
            interrupts.check()
    raise AssertionError("unreachable: the last try returns or raises")


def retract_figures(results: ResultPaths, cell_id: str, repeat: int) -> None:
    """A run being redone takes its old figure out of the tables and reports that show it (its
    per-run JSON says they do): interrupted, it leaves none showing a measurement that is gone,
    and the next invocation remakes them (they are the tables' and report's outputs)."""
    figure = results.run(cell_id, repeat).json
    if not figure.exists():
        return  # a first run: no table shows it
    for path in (results.runs, results.cells, results.steps, figure):
        path.unlink(missing_ok=True)
    remove_reports(results)
    log.info("%s r%d is redone: its old figure's tables and reports are removed", cell_id, repeat)


def with_resolved_batch(spec: RunSpec, harness: Harness) -> tuple[RunSpec, tuple[str, str] | None]:
    """A `max` cell's spec at the value its search found (the find_max_batch rule's output): its
    batch size, or the option it sweeps with `max`; else (status, reason) of the search that
    found none: the run is recorded with it, unrun."""
    option = maxbatch.searched_in(spec.cell, spec.options)
    if option is None:
        return spec, None
    path = MaxBatchPaths(spec.cell.id, Path(harness.results_root)).result
    found = maxbatch.load_result(path, spec.cell.id)
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
    settings = harness.site["environments"]
    site_python = settings["python"].get(adapter.name)
    if site_python:
        record = environments.site_python_record(adapter.name, site_python)
    else:
        env = environments.environment_for(
            environments.workflow_dir() / requirements, Path(settings["root"])
        )
        record = environments.ensure(env)
    # the workload imports dlperf's stdlib-only modules, and nothing else of dlperf's environment;
    # a site's interpreter keeps the PYTHONPATH the site set up for it (`module load` sets one)
    pythonpath = str(environments.dlperf_only_path(Path(settings["root"])))
    inherited = os.environ.get("PYTHONPATH") if site_python else None
    env_vars = spec.env | {
        "PYTHONPATH": os.pathsep.join(
            filter(None, [pythonpath, spec.env.get("PYTHONPATH"), inherited])
        )
    }
    return replace(spec, python=record["python"], env=env_vars), record
