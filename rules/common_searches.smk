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

# --- batch_size: max (rules/maxbatch.smk) ---------------------------------------------------

MAX_CELL_RE = r"[a-z0-9_]+\.[a-z0-9_]+\.[a-z0-9_]+\.(?:xla|noxla)\.bmax(?:-[a-z0-9_]+)?\.[0-9]+n[0-9]+g"


def max_batch_search(wildcards):
    """The search result a run of a `max` cell trains with; nothing for other cells."""
    if cell_spec(wildcards).cell.batch_size != "max":
        return []
    return [str(RESULTS.max_batch(wildcards.cell).result)]


def max_batch_params(wildcards):
    """What the search depends on: what the cell's runs measure (their steps: the confirmation
    runs as long), and the search settings."""
    measure = json.loads(measure_params(wildcards))
    return json.dumps(measure | {"search": config["max_batch_search"]}, sort_keys=True)


# --- adaptive repeats (rules/adaptive.smk) --------------------------------------------------


def cell_run_files(cell_id, repeats):
    """Manifests and task logs of some runs of a cell: what a decision reads."""
    runs = [RESULTS.run(cell_id, r) for r in repeats]
    return {
        "manifests": [str(r.manifest) for r in runs],
        "logs": [str(r.dir / name) for r in runs for name in task_logs(cell_id)],
    }


def decision_inputs(wildcards):
    return cell_run_files(wildcards.cell, range(1, int(wildcards.runs) + 1))


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
    return cell_run_files(wildcards.cell, range(1, runs + 1)) | {"decisions": decisions}


def adaptive_run_lists():
    """Every cell's list of the runs it got (inputs of the tables); none without adaptive repeats."""
    if not config.get("adaptive_repeats"):
        return []
    return [str(RESULTS.adaptive_runs(cell_id)) for cell_id in CELLS]


def adaptive_params():
    return json.dumps(
        {k: config.get(k) for k in ("window", "repeats", "adaptive_repeats")},
        sort_keys=True,
    )
