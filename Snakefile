# dlperf: DLPerf benchmarks as a workflow. `snakemake --cores 2` runs the default suite locally
# (submitit's local executor); `--config suite=FILE` runs another; `snakemake --profile slurm`
# runs every cell as a Slurm job. The suite is read by rules/common.smk, not by a `configfile:`
# directive: Snakemake would merge the default suite under every suite of the user's own.
from snakemake.utils import min_version

min_version("9.0")


report: "workflow/report/workflow.rst"


include: "rules/common.smk"
include: "rules/common_searches.smk"


wildcard_constraints:
    cell=CELL_ID_RE,  # readable ids that can never escape results/
    repeat=r"[1-9][0-9]*",


include: "rules/maxbatch.smk"
include: "rules/run.smk"
include: "rules/adaptive.smk"
include: "rules/tables.smk"
include: "rules/report.smk"


rule all:
    default_target: True
    input:
        CAMPAIGN.final_outputs(),


# The campaign, its plan and the rules live as long as the process: the garbage collector need not
# rescan them on each of the full collections Snakemake's thousands of jobs set off.
import gc

gc.freeze()
