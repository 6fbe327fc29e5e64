"""Thin wrapper: the adaptive_runs rule calls dlperf.measure.repeats.cell_runs_rule."""

from dlperf.measure.repeats import cell_runs_rule

cell_runs_rule(snakemake)  # noqa: F821 (injected by Snakemake)
