"""MindSpore model_zoo (DLPerf v1.0's r1.1), its gpu_resnet_benchmark.py and BERT (mindspore-ai/models)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from dlperf.parse.records import Method, ParseResult
from dlperf.parse.upstream.lines import NUM, Line, Unreadable
from dlperf.parse.upstream.ranks import RunFacts, per_rank_result
from dlperf.parse.upstream.rows import Row, collect, match
from dlperf.parse.upstream.stated import checker, stated

MS_CLAIM = re.compile(r"^epoch time:")
MS = re.compile(rf"^epoch time: ({NUM}) ms, per step time: ({NUM}) ms")
# DLPerf's patched ResNet train.py prints its arguments (`Namespace(batch_size=256, ...,
# device_num=2)`): the batch per device, and the devices of the job or of a node (the GPU path
# ignores device_num for get_group_size(); the adapter passes the node's, as mpirun per node)
MS_STATED = (
    stated(r"\bNamespace\(.*?(?<![\w.])batch_size=(\d+)\b", "batch_size", "per_device"),
    stated(r"\bNamespace\(.*?(?<![\w.])device_num=(\d+)\b", "device_num", ("world", "per_node")),
)
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


def parse_mindspore(logs: list[Path], facts: RunFacts) -> ParseResult:
    """`epoch time: t ms, per step time: p ms` after each sink ("epoch"), per rank. DLPerf's
    scripts sank 10 steps (data_sink_steps=10; TimeMonitor's per step time is t / 10): a record
    covers round(t / p) steps and lasts t ms. The `epoch: e step: s, loss is ...` line before it
    numbers the sink.

    Method: step times (`epoch time`); one rank's own, one sink (data_sink_steps steps)."""
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

    rows = collect(logs, MS_CLAIM, read, notes, checker(facts, MS_STATED, other))
    return per_rank_result(logs, rows, facts, Method.STEP_TIMES, notes, "MindSpore `epoch time:`")


def parse_mindspore_bert_current(logs: list[Path], facts: RunFacts) -> ParseResult:
    """Release current's BERT (mindspore-ai/models official/nlp/Bert run_pretrain.py): per rank,
    after each sink LossCallBack's `epoch: e, current epoch percent: p, step: s, outputs are (...)`
    then TimeMonitor's `Train epoch time: X ms, per step time: Y ms`. A record is that sink: it
    covers round(X / Y) steps (Y = X / sink size) and lasts X ms, TimeMonitor's epoch_begin to
    epoch_end (the sink and the callbacks' step_end, whose print of the loss waits for the device).
    The step is LossCallBack's global step printed just before (counted when it is missing).

    Method: step times (TimeMonitor's `Train epoch time` of a sink); one rank's own, one sink of
    data_sink_steps steps."""
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
    host time between sinks is not in it). The printed fps is one rank's and is not used.

    Method: step times (`Epoch time` of a sink); one rank's own, one sink of print_per_steps
    steps."""
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
