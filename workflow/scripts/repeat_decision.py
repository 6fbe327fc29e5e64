"""Thin wrapper: the repeat_decision checkpoint calls dlperf.measure.repeats.decision_rule."""

from dlperf.measure.repeats import decision_rule

decision_rule(snakemake)  # noqa: F821 (injected by Snakemake)
