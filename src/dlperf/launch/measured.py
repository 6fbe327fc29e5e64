"""What a run of a cell measures: the cell, its adapter's measured options, the steps, the device,
the workload's code digest, the framework's own environment and the site's settings that change
what runs (`measure_of`). The run rule's param, the record's `measure` and
the tables' freshness check are this one value; its digest names it, and a run recorded with
another digest is redone (`redo_inputs`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dlperf import environments
from dlperf.adapters import get_adapter
from dlperf.matrix import CellSpec
from dlperf.paths import RunPaths
from dlperf.status import Status, timed_out_sooner
from dlperf.util import json_digest, marker_time_ns, stamp_inputs

# The site's settings that change what runs, as a measure names them (site_measure)
SITE_MEASURE_FIELDS = ("env", "setup", "container")
# What a later stage reads of the record's measure (measure_of makes it); only a built-in
# workload's has its code, only a framework with an environment of its own its identity, only a
# site that sets them its variables, setup lines and container (site_measure).
OPTIONAL_MEASURE_FIELDS = ("workload_code", "environment", *SITE_MEASURE_FIELDS)
MEASURE_FIELDS: dict[str, Any] = {
    "cell": dict[str, Any],
    "options": dict[str, Any],
    "steps": int,
    "device": str,
    "workload_code": str,
    "environment": str,
    "env": dict[str, str],
    "setup": list[str],
    "container": str,
}


def measure_of(
    spec: CellSpec, config: dict[str, Any], workflow_dir: Path | None = None
) -> dict[str, Any]:
    """What a run of this cell of a validated suite measures; a change of it reruns the cell's
    runs and nothing else. For a built-in workload it includes its code (workloads.code_digest):
    editing the workload reruns its cells, editing the harness (which only launches and reads
    runs) none. For a framework with an environment of its own, that environment's identity
    (environments.identity_now; its pins under `workflow_dir`, default the campaign's): a changed
    pin or exclude, or the site's interpreter named or another, reruns its cells, even in a
    results folder moved or copied elsewhere (the pins are no rule's input, so their time is not
    what tells)."""
    adapter = get_adapter(spec.cell.framework)
    window = config["window"]
    measure = {
        "cell": spec.cell.key(),
        "options": adapter.measured_options(spec.cell, spec.options),
        "steps": adapter.steps_for(
            window["warmup"],
            window["measure"],
            adapter.resolved_options(spec.options),
            spec.cell.model,
        ),
        "device": config["device"],
    }
    code = adapter.code_digest()
    if code:
        measure["workload_code"] = code
    site = config.get("site", {})  # a validated suite's always; a hand-made measure's may lack it
    measure |= site_measure(config.get("backend"), site)
    requirements = getattr(adapter, "requirements", None)
    if requirements:
        folder = workflow_dir or environments.workflow_dir()
        settings = site["environments"]
        identity = environments.identity_now(adapter.name, folder / requirements, settings)
        if identity:
            measure["environment"] = identity
    return measure


def site_measure(backend: str | None, site: dict[str, Any]) -> dict[str, Any]:
    """What of a validated site changes what a run measures, as far as it sets it: the variables
    of every rank (NCCL_IB_DISABLE, OMP_NUM_THREADS, an allocator's settings), and on Slurm,
    where they apply, the setup lines (`module load`, a virtualenv) and the container's image:
    the software that runs. A change of one redoes the runs measured under the old. The rest
    (partition, account, mounts, extra sbatch options, time limits) is how a run is launched,
    and redoes nothing."""
    measure: dict[str, Any] = {"env": dict(site["env"])} if site.get("env") else {}
    if backend == "slurm":
        if site.get("setup"):
            measure["setup"] = list(site["setup"])
        if site.get("container"):
            measure["container"] = site["container"]["image"]
    return measure


def launched_with(measure: dict[str, Any], backend: str, site: dict[str, Any]) -> dict[str, Any]:
    """The measure of a run as the submitter launches it: with the site settings of its harness
    (site_measure), which are the planned ones in the workflow; a run launched with others (a
    hand-given --harness) records them, and is of another measure than the suite's."""
    planned = {k: v for k, v in measure.items() if k not in SITE_MEASURE_FIELDS}
    return planned | site_measure(backend, site)


def ran_in(measure: dict[str, Any], environment: dict[str, Any] | None) -> dict[str, Any]:
    """The measure of a run as it ran: in the environment of `environment` (its record), which
    is not the one planned where its pins changed meanwhile; the run is then of another measure
    than the suite's, and redone."""
    identity = environments.identity(environment)
    if identity is None or measure.get("environment") == identity:
        return measure
    return measure | {"environment": identity}


def measure_digests(specs: Iterable[CellSpec], config: dict[str, Any]) -> dict[str, str]:
    """Cell id -> the digest of what its runs measure, for every cell of the suite."""
    return {spec.id: measure_digest(measure_of(spec, config)) for spec in specs}


def measure_digest(measure: dict[str, Any]) -> str:
    """12 hex digits of the measure's canonical JSON: equal digests, equal measures."""
    return json_digest(measure)


def recorded_stale(run: RunPaths, digest: str, time_limit_min: float | None = None) -> bool:
    """Whether the run has a record the suite would not take as it stands (then it is redone,
    even when Snakemake's records of its params are lost: a fresh clone, a new machine): of
    another measure than `digest`, or a timeout under a shorter limit than `time_limit_min`
    (status.timed_out_sooner: it may finish under this one). The marker of `digest` answers in
    one stat while the record has not changed since the marker was written (its ctime, which
    `cp -p` or `touch -r` cannot set back); a record without it (a timeout has none:
    RunRecord.write), or changed since, is read to tell, and the marker touched where the record
    is of `digest` and no timeout."""
    marker = run.measured(digest)
    try:
        changed_ns = run.manifest.stat().st_ctime_ns
    except FileNotFoundError:
        return False
    try:
        if changed_ns <= marker_time_ns(marker):
            return False
    except FileNotFoundError:
        if any(run.dir.glob("measured-*")):
            return True
    try:
        data = json.loads(run.manifest.read_text())
        recorded = measure_digest(data["measure"])
    except (OSError, ValueError, KeyError, TypeError):
        return False  # an unreadable record is the tables' parse_error, which names it
    if recorded != digest:
        return True
    if data.get("status") == Status.TIMEOUT:
        limit = data.get("time_limit_min")
        return time_limit_min is not None and timed_out_sooner(
            Status.TIMEOUT, limit, time_limit_min
        )
    marker.touch()  # read once: the record is of this measure
    return False


def redo_inputs(
    run: RunPaths, digest: str, time_limit_min: float, other_value: bool = False
) -> list[str]:
    """The run rule's extra input: a stamp that redoes the run when its record is stale against
    `digest` and the suite's `time_limit_min` (recorded_stale), or, `other_value`, a `max` cell's
    run of another value than its search holds now (maxbatch.recorded_other_value), even with
    Snakemake's records of its params lost (util.stamp_inputs)."""
    stale = other_value or recorded_stale(run, digest, time_limit_min)
    return stamp_inputs(run.redo, run.manifest, stale)
