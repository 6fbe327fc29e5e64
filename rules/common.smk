# The workflow's one package object (dlperf.campaign.Campaign, computed and tested there): the
# validated suite, its cells and placements, the plan's run order, and the inputs and params of
# the rules. Below: the names the rules use, each a thin wrapper of the campaign.
import json
import os
from pathlib import Path

from dlperf.campaign import Campaign
from dlperf.rulecode import job_function
from dlperf.errors import ConfigError
from dlperf.matrix import CELL_ID_RE
from dlperf.paths import RUN_LOG_PATTERN, RUN_MANIFEST_PATTERN
from snakemake.logging import logger

try:
    # The suite is what the user wrote plus the schema's defaults (`--config suite=FILE`, a
    # --configfile with cases, else config/config.yaml); errors name the file, line and key.
    CAMPAIGN = Campaign.load(
        config,
        workflow.overwrite_configfiles or [],
        dict(workflow.config_settings.config or {}),
        basedir=Path(workflow.basedir),
    )
except (ConfigError, ValueError) as err:
    raise WorkflowError(str(err)) from None
config.clear()
config.update(CAMPAIGN.config)
RESULTS = CAMPAIGN.results
CELLS = CAMPAIGN.cells
logger.info(f"dlperf plan: {CAMPAIGN.suite.plan_summary()}")
_PLAN = CAMPAIGN.plan()
(logger.info if _PLAN.scheduled else logger.warning)(_PLAN.message)
os.environ.update(CAMPAIGN.job_environment())


def cell_spec(wildcards):
    try:
        return CAMPAIGN.cell(wildcards.cell)
    except ValueError as err:
        raise WorkflowError(str(err)) from None


@job_function
def run_priority(wildcards):
    """Earlier in the plan, higher: repeat k of every cell before repeat k+1 of any."""
    return _PLAN.priorities.get((wildcards.cell, int(wildcards.repeat)), 0)


@job_function
def measure_params(wildcards):
    return CAMPAIGN.measure_json(cell_spec(wildcards).id)


@job_function
def run_inputs(wildcards):
    """One input function, not three: Snakemake calls each once per job (5,000 jobs)."""
    return CAMPAIGN.run_inputs(cell_spec(wildcards).id, int(wildcards.repeat))
