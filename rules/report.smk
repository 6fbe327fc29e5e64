# Plots and the English and Chinese reports, rendered from one data model.


rule report:
    input:
        cells="results/tables/cells.tsv",
        runs="results/tables/runs.tsv",
        manifests=all_manifests(),
        baselines=[b["path"] for b in config["baselines"]],
        code=package_files("report"),
    output:
        reports=report_outputs(),
        plots=directory("results/plots"),
    log:
        "results/logs/report.log",
    conda:
        "../envs/dlperf.yaml"
    script:
        "../workflow/scripts/report.py"
