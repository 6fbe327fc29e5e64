# Parse every run's logs and aggregate: steps, runs and cells tables, one JSON per run.
# The parsers and statistics are inputs, so editing them rebuilds the tables (and never reruns a run).


rule tables:
    input:
        manifests=all_manifests(),
        code=package_files("parse", "stats.py", "tables.py", "adapters"),
    output:
        steps="results/tables/steps.tsv.gz",
        runs="results/tables/runs.tsv",
        cells="results/tables/cells.tsv",
        json=directory("results/json"),
    log:
        "results/logs/tables.log",
    conda:
        "../envs/dlperf.yaml"
    script:
        "../workflow/scripts/tables.py"
