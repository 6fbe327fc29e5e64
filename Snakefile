# dlperf: DLPerf benchmarks as a workflow. `snakemake --cores 2` runs locally (submitit's local
# executor); `snakemake --profile slurm` runs every cell as a Slurm job.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


include: "rules/common.smk"
include: "rules/run.smk"
include: "rules/tables.smk"
include: "rules/report.smk"


rule all:
    input:
        final_outputs(),
    default_target: True
