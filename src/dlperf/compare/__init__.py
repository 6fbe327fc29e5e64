"""Comparing two results folders (diff: `dlperf diff A B`; inputs: what it is given, read and
checked; environment: what the runs ran in; verdicts: the table it prints) with the statistics
it rests on (significance: bootstrap ratio of medians, Mann-Whitney U)."""
