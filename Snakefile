# dlperf: DLPerf benchmarks as a workflow. `snakemake --cores 2` runs locally (submitit's local
# executor); `snakemake --profile slurm` runs every cell as a Slurm job.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


include: "rules/common.smk"


wildcard_constraints:
    cell=CELL_ID_RE,  # readable ids that can never escape results/
    repeat=r"[1-9][0-9]*",


include: "rules/run.smk"
include: "rules/tables.smk"
include: "rules/report.smk"


rule all:
    default_target: True
    input:
        final_outputs(),
