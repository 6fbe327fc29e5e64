# Helpers of rules/maxbatch.smk and rules/adaptive.smk (kept apart from rules/common.smk so
# each feature stays in its own files); included right after rules/common.smk.
from dlperf.matrix import CELL_ID_RE as MAX_CELL_RE
from dlperf.measure.decision import wants_more
from dlperf.paths import (
    ADAPTIVE_RUNS_LOG_PATTERN,
    ADAPTIVE_RUNS_PATTERN,
    MAX_BATCH_LOG_PATTERN,
    MAX_BATCH_RESULT_PATTERN,
    REPEAT_DECISION_LOG_PATTERN,
    REPEAT_DECISION_PATTERN,
)


@job_function
def search_inputs(wildcards):
    return CAMPAIGN.search_inputs(cell_spec(wildcards).id)


@job_function
def max_batch_params(wildcards):
    """What a `max` cell's search depends on (dlperf.plan.maxbatch.search_params)."""
    return CAMPAIGN.search_json(cell_spec(wildcards).id)


@job_function
def decision_inputs(wildcards):
    return CAMPAIGN.decision_inputs(wildcards.cell, int(wildcards.runs))


@job_function
def decided_runs(wildcards):
    """Walk the cell's decisions: each one that asks for another run adds it and the next."""
    runs, top = config["repeats"], config["adaptive_repeats"]["max"]
    decisions = []
    while runs < top:
        decision = checkpoints.repeat_decision.get(
            cell=wildcards.cell, runs=runs
        ).output[0]
        decisions.append(decision)
        try:
            more = wants_more(Path(decision))
        except ValueError as err:
            raise WorkflowError(str(err)) from None
        if not more:
            break
        runs += 1
    return CAMPAIGN.cell_manifests(wildcards.cell, runs) | {"decisions": decisions}


@job_function
def adaptive_params(wildcards):
    return CAMPAIGN.adaptive_params(wildcards.cell, int(wildcards.runs))
