# Helpers shared by the rules: the validated suite, the matrix, paths and input functions.
import functools
import json
import os
import sys
from pathlib import Path

from dlperf.adapters import Launcher, get_adapter
from dlperf.config import Suite, resolve_baselines, snakemake_config
from dlperf.errors import ConfigError
from dlperf.launch.allocation import LocalMachine, allocate
from dlperf.launch.record import measure_digest, measure_of, redo_inputs
from dlperf.launch.submit import harness_json
from dlperf.matrix import CELL_ID_RE
from dlperf.plan import PlanError, make_plan, plan_text, run_priorities
from dlperf.report.load import load_baseline
from dlperf.paths import (
    RUN_LOG_PATTERN,
    RUN_MANIFEST_PATTERN,
    ResultPaths,
    RunPaths,
)
from snakemake.logging import logger

RESULTS = ResultPaths()

try:
    # The suite is what the user wrote plus the schema's defaults (`--config suite=FILE`, a
    # --configfile with cases, else config/config.yaml); errors name the file, line and key.
    _suite_config = snakemake_config(
        config,
        workflow.overwrite_configfiles or [],
        dict(workflow.config_settings.config or {}),
        search=[Path.cwd(), Path(workflow.basedir)],
    )
    config.clear()
    config.update(_suite_config)
    resolve_baselines(config, search=[Path("."), Path(workflow.basedir)])
    for _i, _baseline in enumerate(
        config["baselines"]
    ):  # read now: a bad one stops no rule late
        load_baseline(_baseline["name"], Path(_baseline["path"]), _i)
    SUITE = Suite(config)
    CELLS = {spec.id: spec for spec in SUITE.cell_specs()}
    # Place every cell before anything runs (dry-run included): an impossible layout stops here.
    _local = (
        LocalMachine.probe(config["device"]) if config["backend"] == "local" else None
    )
    ALLOCATIONS = {
        cell_id: allocate(
            spec.cell,
            get_adapter(spec.cell.framework).launcher,
            config["backend"],
            config["site"],
            _local,
        )
        for cell_id, spec in CELLS.items()
    }
except (ConfigError, ValueError) as err:
    raise WorkflowError(str(err)) from None
logger.info(f"dlperf plan: {SUITE.plan_summary()}")


def plan_site():
    """make_plan's site arguments: locally the site is this machine, one node, one run at a
    time; else the suite's `site`."""
    if _local is None:
        return {}
    return dict(nodes=1, gpus_per_node=max(_local.devices, 1), exclusive=True)


def _campaign_plan():
    """The campaign's plan (pulp), logged in every run and dry run; its run order becomes the
    jobs' priorities. The plan rule (rules/report.smk) writes the same plan for the report.
    """
    try:
        plan = make_plan(config, RESULTS.root, time_limit_s=2.0, **plan_site())
    except (
        PlanError
    ) as err:  # the jobs are still listed; the plan says why it has no schedule
        logger.warning(f"dlperf plan: no schedule: {err}")
        return {}
    logger.info(plan_text(plan, cells=False))
    return run_priorities(plan)


RUN_PRIORITY = _campaign_plan()

# Jobs inherit this process's environment: they run `python -m dlperf` with the interpreter
# Snakemake runs on (the project's venv), and read where and how runs are launched from
# DLPERF_HARNESS. It is not a param of any job, so switching backend or site reruns nothing.
os.environ.update(
    PATH=os.pathsep.join(
        [str(Path(sys.executable).parent), os.environ.get("PATH", "")]
    ),
    DLPERF_HARNESS=harness_json(config),
    DLPERF_WORKFLOW_DIR=str(Path(workflow.basedir)),  # where envs/*.txt are
)


def run_priority(wildcards):
    """Earlier in the plan, higher: repeat k of every cell before repeat k+1 of any."""
    return RUN_PRIORITY.get((wildcards.cell, int(wildcards.repeat)), 0)


def cell_spec(wildcards):
    try:
        return CELLS[wildcards.cell]
    except KeyError:
        raise WorkflowError(
            f"cell {wildcards.cell} is not in the configured matrix"
        ) from None


def measure_params(wildcards):
    """What a run measures (dlperf.launch.record.measure_of); a change reruns that cell's runs
    and nothing else."""
    return json.dumps(_measure(wildcards.cell), sort_keys=True)


@functools.cache
def _measure(cell_id):
    return measure_of(CELLS[cell_id], config)


