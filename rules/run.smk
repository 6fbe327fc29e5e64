# Fan-out: one job per (cell, repeat). Each submits one submitit job (local or Slurm), waits for
# it and writes every task's log and, last, the run's manifest: its only output, so a run that
# never finished is redone (the logs are watched by the tables' edited_logs param). What a run
# measures is its params; this line and the harness code are not (profiles/default: no code
# trigger), so editing them never redoes a measured run. The repeat is the manifest folder's.


rule run_cell:
    input:
        run_inputs,  # a `max` cell's search; a stamp: another measure, a shorter limit's timeout
    output:
        RUN_MANIFEST_PATTERN,
    log:
        RUN_LOG_PATTERN,
    priority: run_priority
    conda:
        "../envs/dlperf.yaml"
    threads: workflow.cores if config["backend"] == "local" else 1  # local runs never share the CPUs
    params:
        measure=measure_params,
    shell:
        "python -m dlperf run-cell --measure {params.measure:q} --manifest {output:q}"
        " > {log:q} 2>&1"
