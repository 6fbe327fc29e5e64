"""Thin wrapper: the report rule calls dlperf.report.rule.report_rule."""

from dlperf.report.rule import report_rule

report_rule(snakemake)  # noqa: F821 (injected by Snakemake)
