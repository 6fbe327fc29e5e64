"""pytorch/examples imagenet/main.py's progress lines."""

from __future__ import annotations

import re
from pathlib import Path

from dlperf.parse.records import Method, ParseResult
from dlperf.parse.upstream.lines import NUM, Line
from dlperf.parse.upstream.ranks import RunFacts, per_rank_result
from dlperf.parse.upstream.rows import Row, collect, match

EXAMPLES_CLAIM = re.compile(r"^Epoch: \[\d+\]\[")
EXAMPLES = re.compile(rf"^Epoch: \[(\d+)\]\[\s*(\d+)/\s*(\d+)\]\s+Time\s+({NUM})\s+\(\s*{NUM}\)")


def parse_pytorch_examples(logs: list[Path], facts: RunFacts) -> ParseResult:
    """`Epoch: [e][ i/n]\\tTime v (avg)\\t...` by every rank for itself (per-node launches
    interleave a node's ranks in one file, untagged: the k-th copy of a step is the k-th rank).
    `Time` v is that batch's seconds (3 decimals). With print_freq 1 a record is one batch; with a
    larger print_freq the printed batch's time stands for the interval (noted). The same line in
    release `current` (pytorch/examples 77f55b9) prints the batch 1-based (`display(i + 1)`, where
    4b119d7 printed `i`): at print_freq 1, what the adapters run, a record is still one batch.

    Method: step times (`Time` of the batch); one rank's own, one printed batch (both releases)."""
    notes = ["timed by `Time` (seconds of the printed batch)"]

    def read(line: Line) -> Row:
        m = match(EXAMPLES, line, "`Epoch: [e][ i/n]\\tTime <s> (<avg>)`")
        i = int(m[2])
        return Row(line, i, counter=i + 1, key=(int(m[1]), i), step_time_s=float(m[4]))

    rows = collect(logs, EXAMPLES_CLAIM, read, notes)
    result = per_rank_result(
        logs, rows, facts, Method.STEP_TIMES, notes, "pytorch/examples `Epoch: [e][i/n]`"
    )
    if any(r.steps > 1 for r in result.records):
        result.notes.append(
            "print_freq > 1: each printed batch's time is taken to stand for its interval"
        )
    return result
