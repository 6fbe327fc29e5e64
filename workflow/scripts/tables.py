"""Thin wrapper: the tables rule calls dlperf.workflow.make_tables."""

from dlperf.workflow import make_tables

make_tables(snakemake)  # noqa: F821 (injected by Snakemake)
