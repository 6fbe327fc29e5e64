"""pytorch/examples imagenet, MindSpore model_zoo, HugeCTR (v2.2, 24.06) and Megatron-LM (DLPerf v1.0's, core_v0.19.0)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from dlperf.parse.records import Method, ParseError, ParseResult
from dlperf.parse.upstream._common import (
    NUM,
    Line,
    Row,
    RunFacts,
    Unreadable,
    collect,
    global_result,
    header_values,
    match,
    per_rank_result,
    prefer_log,
)
from dlperf.parse.upstream.oneflow import samples_per_step

EXAMPLES_CLAIM = re.compile(r"^Epoch: \[\d+\]\[")
EXAMPLES = re.compile(rf"^Epoch: \[(\d+)\]\[\s*(\d+)/\s*(\d+)\]\s+Time\s+({NUM})\s+\(\s*{NUM}\)")
MS_CLAIM = re.compile(r"^epoch time:")
MS = re.compile(rf"^epoch time: ({NUM}) ms, per step time: ({NUM}) ms")
MS_LOSS = re.compile(r"^epoch: (\d+) step: (\d+), loss is")
# mindspore-ai/models official/cv/ResNet/gpu_resnet_benchmark.py (MyTimeMonitor.step_end, a print
# of two arguments): `epoch: [k/K] step: [s/S], loss is L Epoch time: X ms, per_step_time: Y ms,
# fps: N img/sec.`, k counting sinks of print_per_steps steps
MS_BENCH_CLAIM = re.compile(r"^epoch: \[\d+/\d+\] step: \[")
MS_BENCH = re.compile(
    rf"^epoch: \[(\d+)/(\d+)\] step: \[\d+/\d+\], loss is .*?\bEpoch time:\s*({NUM}) ms, "
    rf"per_step_time: ({NUM}) ms, fps: (\d+) img/sec\."
)
# mindspore-ai/models official/nlp/Bert (eab643f) run_pretrain.py passes callbacks
# [TimeMonitor(data_sink_steps), LossCallBack(dataset_size)]; after each sink ("epoch" of
# Model.train) every rank prints src/utils.py LossCallBack.step_end's
# `epoch: {e}, current epoch percent: {p:.3f}, step: {global step}, outputs are (...)` and then
# MindSpore's TimeMonitor.epoch_end line: `{mode.title()} epoch time: {:5.3f} ms, per step time:
# {:5.3f} ms` (mindspore/python/mindspore/train/callback/_time_monitor.py as stored, ac7c9ab: `Train
# epoch time: ...` in training; the older 01fc6ef prints `epoch time: ...` with no mode).
MS_TM_CLAIM = re.compile(r"^(?:Train )?epoch time:")
MS_TM = re.compile(rf"^(?:Train )?epoch time:\s*({NUM}) ms, per step time:\s*({NUM}) ms")
MS_BERT_LOSS = re.compile(r"^epoch: \d+, current epoch percent: \S+, step: (\d+), outputs are")
HUGECTR_CLAIM = re.compile(r"^\[.*\bHUGECTR\b.*\bIter:")
HUGECTR = re.compile(rf"\bIter: (\d+) Time\((\d+) iters\): ({NUM})s(?=\s|$)")
HUGECTR_RANK = re.compile(r"\[RANK(\d+)\]")
# HugeCTR v24.06.00 (Python API): core23/logger.cpp's prefix `[HCTR][%T.mmm][INFO][RK<rank>]
# [<thread>]: ` (thread "main"), then src/pybind/model.cpp Model::fit's `Iter: <i> Time(<display>
# iters): <seconds>s Loss: <loss> lr:<lr>` (seconds as an ostream double: 6 significant digits)
# and, before training, `Training batchsize: <global>, evaluation batchsize: <n>`
HCTR_PREFIX = r"\[HCTR\]\[[\d:.]+\]\[INFO\]\[RK(\d+)\]\[[^\]]*\]: "
HCTR_CLAIM = re.compile(HCTR_PREFIX + r"Iter:")
HCTR_ITER = re.compile(HCTR_PREFIX + rf"Iter: (\d+) Time\((\d+) iters\): ({NUM})s(?=\s|$)")
HCTR_BATCH = re.compile(HCTR_PREFIX + r"Training batchsize: (\d+),")
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


def parse_pytorch_examples(logs: list[Path], facts: RunFacts) -> ParseResult:
    """`Epoch: [e][ i/n]\\tTime v (avg)\\t...` by every rank for itself (per-node launches
    interleave a node's ranks in one file, untagged: the k-th copy of a step is the k-th rank).
    `Time` v is that batch's seconds (3 decimals). With print_freq 1 a record is one batch; with a
    larger print_freq the printed batch's time stands for the interval (noted). The same line in
    release `current` (pytorch/examples 77f55b9) prints the batch 1-based (`display(i + 1)`, where
    4b119d7 printed `i`): at print_freq 1, what the adapters run, a record is still one batch."""
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


def parse_mindspore(logs: list[Path], facts: RunFacts) -> ParseResult:
    """`epoch time: t ms, per step time: p ms` after each sink ("epoch"), per rank. DLPerf ran with
    sink_size=1, so each epoch is one step; in general a record covers round(t / p) steps and lasts
    t ms. The `epoch: e step: s, loss is ...` line before it gives the step number."""
    notes = ["timed by `epoch time` (ms per sink of steps)"]
    latest: dict[tuple[int, int | None], int] = {}
    count: Counter[tuple[int, int | None]] = Counter()

    def other(line: Line) -> None:
        if m := MS_LOSS.match(line.text):
            latest[line.file_index, line.tag_rank] = int(m[1])

    def read(line: Line) -> Row:
        m = match(MS, line, "`epoch time: <ms> ms, per step time: <ms> ms`")
        epoch_ms, step_ms = float(m[1]), float(m[2])
        if step_ms <= 0:
            raise Unreadable("per step time is not positive")
        stream = (line.file_index, line.tag_rank)
        count[stream] += 1
        step = latest.get(stream, count[stream])
        return Row(line, step, steps=max(1, round(epoch_ms / step_ms)), duration_s=epoch_ms / 1000)

    rows = collect(logs, MS_CLAIM, read, notes, other)
    return per_rank_result(logs, rows, facts, Method.STEP_TIMES, notes, "MindSpore `epoch time:`")


def parse_mindspore_bert_current(logs: list[Path], facts: RunFacts) -> ParseResult:
    """Release current's BERT (mindspore-ai/models official/nlp/Bert run_pretrain.py): per rank,
    after each sink LossCallBack's `epoch: e, current epoch percent: p, step: s, outputs are (...)`
    then TimeMonitor's `Train epoch time: X ms, per step time: Y ms`. A record is that sink: it
    covers round(X / Y) steps (Y = X / sink size) and lasts X ms, TimeMonitor's epoch_begin to
    epoch_end (the sink and the callbacks' step_end, whose print of the loss waits for the device).
    The step is LossCallBack's global step printed just before (counted when it is missing)."""
    notes = ["timed by TimeMonitor's `epoch time` (ms per sink of steps, epoch_begin to epoch_end)"]
    latest: dict[tuple[int, int | None], int] = {}
    done: Counter[tuple[int, int | None]] = Counter()

    def other(line: Line) -> None:
        if m := MS_BERT_LOSS.match(line.text):
            latest[line.file_index, line.tag_rank] = int(m[1])

    def read(line: Line) -> Row:
        m = match(MS_TM, line, "`Train epoch time: <ms> ms, per step time: <ms> ms`")
        sink_ms, step_ms = float(m[1]), float(m[2])
        if step_ms <= 0:
            raise Unreadable("per step time is not positive")
        n = max(1, round(sink_ms / step_ms))
        stream = (line.file_index, line.tag_rank)
        done[stream] += n
        step = latest.pop(stream, done[stream])
        return Row(line, step, counter=step, steps=n, key=step, duration_s=sink_ms / 1000)

    rows = collect(logs, MS_TM_CLAIM, read, notes, other)
    return per_rank_result(
        logs, rows, facts, Method.STEP_TIMES, notes, "MindSpore TimeMonitor `epoch time:`"
    )


def parse_mindspore_benchmark(logs: list[Path], facts: RunFacts) -> ParseResult:
    """Release current's gpu_resnet_benchmark.py: `epoch: [k/K] step: [s/S], loss is L Epoch time:
    X ms, per_step_time: Y ms, fps: N img/sec.` by every rank after each sink, per rank. Model.train
    runs one "epoch" per sink of print_per_steps steps, so k counts sinks; a record covers
    round(X / Y) steps and lasts X ms (step_begin to step_end, the loss read back included; the
    host time between sinks is not in it). The printed fps is one rank's and is not used."""
    notes = ["timed by `Epoch time` (ms per sink of steps, step_begin to step_end)"]

    def read(line: Line) -> Row:
        m = match(MS_BENCH, line, "`epoch: [k/K] step: [s/S], loss is L Epoch time: <ms> ms, ...`")
        k, sink_ms, step_ms = int(m[1]), float(m[3]), float(m[4])
        if step_ms <= 0:
            raise Unreadable("per_step_time is not positive")
        n = max(1, round(sink_ms / step_ms))
        return Row(line, k, counter=k * n, steps=n, duration_s=sink_ms / 1000)

    rows = collect(logs, MS_BENCH_CLAIM, read, notes)
    return per_rank_result(
        logs, rows, facts, Method.STEP_TIMES, notes, "MindSpore benchmark `epoch: [k/K] step:`"
    )


def parse_hugectr(logs: list[Path], facts: RunFacts) -> ParseResult:
    """`[..][HUGECTR][INFO][RANK0]: Iter: i Time(n iters): t s Loss: ...`, job-wide (rank 0): a
    record covers n iterations and lasts t seconds. A `batch_size = N` header (DLPerf's wrapper)
    is the global batch and wins over the run facts. For W&D, stats' step_time_ms is the latency
    per iteration; peak memory is not in these lines."""
    notes = ["timed by `Time(n iters)`"]
    header: dict[str, str] = {}

    def read(line: Line) -> Row:
        m = HUGECTR.search(line.text)
        if not m:
            raise Unreadable("expected `Iter: i Time(n iters): <s>s`")
        n = int(m[2])
        if n < 1:
            raise Unreadable("Time(0 iters)")
        rank = HUGECTR_RANK.search(line.text)
        i = int(m[1])
        return Row(
            line,
            i,
            counter=i,
            steps=n,
            key=i,
            rank=int(rank[1]) if rank else None,
            duration_s=float(m[3]),
        )

    rows = collect(logs, HUGECTR_CLAIM, read, notes, lambda line: header_values(line, header))
    per_step = samples_per_step(header, facts, notes, global_key="batch_size")
    return global_result(logs, rows, facts, Method.STEP_TIMES, notes, "HugeCTR `Iter:`", per_step)


def parse_hugectr_current(logs: list[Path], facts: RunFacts) -> ParseResult:
    """Release current (HugeCTR 24.06's Python API): `[HCTR][hh:mm:ss.mmm][INFO][RK0][main]: Iter:
    i Time(n iters): t s Loss: ...`, job-wide (the root rank prints): a record covers n iterations
    and lasts t seconds. The `Training batchsize: N` line fit prints first is the global batch
    and wins over the run facts. Copies of a line are told apart as for every job-wide source
    (MPI tag, else the step), not by `RK<r>`: only the root rank prints these lines."""
    notes = ["timed by `Time(n iters)`"]
    header: dict[str, str] = {}

    def read(line: Line) -> Row:
        m = match(HCTR_ITER, line, "`[HCTR][..][INFO][RKr][..]: Iter: i Time(n iters): <s>s`")
        n = int(m[3])
        if n < 1:
            raise Unreadable("Time(0 iters)")
        i = int(m[2])
        return Row(line, i, counter=i, steps=n, key=i, duration_s=float(m[4]))

    def other(line: Line) -> None:
        if m := HCTR_BATCH.match(line.text):
            header.setdefault("batch_size", m[2])

    rows = collect(logs, HCTR_CLAIM, read, notes, other)
    per_step = samples_per_step(header, facts, notes, global_key="batch_size")
    return global_result(logs, rows, facts, Method.STEP_TIMES, notes, "HugeCTR `Iter:`", per_step)


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
    (parse_megatron_current reads it)."""
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
    than its first line's fail at their file:line."""
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
    reported: dict[tuple[str, int], float] = {}

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
            row.info["reported_tflops"] = float(t[1])
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
            if "reported_tflops" in row.info:
                reported[row.line.path, row.line.lineno] = row.info["reported_tflops"]

    rows = collect(logs, MEGATRON_CLAIM, read, notes)
    result = global_result(
        logs, rows, facts, Method.STEP_TIMES, notes, "Megatron `iteration i/n`", finish=finish
    )
    if reported:
        result.reported[REPORTED_TFLOPS] = reported
        values = sorted(reported.values())
        result.notes.append(
            f"Megatron's own `{MEGATRON_TFLOPS_LABEL}` on {len(values)} line(s) "
            f"({values[0]:g} to {values[-1]:g}), kept beside dlperf's figure as "
            f"reported[{REPORTED_TFLOPS!r}], never in its place"
        )
    return result
