"""Thin wrapper: the report rule calls dlperf.workflow.make_report."""

from dlperf.workflow import make_report

make_report(snakemake)  # noqa: F821 (injected by Snakemake)
