"""OneFlow-Benchmark sources: cnns (ResNet50), BERT and Wide & Deep; Oneflow-Inc/models' Wide & Deep
and ResNet-50; oneflow_face (InsightFace).

The OneFlow-Benchmark three end each progress line with `time.time()`, speak for the whole job, and
print their arguments as `key = value` header lines; the header's batch size and layout win over the
run facts (with a note when they disagree). Oneflow-Inc/models' W&D (release `current`) prints the
latency per iteration instead, its ResNet-50 each rank's own throughput, and both their arguments
as `key ..... value` lines. LiBai (OneFlow-GPT's successor, `oneflow_gpt` release `current`) logs
the running mean of its iteration times.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from dlperf.parse.records import Method, ParseError, ParseResult
from dlperf.parse.upstream.lines import NUM, Line, Unreadable
from dlperf.parse.upstream.ranks import RunFacts, global_result, per_rank_result
from dlperf.parse.upstream.rows import Row, collect, header_values, logged_int, match, prefer_log
from dlperf.parse.upstream.stated import Stated, argument, checker, stated

CNN_CLAIM = re.compile(r"^train: epoch \d")
CNN = re.compile(rf"^train: epoch (\d+), iter (\d+), .*samples/s: ({NUM})\s+({NUM})$")
BERT_CLAIM = re.compile(r"^step: \d")
BERT = re.compile(rf"^step: (\d+), .*throughput: ({NUM})\s+({NUM})$")
WDL_CLAIM = re.compile(r"^\d+ time\b")
WDL = re.compile(rf"^(\d+) time ({NUM}) loss \S+$")
# utils/logger.py's print_metrics: `[rank:0] iter: i/n, loss: {:.16f}, latency(ms): {:.16f}` and
# a `| %Y-%m-%d %H:%M:%S.mmm` stamp (a loss of nan is read: only the latency counts); the eval logger prints `[rank:0] iter: i/n, eval_auc: a`.
WDL_CURRENT_CLAIM = re.compile(r"^\[rank:\d+\] iter: \d")
WDL_CURRENT = re.compile(
    rf"^\[rank:\d+\] iter: (\d+)/(\d+), loss: [^,\s]+, latency\(ms\): ({NUM})"
    r" \| \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}$"
)
DOTTED_ARG = re.compile(r"^(\w+) \.+ (\S+)$")  # config.py's _print_args: `key ..... value`
# resnet50/utils/logger.py print_metrics with train.py init_logger's metrics: `[rank:r] [train],
# epoch: e/E, iter: i/n, loss: {:.5f}, [lr: {:.6f}, (eager only)] top1: {:.5f}, throughput: {:.2f}`
# (`, timestamp: {:.6f}` with --print-timestamp) and the `| %Y-%m-%d %H:%M:%S.mmm` stamp; eval
# prints the same with `[eval]`.
CNN_CURRENT_CLAIM = re.compile(r"^\[rank:\d+\] \[(?:train|eval)\], epoch: ")
# LiBai v0.3.0: libai/utils/logger.py's stdout formatter `[%m/%d %H:%M:%S <logger>]: ` (green
# when termcolor colours it; the file formatter `[%m/%d %H:%M:%S] <logger> INFO: `), then
# libai/utils/events.py CommonMetricPrinter: ` eta: <eta>  iteration: i/n  consumed_samples: c
# total_loss: l  time: {:.4f} s/iter  data_time: {:.4f} s/iter total_throughput: {:.2f} samples/s
# lr: {:.2e}  ` (eta, time, data_time and throughput only once they exist).
ANSI = re.compile(r"\x1b\[[0-9;]*m")
LIBAI_PREFIX = r"^\[\d\d/\d\d \d\d:\d\d:\d\d(?: [\w.]+\]:|\] [\w.]+ INFO:)\s+"
LIBAI_CLAIM = re.compile(  # the same, colours allowed
    r"^(?:\x1b\[[0-9;]*m)?\[\d\d/\d\d \d\d:\d\d:\d\d(?: [\w.]+\]:|\] [\w.]+ INFO:)"
    r"\s*(?:\x1b\[[0-9;]*m)?\s+(?:eta: .*?\s)?iteration: \d+/\d+\s"
)
LIBAI = re.compile(
    LIBAI_PREFIX + r"(?:eta: .*?\s)?iteration: (\d+)/(\d+)\s+consumed_samples: (\d+)\s"
)
LIBAI_HAS_TIME = re.compile(r"(?<!\w)time:")
LIBAI_TIME = re.compile(rf"(?<!\w)time: ({NUM}) s/iter(?:\s|$)")
# global batch / that running mean: LiBai's own figure, kept beside dlperf's (ParseResult.reported)
LIBAI_THROUGHPUT = re.compile(rf"(?<!\w)total_throughput: ({NUM}) samples/s(?:\s|$)")
LIBAI_UNTIMED = 2  # hooks.IterationTimer(warmup_iter=3) times iterations 3.. (1-based)
CNN_CURRENT_EVAL = re.compile(r"^\[rank:\d+\] \[eval\], ")
# oneflow_face (DLPerf's InsightFace) callback_util.py TrainMetric: `{desc}: iter {step}, loss
# {loss}, throughput: {:.3f}` every loss_print_frequency iterations; step is 0-based and the
# throughput is the job's samples (train_batch_size, the global batch) per second since the
# previous line.
FACE_CLAIM = re.compile(r"^train: iter \d")
FACE = re.compile(rf"^train: iter (\d+), loss \S+, throughput: ({NUM})$")
CNN_CURRENT = re.compile(
    r"^\[rank:(\d+)\] \[train\], epoch: (\d+)/\d+, iter: (\d+)/\d+, loss: \S+,(?: lr: \S+,)?"
    rf" top1: \S+, throughput: ({NUM})(?:, timestamp: {NUM})?"
    r" \| \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}$"
)


# the run shape OneFlow-Benchmark's `key = value` header prints (HugeCTR's DLPerf wrapper too):
# `batch_size` is the global batch where a source names it (global_key), and the models'
# argument list `  key ........ value`
HEADER_STATED = (
    stated(r"^batch_size_per_device = (\d+)$", "batch_size_per_device", "per_device"),
    stated(r"^gpu_num_per_node = (\d+)$", "gpu_num_per_node", "per_node"),
    stated(r"^num_nodes = (\d+)$", "num_nodes", "nodes"),
)
HEADER_GLOBAL = stated(r"^batch_size = (\d+)$", "batch_size (global batch)", "global")
WDL_CURRENT_STATED = (
    argument("batch_size", "global", "batch_size (global batch)"),
    argument("batch_size_per_proc", "per_device"),
)
CNN_CURRENT_STATED = (
    argument("train_batch_size", "per_device"),
    argument("train_global_batch_size", "global"),
    argument("num_devices_per_node", "per_node"),
    argument("num_nodes", "nodes"),
)
LIBAI_STATED = (stated(r"\bWorld size: (\d+)$", "World size", "world"),)


def header_stated(global_key: str | None) -> tuple[Stated, ...]:
    return (*HEADER_STATED, HEADER_GLOBAL) if global_key == "batch_size" else HEADER_STATED


def samples_per_step(
    header: dict[str, str], facts: RunFacts, notes: list[str], global_key: str | None = None
) -> int:
    """The job's samples per iteration, from the header where it says so."""
    nodes = prefer_log("num_nodes", logged_int(header, "num_nodes"), facts.nodes, notes)
    per_node = prefer_log(
        "gpu_num_per_node", logged_int(header, "gpu_num_per_node"), facts.gpus_per_node, notes
    )
    if global_key and (logged := logged_int(header, global_key)) is not None:
        return prefer_log(f"{global_key} (global batch)", logged, facts.global_batch, notes)
    bsz = prefer_log(
        "batch_size_per_device",
        logged_int(header, "batch_size_per_device"),
        facts.batch_size_per_device,
        notes,
    )
    return bsz * nodes * per_node


