"""Thin wrapper: the plan rule calls dlperf.plan.rule.plan_rule."""

from dlperf.plan.rule import plan_rule

plan_rule(snakemake)  # noqa: F821 (injected by Snakemake)
