"""Thin wrapper: the plan rule calls dlperf.report.rule.plan_rule."""

from dlperf.report.rule import plan_rule

plan_rule(snakemake)  # noqa: F821 (injected by Snakemake)