def _timed(
    logs: list[Path],
    facts: RunFacts,
    claim: re.Pattern[str],
    read,
    what: str,
    global_key: str | None = None,
) -> ParseResult:
    notes: list[str] = []
    header: dict[str, str] = {}
    rows = collect(
        logs,
        claim,
        read,
        notes,
        checker(facts, header_stated(global_key), lambda line: header_values(line, header)),
    )
    per_step = samples_per_step(header, facts, notes, global_key)
    notes.insert(
        0,
        "timed by the time.time() each line ends with; "
        "a record covers the iterations since the previous line",
    )
    return global_result(logs, rows, facts, Method.TIMESTAMPS, notes, what, per_step)


def parse_oneflow_cnn(logs: list[Path], facts: RunFacts) -> ParseResult:
    """`train: epoch e, iter i, ..., samples/s: r t`: iter counts iterations done in the epoch.

    Method: timestamps (time.time() ends the line); job-wide (rank -1), one interval."""

    def read(line: Line) -> Row:
        m = match(CNN, line, "`train: epoch e, iter i, ..., samples/s: <rate> <time>`")
        return Row(
            line, int(m[2]), counter=int(m[2]), key=(int(m[1]), int(m[2])), time_s=float(m[4])
        )

    return _timed(logs, facts, CNN_CLAIM, read, "OneFlow cnns `train: epoch`")


