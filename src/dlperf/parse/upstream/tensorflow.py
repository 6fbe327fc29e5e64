"""TensorFlow models r2.3 sources: ResNet50 (Keras TimeHistory) and BERT (absl `Train Step`)."""

from __future__ import annotations

import re
from pathlib import Path

from dlperf.parse.records import Method, ParseResult
from dlperf.parse.upstream._common import (
    NUM,
    Line,
    Row,
    RunFacts,
    Unreadable,
    collect,
    global_result,
    match,
)

RN50_CLAIM = re.compile(r"^TimeHistory:")
RN50 = re.compile(
    rf"^TimeHistory: ({NUM}) seconds, ({NUM}) examples/second between steps (\d+) and (\d+)$"
)
BERT_CLAIM = re.compile(r"^Train Step:")
BERT = re.compile(r"^Train Step: (\d+)/(\d+)(?=\s|$)")


def parse_tf2_rn50(logs: list[Path], facts: RunFacts) -> ParseResult:
    """absl + `TimeHistory: t seconds, r examples/second between steps a and b`, job-wide, one
    line per log_steps (100) iterations: a record covers b - a iterations and lasts t seconds (the
    callback's own wall time, 10 ms resolution). The first interval includes start-up."""
    notes = ["timed by TimeHistory's seconds per interval"]

    def read(line: Line) -> Row:
        m = match(
            RN50, line, "`TimeHistory: <s> seconds, <r> examples/second between steps a and b`"
        )
        a, b = int(m[3]), int(m[4])
        if b <= a:
            raise Unreadable(f"empty step interval {a}..{b}")
        return Row(line, b, counter=b, steps=b - a, key=b, duration_s=float(m[1]))

    rows = collect(logs, RN50_CLAIM, read, notes)
    return global_result(logs, rows, facts, Method.STEP_TIMES, notes, "TF2 `TimeHistory:`")


def parse_tf2_bert(logs: list[Path], facts: RunFacts) -> ParseResult:
    """absl + `Train Step: i/n  / loss = ...` every steps_per_loop steps, job-wide. Timed by the
    absl prefix `Immdd hh:mm:ss.ffffff`: it has no year, so the reader places it in a fixed leap
    year and rolls the year over when the month goes back (December to January); crossing
    midnight is handled because the month and day are part of the stamp (DLPerf's script parsed
    only hh:mm:ss and broke there)."""
    notes = ["timed by the absl timestamps (no year in them)"]

    def read(line: Line) -> Row:
        m = match(BERT, line, "`Train Step: i/n`")
        if line.stamp is None:
            raise Unreadable("no absl timestamp prefix (`I0916 18:05:03.140231 ... file.py:119]`)")
        i = int(m[1])
        return Row(line, i, counter=i, key=i, time_s=line.stamp)

    rows = collect(logs, BERT_CLAIM, read, notes)
    return global_result(logs, rows, facts, Method.TIMESTAMPS, notes, "TF2 BERT `Train Step:`")
