# The campaign plan the runs follow, the plots and the English and Chinese reports, rendered from
# one data model. The settings the report shows are a param: changing the title, footnotes or
# window re-renders it. `snakemake --report report.html` collects the reports, plots and tables
# (report() flags below and in rules/tables.smk, captions in workflow/report/).


rule plan:
    input:
        code=CAMPAIGN.code_inputs("plan"),
        remake=CAMPAIGN.remake_inputs("plan"),
    output:
        plan=str(RESULTS.tables / "plan.json"),
        made=touch(CAMPAIGN.made_marker("plan")),
    log:
        str(RESULTS.rule_log("plan")),
    priority: 1000000  # before the runs, which change the durations it is made from
    localrule: True
    conda:
        "../envs/dlperf.yaml"
    params:
        **CAMPAIGN.rule_params("plan"),
    script:
        "../workflow/scripts/plan.py"


rule report:
    input:
        cells=str(RESULTS.cells),
        runs=str(RESULTS.runs),
        steps=str(RESULTS.steps),
        plan=str(RESULTS.tables / "plan.json"),
        baselines=[b["path"] for b in config["baselines"]],
        code=CAMPAIGN.code_inputs("report"),
        remake=CAMPAIGN.remake_inputs("report"),
    output:
        reports=[
            report(
                path,
                category="Reports",
                caption="../workflow/report/reports.rst",
                labels={"report": Path(path).name},
            )
            for path in CAMPAIGN.report_outputs()
        ],
        plots=report(
            directory(str(RESULTS.plots)),
            patterns=["{model}.{precision}.{batch}.{kind}.{lang}.png"],
            category="Plots",
            subcategory="{model} {precision} {batch}",
            caption="../workflow/report/plots.rst",
            labels={"plot": "{kind}", "language": "{lang}"},
        ),
        made=touch(CAMPAIGN.made_marker("report")),
    log:
        str(RESULTS.rule_log("report")),
    conda:
        "../envs/dlperf.yaml"
    threads: min(workflow.cores, len(config["report"]["languages"]))  # a process per language
    params:
        **CAMPAIGN.rule_params("report"),
    script:
        "../workflow/scripts/report.py"
