# Helpers shared by the rules: the validated config, the matrix and input functions.
import json
import os
import sys
from pathlib import Path

from dlperf.config import ConfigError, Suite, validate
from dlperf.launch.allocation import allocate
from dlperf.launch.submit import harness_json
from dlperf.adapters import get_adapter
from dlperf.matrix import CELL_ID_RE
from dlperf.paths import RunPaths
from snakemake.logging import logger

try:
    validate(config, source="config (config/config.yaml, --configfile, --config)")
    SUITE = Suite(config)
    CELLS = {spec.id: spec for spec in SUITE.cell_specs()}
    # Place every cell before anything runs (dry-run included): an impossible layout stops here.
    for _spec in CELLS.values():
        allocate(
            _spec.cell,
            get_adapter(_spec.cell.framework).launcher,
            config["backend"],
            config["site"],
        )
except (ConfigError, ValueError) as err:
    raise WorkflowError(str(err)) from None
logger.info(f"dlperf plan: {SUITE.plan_summary()}")
# A baseline path is relative to the working directory, else to the workflow (the shipped ones).
for _baseline in config["baselines"]:
    if not Path(_baseline["path"]).exists() and Path(workflow.basedir, _baseline["path"]).exists():
        _baseline["path"] = str(Path(workflow.basedir, _baseline["path"]))

# Jobs inherit this process's environment: they run `python -m dlperf` with the interpreter
# Snakemake runs on (the project's venv), and read where and how runs are launched from
# DLPERF_HARNESS. It is not a param of any job, so switching backend or site reruns nothing.
os.environ.update(
    PATH=os.pathsep.join(
        [str(Path(sys.executable).parent), os.environ.get("PATH", "")]
    ),
    DLPERF_HARNESS=harness_json(config),
)


def cell_spec(wildcards):
    try:
        return CELLS[wildcards.cell]
    except KeyError:
        raise WorkflowError(
            f"cell {wildcards.cell} is not in the configured matrix"
        ) from None


def measure_params(wildcards):
    """What a run measures; a change here reruns that cell's runs and nothing else."""
    spec = cell_spec(wildcards)
    adapter = get_adapter(spec.cell.framework)
    window = config["window"]
    return json.dumps(
        {
            "cell": spec.cell.key(),
            "options": adapter.resolved_options(spec.options),
            "steps": adapter.steps_for(window["warmup"], window["measure"]),
            "device": config["device"],
        },
        sort_keys=True,
    )


def all_manifests():
    return [str(RunPaths(spec.id, repeat).manifest) for spec, repeat in SUITE.runs()]


def report_outputs():
    langs = config["report"]["languages"]
    return expand("results/report/report.{lang}.{ext}", lang=langs, ext=["md", "html"])


def final_outputs():
    return report_outputs()


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