def parse_oneflow_bert(logs: list[Path], facts: RunFacts) -> ParseResult:
    """`step: i, ..., throughput: r t`: the step is 0-based (step 19 = 20 iterations done).

    Method: timestamps (time.time() ends the line); job-wide (rank -1), one interval."""

    def read(line: Line) -> Row:
        m = match(BERT, line, "`step: i, ..., throughput: <rate> <time>`")
        step = int(m[1])
        return Row(line, step, counter=step + 1, key=step, time_s=float(m[3]))

    return _timed(logs, facts, BERT_CLAIM, read, "OneFlow BERT `step:`")


def parse_oneflow_wdl(logs: list[Path], facts: RunFacts) -> ParseResult:
    """`{iter} time {t} loss {f}` every loss_print_every_n_iter iterations; the header's
    `batch_size` is the global batch. stats' step_time_ms is the latency per iteration.

    Method: timestamps (time.time() ends the line); job-wide (rank -1), one interval."""

    def read(line: Line) -> Row:
        m = match(WDL, line, "`<iter> time <time> loss <loss>`")
        it = int(m[1])
        return Row(line, it, counter=it, key=it, time_s=float(m[2]))

    return _timed(
        logs, facts, WDL_CLAIM, read, "OneFlow W&D `<iter> time`", global_key="batch_size"
    )


def parse_oneflow_wdl_current(logs: list[Path], facts: RunFacts) -> ParseResult:
    """`[rank:0] iter: i/n, loss: l, latency(ms): t | <stamp>` every loss_print_every_n_iter
    iterations, printed by rank 0 only (the other ranks print no progress line). i counts the
    iterations done (from 1); t is the mean of the iterations since the previous line (the
    logger's perf_counter between two lines, read after the loss, which waits for the device).
    The first line's t counts from the logger's creation, before the model and graph were
    built: the window's warm-up skips it. The argument list's `batch_size` is the global batch.

    Method: step times (`latency(ms)` x iterations); job-wide (rank -1; rank 0 prints), the
    iterations since the previous line."""
    notes = [
        "timed by `latency(ms)` times the iterations since the previous line; the first line's "
        "latency includes the setup since the logger's creation"
    ]
    header: dict[str, str] = {}

    def read(line: Line) -> Row | None:
        if "eval_auc:" in line.text:
            return None  # the eval logger's line
        m = match(WDL_CURRENT, line, "`[rank:r] iter: i/n, loss: <l>, latency(ms): <ms> | <time>`")
        it = int(m[1])
        return Row(line, it, counter=it, key=it, step_time_s=float(m[3]) / 1000)

    def arg(line: Line) -> None:
        if m := DOTTED_ARG.match(line.text):
            header.setdefault(m[1], m[2])

    rows = collect(logs, WDL_CURRENT_CLAIM, read, notes, checker(facts, WDL_CURRENT_STATED, arg))
    per_step = samples_per_step(header, facts, notes, global_key="batch_size")
    return global_result(
        logs, rows, facts, Method.STEP_TIMES, notes, "OneFlow W&D `iter: i/n`", per_step
    )


