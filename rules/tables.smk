# Parse every run's logs and aggregate: steps, runs and cells tables, one JSON per run.
# Inputs are everything a figure comes from: the manifests, the window (a param), the task logs
# edited since their run (a param), and the parsers and statistics (editing them rebuilds the
# tables, never reruns a run).


rule tables:
    input:
        manifests=CAMPAIGN.all_manifests(),
        adaptive=CAMPAIGN.adaptive_run_lists(),  # runs beyond `repeats` (rules/adaptive.smk)
        code=CAMPAIGN.code_inputs("tables"),
        remake=CAMPAIGN.remake_inputs("tables"),  # made with other params (dlperf.campaign)
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
        made=touch(CAMPAIGN.made_marker("tables")),  # made with these params (dlperf.campaign)
    log:
        str(RESULTS.rule_log("tables")),
    conda:
        "../envs/dlperf.yaml"
    threads: CAMPAIGN.tables_threads(workflow.cores)
    params:
        **CAMPAIGN.rule_params("tables"),  # settings, edited_logs
    script:
        "../workflow/scripts/tables.py"
