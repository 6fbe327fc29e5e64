# Fan-out: one job per (cell, repeat). Each submits one submitit job (local or Slurm), waits for
# it and writes every task's log and, last, the run's manifest. A shell rule, so that editing the
# harness code never marks measured runs as changed. One rule per set of task logs (see
# run_groups): `run_cell_r2` runs cells whose runs write rank0.log and rank1.log.

for _name, _cells, _logs in run_groups():

    rule:
        name:
            _name
        input:
            environment_pins,
            max_batch_search,  # a `max` cell's search result (rules/maxbatch.smk)
        output:
            manifest=RUN_MANIFEST_PATTERN,
            logs=[str(Path(RUN_MANIFEST_PATTERN).parent / log) for log in _logs],
        log:
            RUN_LOG_PATTERN,
        wildcard_constraints:
            cell=_cells,
        priority: run_priority
        conda:
            "../envs/dlperf.yaml"
        threads: workflow.cores if config["backend"] == "local" else 1  # local runs never share the CPUs
        params:
            measure=measure_params,
        shell:
            "python -m dlperf run-cell --measure {params.measure:q} --repeat {wildcards.repeat}"
            " --manifest {output.manifest:q} > {log:q} 2>&1"
