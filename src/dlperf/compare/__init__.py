"""Comparing two results folders (diff: `dlperf diff A B`) with the statistics it rests on
(significance: bootstrap ratio of medians, Mann-Whitney U)."""
