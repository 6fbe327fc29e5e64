"""Megatron-LM's training_log (DLPerf v1.0's 8aa4619 to core_v0.19.0)."""

from __future__ import annotations

import re
from pathlib import Path

from dlperf.parse.records import Method, ParseError, ParseResult
from dlperf.parse.upstream.lines import NUM, Line, Unreadable
from dlperf.parse.upstream.ranks import RunFacts, global_result
from dlperf.parse.upstream.rows import Row, collect, prefer_log
from dlperf.parse.upstream.stated import argument, checker, stated

# Megatron-LM's training_log (megatron/training/training.py; megatron/training.py before
# core_v0.6.0), printed by the last rank. What comes before `iteration` tells the version:
# - nothing: DLPerf's 8aa4619 (2020) to core_v0.5.0 (2024-02);
# - `[%Y-%m-%d %H:%M:%S]`: core_v0.6.0 (2024-04, commit f427c6f of 2024-03-09) to core_v0.15.x
#   (2025-12); every line still averages its own log interval;
# - `[%Y-%m-%d %H:%M:%S.%f]`: core_v0.16.0 (2026-02, commit 6cf285b of 2026-01-27) on, which also
#   logs the run's first iteration without resetting its timer (see parse_megatron_current).
# With --log-throughput (core_v0.6.0 on) the line also carries Megatron's own `throughput per GPU
# (TFLOP/s/GPU): {:.1f} |`, kept beside dlperf's figure, never in place of it.
MEGATRON_CLAIM = re.compile(r"^(?:\[[^\]]*\]\s*)?iteration\s+\d")
MEGATRON = re.compile(r"^iteration\s+(\d+)/\s*(\d+)\s*\|")
MEGATRON_MS = re.compile(rf"\belapsed time per iteration \(ms\):\s*({NUM})\s*\|")
MEGATRON_CONSUMED = re.compile(r"\bconsumed samples:\s*(\d+)")
MEGATRON_GBS = re.compile(r"\bglobal batch size:\s*(\d+)")
MEGATRON_STAMP = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{6})?\]\s*")
# megatron/arguments.py: `using world size: N, data-parallel-size: D, ...` and the argument dump
# (`  micro_batch_size ........ 8`); the global batch is micro x data-parallel x accumulation
# (tensor/pipeline parallel: not per device x world), read from the progress lines
MEGATRON_STATED = (
    stated(r"^using world size: (\d+)\b", "world size", "world"),
    argument("world_size", "world"),
    argument("micro_batch_size", "per_device"),
)
MEGATRON_TFLOPS_LABEL = "throughput per GPU (TFLOP/s/GPU):"
MEGATRON_TFLOPS = re.compile(rf"\bthroughput per GPU \(TFLOP/s/GPU\):\s*({NUM})\s*\|")
# the shape of what precedes `iteration` (Row.info["stamp"])
BARE, SECONDS, MICROSECONDS = 0, 1, 2
STAMP_NAMES = {
    BARE: "no stamp (up to core_v0.5.0)",
    SECONDS: "a `[YYYY-MM-DD HH:MM:SS]` stamp (core_v0.6.0 to core_v0.15.x)",
    MICROSECONDS: "a `[YYYY-MM-DD HH:MM:SS.ffffff]` stamp (core_v0.16.0 on)",
}
REPORTED_TFLOPS = "tflops_per_device"  # ParseResult.reported's name for Megatron's TFLOP/s/GPU


def parse_megatron(logs: list[Path], facts: RunFacts) -> ParseResult:
    """` iteration i/n | consumed samples: c | elapsed time per iteration (ms): t | ... | global
    batch size: g | ...` every log_interval iterations, job-wide (printed by the last rank), bare
    (DLPerf's 8aa4619 to core_v0.5.0) or after a `[YYYY-MM-DD HH:MM:SS]` stamp (core_v0.6.0 to
    core_v0.15.x, 2024-2025). A record covers the iterations since the previous line, lasts t ms
    each (Megatron's interval timer, reset at every line), and its samples are the advance of
    `consumed samples` (the line's global batch size times its iterations for the first line;
    the run facts where neither is printed). The log's first line is the iteration it names, not
    iteration one: it covers the usual interval (10 iterations for a first line at 10 logged
    every 10; one for a first line at 71 logged every iteration), and a log's only line at
    iteration i covers 1..i (a run from its start, as dlperf runs it). Megatron's global batch
    (data-parallel size * micro batch * accumulation) wins over the run facts. GPT's TFLOP/s come
    from the per-iteration latency (stats' step_time_ms); a printed `throughput per GPU
    (TFLOP/s/GPU)` (--log-throughput) is kept beside them in ParseResult.reported (REPORTED_TFLOPS).
    A line stamped with microseconds (core_v0.16.0 on) is refused at its file:line: its log's first
    line is the run's first iteration, whose time the next line counts again
    (parse_megatron_current reads it).

    Method: step times (ms per iteration x iterations); job-wide (rank -1), log_interval
    iterations."""
    return _megatron(logs, facts, first_iteration_line=False)


