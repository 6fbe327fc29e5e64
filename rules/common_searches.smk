# Helpers of rules/maxbatch.smk and rules/adaptive.smk (kept apart from rules/common.smk so
# each feature stays in its own files); included right after rules/common.smk.
from dlperf.paths import (
    ADAPTIVE_RUNS_LOG_PATTERN,
    ADAPTIVE_RUNS_PATTERN,
    MAX_BATCH_LOG_PATTERN,
    MAX_BATCH_PROBES_PATTERN,
    MAX_BATCH_RESULT_PATTERN,
    REPEAT_DECISION_LOG_PATTERN,
    REPEAT_DECISION_PATTERN,
)

# --- batch_size: max, and an option swept with max (rules/maxbatch.smk) ---------------------

from dlperf.matrix import CELL_ID_RE as MAX_CELL_RE
from dlperf.maxbatch import search_params, searched


def max_batch_search(wildcards):
    """The search result a run of a `max` cell trains with; nothing for other cells."""
    if searched(cell_spec(wildcards)) is None:
        return []
    return [str(RESULTS.max_batch(wildcards.cell).result)]


def run_inputs(wildcards):
    """A run's inputs: its environment's pins, for a `max` cell its search result, and for a run
    recorded with another measure the stamp that redoes it (rules/run.smk). One
    input function, not two: Snakemake inspects each one per job (5,000 jobs, 5,000 calls).
    """
    return (
        environment_pins(wildcards)
        + max_batch_search(wildcards)
        + redo_input(wildcards)
    )


def max_batch_params(wildcards):
    """What the search depends on (dlperf.maxbatch.search_params)."""
    measure = json.loads(measure_params(wildcards))
    return json.dumps(
        search_params(cell_spec(wildcards), measure, config), sort_keys=True
    )


# --- adaptive repeats (rules/adaptive.smk) --------------------------------------------------


def cell_manifests(cell_id, repeats):
    """Manifests of some runs of a cell: what a decision reads, with their task logs (watched by
    the decision's edited_logs param)."""
    return {"manifests": [str(RESULTS.run(cell_id, r).manifest) for r in repeats]}


def decision_inputs(wildcards):
    return cell_manifests(wildcards.cell, range(1, int(wildcards.runs) + 1))


def decided_runs(wildcards):
    """Walk the cell's decisions: each one that asks for another run adds it and the next."""
    runs, top = config["repeats"], config["adaptive_repeats"]["max"]
    decisions = []
    while runs < top:
        decision = checkpoints.repeat_decision.get(
            cell=wildcards.cell, runs=runs
        ).output[0]
        decisions.append(decision)
        if not json.loads(Path(decision).read_text())["more"]:
            break
        runs += 1
    return cell_manifests(wildcards.cell, range(1, runs + 1)) | {"decisions": decisions}


def adaptive_run_lists():
    """Every cell's list of the runs it got (inputs of the tables); none without adaptive repeats."""
    if not config.get("adaptive_repeats"):
        return []
    return [str(RESULTS.adaptive_runs(cell_id)) for cell_id in CELLS]


def adaptive_params(wildcards):
    """The decision's settings, and its runs' task logs edited since they ran."""
    settings = {k: config.get(k) for k in ("window", "repeats", "adaptive_repeats")}
    runs = [(wildcards.cell, r) for r in range(1, int(wildcards.runs) + 1)]
    return json.dumps(settings | {"edited_logs": edited_logs(runs)}, sort_keys=True)
