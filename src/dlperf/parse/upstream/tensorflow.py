"""TensorFlow models sources: r2.3's ResNet50 (Keras TimeHistory) and BERT (absl `Train Step`),
and the current Model Garden trainers (orbit's Controller: `train | step: N | steps/sec: r`)."""

from __future__ import annotations

import re
from pathlib import Path

from dlperf.parse.records import Method, ParseResult
from dlperf.parse.upstream.lines import NUM, Line, Unreadable
from dlperf.parse.upstream.ranks import RunFacts, global_result
from dlperf.parse.upstream.rows import Row, collect, match, stamps_or

RN50_CLAIM = re.compile(r"^TimeHistory:")
RN50 = re.compile(
    rf"^TimeHistory: ({NUM}) seconds, ({NUM}) examples/second between steps (\d+) and (\d+)$"
)
BERT_CLAIM = re.compile(r"^Train Step:")
BERT = re.compile(r"^Train Step: (\d+)/(\d+)(?=\s|$)")
# also a line whose absl prefix (`Immdd hh:mm:ss.ffffff tid file:N] `) did not read: unread, its
# copy would be dropped silently and the window would run over its steps
ORBIT_CLAIM = re.compile(r"^(?:[IWEF]\d{4} \S+ \d+ [^\]\s]+\] )?train \| step:")
ORBIT_START = re.compile(r"^train \| step:\s*\d+ \| training until step \d+")
ORBIT = re.compile(rf"^train \| step:\s*(\d+) \| steps/sec:\s*({NUM}) \|")


def parse_tf2_rn50(logs: list[Path], facts: RunFacts) -> ParseResult:
    """absl + `TimeHistory: t seconds, r examples/second between steps a and b`, job-wide, one
    line per log_steps (100) iterations: a record covers b - a iterations and lasts t seconds (the
    callback's own wall time, 10 ms resolution). The first interval includes start-up.

    Method: step times (TimeHistory seconds); job-wide (rank -1), `between steps a and b`."""
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
    only hh:mm:ss and broke there).

    Method: timestamps (absl prefix, year-less); job-wide (rank -1), steps_per_loop steps."""
    notes = ["timed by the absl timestamps (no year in them)"]

    def read(line: Line) -> Row:
        m = match(BERT, line, "`Train Step: i/n`")
        if line.stamp is None:
            raise Unreadable("no absl timestamp prefix (`I0916 18:05:03.140231 ... file.py:119]`)")
        i = int(m[1])
        return Row(line, i, counter=i, key=i, time_s=line.stamp)

    rows = collect(logs, BERT_CLAIM, read, notes)
    return global_result(logs, rows, facts, Method.TIMESTAMPS, notes, "TF2 BERT `Train Step:`")


def parse_tf2_orbit(logs: list[Path], facts: RunFacts) -> ParseResult:
    """tensorflow/models' current trainers (official/vision/train.py, official/nlp/train.py):
    orbit's Controller logs `train | step: {global step:6d} | steps/sec: {rate:6.1f} | output: ...`
    after every steps_per_loop steps, job-wide, through absl (stderr, stamped) and print (stdout,
    bare), so each line usually appears twice. The stamped copies are kept and timed by their absl
    prefix; with no stamped copy at all, a record lasts its steps / the printed steps/sec (one
    decimal: coarse).

    Method: timestamps (absl prefix), else printed steps/sec; job-wide (rank -1), steps_per_loop
    steps."""
    notes: list[str] = []

    def read(line: Line) -> Row | None:
        if not line.text.startswith("train"):
            raise Unreadable("the absl prefix's timestamp is not `Immdd hh:mm:ss.ffffff`")
        if ORBIT_START.match(line.text):
            return None  # `train | step: 0 | training until step N...`, before the first step
        m = match(ORBIT, line, "`train | step: <n> | steps/sec: <r> | output: ...`")
        step, rate = int(m[1]), float(m[2])
        return Row(line, step, counter=step, key=step, step_time_s=1 / rate if rate > 0 else None)

    rows = collect(logs, ORBIT_CLAIM, read, notes, copies=2)  # through absl and print
    stamped = [row for row in rows if row.line.stamp is not None]
    if stamped and len(stamped) < len(rows):
        notes.append(
            f"dropped {len(rows) - len(stamped)} unstamped copies (orbit prints each line to "
            "stdout as well as through absl)"
        )
        rows = stamped
    method = stamps_or(rows, Method.STEP_TIMES, notes, "steps/sec (one decimal)")
    return global_result(logs, rows, facts, method, notes, "TF2 orbit `train | step:`")
