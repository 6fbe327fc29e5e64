# Parse every run's logs and aggregate: steps, runs and cells tables, one JSON per run.
# Inputs are everything a figure comes from: the manifests, the raw task logs, the window (a
# param), and the parsers and statistics (editing them rebuilds the tables, never reruns a run).


rule tables:
    input:
        manifests=all_manifests(),
        logs=all_logs(),
        adaptive=adaptive_run_lists(),  # runs beyond `repeats` (rules/adaptive.smk)
        code=package_files("parse", "stats.py", "status.py", "tables.py", "adapters"),
    output:
        steps=str(RESULTS.steps),
        runs=report(
            str(RESULTS.runs),
            category="Tables",
            caption="../workflow/report/tables.rst",
        ),
        cells=report(
            str(RESULTS.cells),
            category="Tables",
            caption="../workflow/report/tables.rst",
        ),
        json=directory(str(RESULTS.json)),
    log:
        str(RESULTS.rule_log("tables")),
    conda:
        "../envs/dlperf.yaml"
    params:
        settings=tables_params(),
    script:
        "../workflow/scripts/tables.py"
