# Fan-out: one job per (cell, repeat). Each submits one submitit job (local or Slurm), waits for
# it and writes the run's manifest beside every rank's log. A shell rule, so that editing the
# harness code never marks measured runs as changed.


rule run_cell:
    output:
        manifest=RUN_MANIFEST_PATTERN,
    log:
        RUN_LOG_PATTERN,
    conda:
        "../envs/dlperf.yaml"
    threads: workflow.cores if config["backend"] == "local" else 1  # local runs never share the CPUs
    params:
        measure=measure_params,
    shell:
        "python -m dlperf run-cell --measure {params.measure:q} --repeat {wildcards.repeat}"
        " --manifest {output.manifest:q} > {log:q} 2>&1"
