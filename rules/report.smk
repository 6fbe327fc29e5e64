# Plots and the English and Chinese reports, rendered from one data model. The settings the
# report shows are a param: changing the title, footnotes or window re-renders it.


rule report:
    input:
        cells=str(RESULTS.cells),
        runs=str(RESULTS.runs),
        manifests=all_manifests(),
        baselines=[b["path"] for b in config["baselines"]],
        code=package_files("report", "status.py"),
    output:
        reports=report_outputs(),
        plots=directory(str(RESULTS.plots)),
    log:
        str(RESULTS.rule_log("report")),
    conda:
        "../envs/dlperf.yaml"
    params:
        settings=report_params(),
    script:
        "../workflow/scripts/report.py"
