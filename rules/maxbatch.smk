# `batch_size: max`, found not typed: one search per `max` cell (dlperf.plan.maxbatch), its probe runs
# launched as any run is (dlperf.launch.probes). Its result is cached: the search is redone only
# when what it depends on changes (the cell, its options, steps and device, the search settings),
# and then so are the cell's runs, which train at the batch size it found. Cells with a number
# never need it.
# Helpers: rules/common_searches.smk.


rule find_max_batch:
    input:
        search_inputs,  # a stamp when searched with other params (another environment too)
    output:
        # its probes (MaxBatchPaths.probes) are no output: Snakemake would delete them when a
        # search is interrupted, and a resumed search reuses those that finished
        result=MAX_BATCH_RESULT_PATTERN,
    log:
        MAX_BATCH_LOG_PATTERN,
    wildcard_constraints:
        cell=MAX_CELL_RE,
    conda:
        "../envs/dlperf.yaml"
    threads: workflow.cores if config["backend"] == "local" else 1  # probes never share the CPUs
    params:
        search=max_batch_params,
    shell:
        "python -m dlperf.launch.probes --search {params.search:q} --result {output.result:q}"
        " > {log:q} 2>&1"
