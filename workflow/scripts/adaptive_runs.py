"""Thin wrapper: the adaptive_runs rule calls dlperf.repeats.cell_runs_rule."""

from dlperf.repeats import cell_runs_rule

cell_runs_rule(snakemake)  # noqa: F821 (injected by Snakemake)