def parse_oneflow_cnn_current(logs: list[Path], facts: RunFacts) -> ParseResult:
    """`[rank:r] [train], epoch: e/E, iter: i/n, ..., throughput: t | <stamp>` every
    print_interval iterations, printed by every rank for itself (metric_local, the default). t is
    the rank's own samples per second since its previous line (the logger's TimeMeter: the
    samples of the iterations since then, over the perf_counter span, read after the loss, whose
    `.numpy()` waits for the device). i counts the epoch's iterations done (from 1). The first
    line's span starts when training starts, before the graph is compiled: the window's warm-up
    skips it. The argument list's `train_batch_size` (per device) wins over the run facts.

    Method: printed rates (each rank's own samples/s); one rank's own, the iterations since the
    previous line."""
    notes = [
        "timed by each rank's printed `throughput` (its samples since its previous line over "
        "their time); the first line's span includes the graph's compilation"
    ]
    header: dict[str, str] = {}

    def read(line: Line) -> Row | None:
        if CNN_CURRENT_EVAL.match(line.text):
            return None
        m = match(
            CNN_CURRENT, line, "`[rank:r] [train], epoch: e/E, iter: i/n, ..., throughput: <t>`"
        )
        it = int(m[3])
        rate = float(m[4])
        if rate <= 0:
            raise Unreadable(f"throughput {m[4]}")
        return Row(line, it, counter=it, key=(int(m[2]), it), rank=int(m[1]), rate=rate)

    def arg(line: Line) -> None:
        if m := DOTTED_ARG.match(line.text):
            header.setdefault(m[1], m[2])

    rows = collect(logs, CNN_CURRENT_CLAIM, read, notes, checker(facts, CNN_CURRENT_STATED, arg))
    bsz = prefer_log(
        "train_batch_size",
        logged_int(header, "train_batch_size"),
        facts.batch_size_per_device,
        notes,
    )
    facts = dataclasses.replace(facts, batch_size_per_device=bsz)
    return per_rank_result(
        logs, rows, facts, Method.PRINTED_RATES, notes, "OneFlow models ResNet-50 `[train]`"
    )


