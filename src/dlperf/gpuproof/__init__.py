"""`dlperf gpu-proof`: one command that proves dlperf's GPU paths on one GPU within a time budget.

- dlperf.gpuproof.reference: the plain training loops the built-in workload is held to.
- dlperf.gpuproof.kit: runs the GPU suite (config/gpu.yaml) case by case through the workflow,
  the references beside it.
- dlperf.gpuproof.suite: the suite it runs (at a CPU's size with --tiny), the cases it cannot run
  here, and the suite file of the cases Snakemake runs.
- dlperf.gpuproof.pack: what came out, packed into at most eight files.
- dlperf.gpuproof.summary: what the proof found, from the tables, the raw logs and the
  references (proof.json).
- dlperf.gpuproof.proofmd: the same as proof.md.
"""