def parse_megatron_current(logs: list[Path], facts: RunFacts) -> ParseResult:
    """Megatron-LM core_v0.19.0's training_log: the same fields after a `[YYYY-MM-DD
    HH:MM:SS.ffffff]` stamp, and one more line after the run's first iteration (core_v0.16.0 on).
    That line's timer and counters are not reset, so the next line's ms per iteration averages
    from the first iteration on: its own iterations last that average times all of them, less the
    first iteration's time (the first line's, kept as a record of one iteration whatever iteration
    it names: a resumed run's first is the one after its checkpoint). Lines with a stamp without
    microseconds (core_v0.6.0 to core_v0.15.x) or none are read as parse_megatron reads them: no
    first-iteration line, every line averages its own interval, a log starting at iteration 10 is
    not taken to start at iteration 1. A log holds one run of one version: stamps of another shape
    than its first line's fail at their file:line.

    Method: step times, as parse_megatron (the line after the first iteration's covers the
    iterations since it, timed by its average times all of them less the first iteration's); job-
    wide (rank -1), log_interval iterations."""
    return _megatron(logs, facts, first_iteration_line=True)


def _first_iteration(kept: list[Row]) -> None:
    """core_v0.16.0 on: the first line is the run's first iteration, one record of one iteration;
    the second line's own iterations last its average times the iterations since the first, less
    the first's time."""
    if len(kept) < 2:
        kept[0].steps = 1
        return
    first, second = kept[0], kept[1]
    first.steps = 1
    averaged = int(second.counter or 0) - int(first.counter or 0) + 1
    second.duration_s = float(second.step_time_s or 0) * averaged - float(first.step_time_s or 0)
    if second.duration_s <= 0:
        raise ParseError(
            "the line after the first iteration's leaves no time for its own iterations",
            second.line.path,
            second.line.lineno,
        )


def _megatron(logs: list[Path], facts: RunFacts, first_iteration_line: bool) -> ParseResult:
    """What the Megatron-LM versions share: the fields after the stamp (if any), samples from the
    advance of consumed samples, the logged global batch, Megatron's own TFLOP/s kept aside.
    `first_iteration_line`: read core_v0.16.0's microsecond stamps and its first-iteration line
    (else refuse them)."""
    notes = ["timed by `elapsed time per iteration (ms)` times the interval's iterations"]
    shape: list[int] = []  # the stamp shape of the log's first line

    def read(line: Line) -> Row:
        text, stamp = line.text, BARE
        if text.startswith("["):
            s = MEGATRON_STAMP.match(text)
            if not s:
                raise Unreadable(
                    "expected `[YYYY-MM-DD HH:MM:SS]` or `[YYYY-MM-DD HH:MM:SS.ffffff]` before "
                    "`iteration`"
                )
            stamp, text = (MICROSECONDS if s[1] else SECONDS), text[s.end() :]
        if stamp == MICROSECONDS and not first_iteration_line:
            raise Unreadable(
                "a stamp with microseconds is Megatron-LM core_v0.16.0 or later, whose first line "
                "is the run's first iteration and whose next line's time includes it again: "
                "parser megatron_current reads it"
            )
        if not shape:
            shape.append(stamp)
        elif stamp != shape[0]:
            raise Unreadable(
                f"{STAMP_NAMES[stamp]} after lines with {STAMP_NAMES[shape[0]]}: one log, one "
                "Megatron-LM version"
            )
        m = MEGATRON.match(text)
        if not m:
            raise Unreadable("expected `iteration i/n |`")
        ms = MEGATRON_MS.search(text)
        if not ms:
            raise Unreadable("no `elapsed time per iteration (ms): <number>`")
        i = int(m[1])
        row = Row(line, i, counter=i, key=i, step_time_s=float(ms[1]) / 1000)
        row.info["stamp"] = stamp
        if c := MEGATRON_CONSUMED.search(text):
            row.info["consumed"] = int(c[1])
        if g := MEGATRON_GBS.search(text):
            row.info["global_batch"] = int(g[1])
        if t := MEGATRON_TFLOPS.search(text):
            row.reported[REPORTED_TFLOPS] = float(t[1])
        elif MEGATRON_TFLOPS_LABEL in text:
            notes.append(
                f"{line.path}:{line.lineno}: `{MEGATRON_TFLOPS_LABEL}` without a number; "
                "nothing kept of it"
            )
        return row

    def finish(kept: list[Row]) -> None:
        if first_iteration_line and kept[0].info.get("stamp") == MICROSECONDS:
            _first_iteration(kept)
            notes.append(
                "the first line is the run's first iteration, whose timer Megatron does not "
                "reset: the next line's own iterations are its average times the iterations since "
                "the first, less the first iteration's time"
            )
        elif first_iteration_line:
            notes.append(
                f"lines with {STAMP_NAMES[int(kept[0].info.get('stamp', BARE))]}: no "
                "first-iteration line, every line averages its own interval"
            )
        if len(kept) == 1 and kept[0].info.get("stamp") != MICROSECONDS:
            # no second line to tell the log interval: the line at iteration i averages the run's
            # iterations 1..i (a run from the start: Megatron prints at multiples of the interval)
            kept[0].steps = max(1, int(kept[0].counter or 1))
            notes.append(
                f"{kept[0].line.path}:{kept[0].line.lineno}: the only line, at iteration "
                f"{kept[0].step}, is taken to cover iterations 1..{kept[0].step}"
            )
        logged = next(
            (row.info["global_batch"] for row in kept if "global_batch" in row.info), None
        )
        if logged is not None:
            prefer_log("global batch size", int(logged), facts.global_batch, notes)
        previous: float | None = None
        for row in kept:
            consumed = row.info.get("consumed")
            if consumed is not None and previous is not None and consumed > previous:
                row.samples = consumed - previous
            elif "global_batch" in row.info:
                row.samples = row.info["global_batch"] * (row.steps or 1)
            previous = consumed

    rows = collect(logs, MEGATRON_CLAIM, read, notes, checker(facts, MEGATRON_STATED))
    return global_result(
        logs, rows, facts, Method.STEP_TIMES, notes, "Megatron `iteration i/n`", finish=finish
    )