def parse_libai(logs: list[Path], facts: RunFacts) -> ParseResult:
    """LiBai's CommonMetricPrinter line every log_period iterations, printed by rank 0 only.
    `iteration: k/n` is 0-based (k + 1 iterations done); `consumed_samples` is k + 1 times the
    global batch. `time` is the mean of every timed iteration so far (the IterationTimer leaves
    out the first two, graph compilation among them), so the timed seconds up to a line are
    time x (k + 1 - 2): a record lasts the advance of that product and covers the iterations
    since the previous line. The first record covers iterations 1..k + 1 (so windows count real
    iterations) but holds the samples and seconds of the timed ones only, 3..k + 1: its rate is
    theirs. Lines before any iteration was timed carry no `time` and are read past. The printed
    mean has 4 decimals: a window's time is off by at most 5e-5 s x the timed iterations at its
    two ends.
    LiBai's own `total_throughput` (the global batch over that running mean, so a rate since
    iteration 3, not of the line's interval) is kept in ParseResult.reported, never used.

    Method: step times (the advance of the running mean s/iter x the timed iterations);
    job-wide (rank -1; rank 0 prints), the iterations since the previous line."""
    notes = [
        "timed by the advance of `time` (LiBai's running mean s/iter) x the timed iterations; "
        "iterations 1 and 2 are never timed: the first record holds the samples and seconds of "
        "its other iterations"
    ]

    def read(line: Line) -> Row | None:
        text = ANSI.sub("", line.text)
        m = LIBAI.match(text)
        if not m:
            raise Unreadable("expected `iteration: i/n  consumed_samples: c`")
        k, consumed = int(m[1]), int(m[3])
        if not LIBAI_HAS_TIME.search(text[m.end() :]):
            if k + 1 > LIBAI_UNTIMED:
                raise Unreadable(f"no `time: <s> s/iter` after iteration {k + 1}")
            notes.append(f"{line.path}:{line.lineno}: read past (iteration {k + 1}, not timed)")
            return None
        t = LIBAI_TIME.search(text, m.end())
        if not t:
            raise Unreadable("expected `time: <s> s/iter`")
        done = k + 1
        row = Row(line, done, counter=done, key=k, step_time_s=float(t[1]))
        row.info["consumed"] = consumed
        if tp := LIBAI_THROUGHPUT.search(text, t.end()):
            row.reported["total_throughput"] = float(tp[1])
        return row

    def timed(kept: list[Row]) -> None:
        previous: Row | None = None
        for row in kept:
            done = int(row.counter or 0)
            batch = row.info["consumed"] / done
            before = int(previous.counter or 0) if previous else 0
            row.steps = done - before
            total = float(row.step_time_s or 0) * (done - LIBAI_UNTIMED)
            spent = float(previous.step_time_s or 0) * (before - LIBAI_UNTIMED) if previous else 0.0
            row.duration_s = total - spent
            row.samples = (
                row.info["consumed"] - previous.info["consumed"]
                if previous
                else batch * (done - LIBAI_UNTIMED)
            )
            if row.steps < 1 or row.duration_s <= 0 or row.samples <= 0:
                raise ParseError(
                    "iterations, consumed samples or timed seconds do not advance since the "
                    "previous line",
                    row.line.path,
                    row.line.lineno,
                )
            previous = row
        if kept:
            batch = kept[0].info["consumed"] / int(kept[0].counter or 1)
            if batch != facts.global_batch:
                notes.append(
                    f"consumed_samples advance {batch:g} per iteration but the run facts say "
                    f"{facts.global_batch}; using the log's"
                )

    rows = collect(logs, LIBAI_CLAIM, read, notes, checker(facts, LIBAI_STATED))
    return global_result(
        logs, rows, facts, Method.STEP_TIMES, notes, "LiBai `iteration: i/n`", finish=timed
    )


def parse_oneflow_face(logs: list[Path], facts: RunFacts) -> ParseResult:
    """oneflow_face's `train: iter i, loss l, throughput: t` every loss_print_frequency iterations
    (DLPerf: every iteration). i is 0-based (i + 1 iterations done); t is the job-wide samples
    per second since the previous line (TrainMetric: loss_print_frequency x train_batch_size,
    the global batch, over the StopWatch split between two callbacks), used as printed
    (harmonic: time = samples / rate), never multiplied by the ranks. The first line's span
    starts when the metric was created, before the job was compiled: the window's warm-up skips
    it. Validation and other lines between them are skipped.

    Method: printed rates (the job's samples/s since the previous line); job-wide (rank -1), the
    iterations since the previous line."""
    notes = [
        "timed by the printed job-wide `throughput` (samples since the previous line over their "
        "time); the first line's span includes the job's compilation"
    ]

    def read(line: Line) -> Row:
        m = match(FACE, line, "`train: iter i, loss <l>, throughput: <t>`")
        step, rate = int(m[1]), float(m[2])
        if rate <= 0:
            raise Unreadable(f"throughput {m[2]}")
        return Row(line, step, counter=step + 1, key=step, rate=rate)

    rows = collect(logs, FACE_CLAIM, read, notes)
    return global_result(
        logs, rows, facts, Method.PRINTED_RATES, notes, "oneflow_face `train: iter`"
    )
