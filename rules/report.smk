# Plots and the English and Chinese reports, rendered from one data model.


rule report:
    input:
        cells="results/tables/cells.tsv",
        runs="results/tables/runs.tsv",
        manifests=all_manifests(),
        code=package_files("report"),
    output:
        report_outputs(),
    log:
        "results/logs/report.log",
    conda:
        "../envs/dlperf.yaml"
    script:
        "../workflow/scripts/report.py"