def redo_input(wildcards):
    """A run recorded with another measure is redone even without Snakemake's records of its
    params (dlperf.launch.record.redo_inputs)."""
    cell_spec(wildcards)
    run = RESULTS.run(wildcards.cell, int(wildcards.repeat))
    return redo_inputs(run, measure_digest(_measure(wildcards.cell)))


def environment_pins(wildcards):
    """The pinned requirements of the cell's own environment, if it has one: changing a pin
    reruns that framework's cells and nothing else (dlperf.environments)."""
    requirements = getattr(
        get_adapter(cell_spec(wildcards).cell.framework), "requirements", None
    )
    return [str(Path(workflow.basedir, requirements))] if requirements else []


def every_run():
    """(cell id, repeat) of every run there may be: the `repeats`, and with adaptive repeats as
    many as they may add."""
    top = max(config["repeats"], (config.get("adaptive_repeats") or {}).get("max", 0))
    return [(cell_id, repeat) for cell_id in CELLS for repeat in range(1, top + 1)]


def all_manifests():
    """Every planned run's manifest (formatted, not built from Path objects: 5,000 runs)."""
    return [
        RUN_MANIFEST_PATTERN.format(cell=spec.id, repeat=repeat)
        for spec, repeat in SUITE.runs()
    ]


def task_logs(cell_id):
    """The log file names a run of `cell_id` writes: one per rank, or one per node."""
    allocation = ALLOCATIONS[cell_id]
    per_node = get_adapter(CELLS[cell_id].cell.framework).launcher is Launcher.PER_NODE
    tasks = allocation.nodes * allocation.tasks_per_node
    return [RunPaths(cell_id, 1).task_log(i, per_node).name for i in range(tasks)]


def edited_logs(runs):
    """Task logs changed or deleted since their run wrote its manifest (written last): part of a
    param of whatever reads the logs, so a hand edit rebuilds it and nothing else does.

    The logs are not Snakemake files: 5,000 runs of up to 32 ranks would be 86,000 more files to
    index on every dry run (4.4x a bare Snakefile). Their manifests are files, so a run that never
    finished is redone; a deleted log is that run's parse_error, which names it.
    """
    changed = []
    for cell_id, repeat in runs:
        run = RESULTS.run(cell_id, repeat)
        try:
            written = os.stat(run.manifest).st_mtime_ns
        except FileNotFoundError:
            continue  # not run yet, or to be redone: the manifest brings its logs
        for name in task_logs(cell_id):
            path = str(run.dir / name)
            try:
                log = os.stat(path)
            except FileNotFoundError:
                changed.append([path, "missing"])
                continue
            if log.st_mtime_ns > written:
                changed.append([path, log.st_mtime_ns, log.st_size])
    return changed


def tables_params():
    """What the tables are computed with besides the runs' manifests."""
    keys = ("window", "repeats", "variance", "adaptive_repeats")
    return json.dumps({k: config.get(k) for k in keys}, sort_keys=True)


def report_params():
    """Every setting the report shows or uses: a change re-renders it, never leaves it stale."""
    keys = (
        "name",
        "report",
        "baselines",
        "repeats",
        "window",
        "backend",
        "device",
        "time_limit_min",
        "cases",
    )
    return json.dumps({k: config[k] for k in keys}, sort_keys=True, default=str)


def plan_params():
    """What the plan is made of besides earlier runs: a change remakes it (before any run, as
    the plan logged at start-up), so the report states the plan that was followed."""
    keys = ("cases", "repeats", "site", "time_limit_min", "backend", "device")
    settings = {k: config[k] for k in keys} | {
        "results": str(RESULTS.root),
        "plan_site": plan_site(),  # this machine, when local
        "time_limit_s": 2.0,
    }
    return json.dumps(settings, sort_keys=True, default=str)


def report_outputs():
    langs = config["report"]["languages"]
    return [str(RESULTS.report(lang, ext)) for lang in langs for ext in ("md", "html")]


def final_outputs():
    """The reports, and every run: a run whose manifest went missing (deleted, or its rerun
    interrupted) is redone even when the tables look complete."""
    return report_outputs() + all_manifests()


def package_files(*names):
    """Source files of the dlperf package (modules or subpackages) a rule's output depends on."""
    import dlperf

    root = Path(dlperf.__file__).parent
    files = []
    for name in names:
        path = root / name
        if path.is_dir():
            files += sorted(
                str(p)
                for p in path.rglob("*")
                if p.is_file() and "__pycache__" not in p.parts
            )
        else:
            files.append(str(path))
    return files
