"""MXNet sources: NVIDIA DLE MXNet RN50, gluon-cv RN50 v1b (Horovod script), gluon-nlp BERT and
deepinsight/insightface's partial FC (recognition/partial_fc/mxnet)."""

from __future__ import annotations

import re
from pathlib import Path

from dlperf.parse.records import Method, ParseResult
from dlperf.parse.upstream.lines import NUM, Line, Unreadable, stamp_of
from dlperf.parse.upstream.ranks import RunFacts, global_result, per_rank_result
from dlperf.parse.upstream.rows import Row, collect, match, stamps_or
from dlperf.parse.upstream.stated import checker, stated

DLE_CLAIM = re.compile(r"^Epoch\[\d+\] Batch \[")
DLE = re.compile(rf"^Epoch\[(\d+)\] Batch \[(\d+)-(\d+)\]\s+Speed: ({NUM}) samples/sec")
GLUONCV_CLAIM = re.compile(r"^Epoch\[\d+\] Batch\[\d+\](?!\s*Loss\[)")
GLUONCV = re.compile(rf"^Epoch\[(\d+)\] Batch\[(\d+)\]\s+Speed: ({NUM}) samples/sec")
GLUONNLP_CLAIM = re.compile(r"^\[step \d")
GLUONNLP = re.compile(rf"^\[step (\d+)\].*\blatency=({NUM}) ?ms/batch")
# insightface partial_fc/mxnet: train_memory.py's logger formats "rank-id:<rank>:%(asctime)s-
# %(message)s"; callbacks.py CallBackLogging logs on rank 0 every config.frequent updates
# "Iter:%d Rank:%.2f it/sec Total:%.2f it/sec %s" (the rank's and the job's samples per second
# since the previous line, then `[epoch][loss]:<mean>`).
# the scripts' argparse Namespace: DLE MXNet's `--batch-size` (the adapter passes the global batch;
# a log with the per-device value is taken too), gluon-cv's train_horovod.py (per device),
# gluon-nlp's run_pretraining.py (`batch_size` per device, `total_batch_size` the job's)
NAMESPACE_BATCH = r"\bNamespace\(.*?(?<![\w.])batch_size=(\d+)\b"
DLE_STATED = (stated(NAMESPACE_BATCH, "batch_size", ("global", "per_device")),)
GLUONCV_STATED = (stated(NAMESPACE_BATCH, "batch_size", "per_device"),)
GLUONNLP_STATED = (
    stated(NAMESPACE_BATCH, "batch_size", "per_device"),
    stated(r"\bNamespace\(.*?(?<![\w.])total_batch_size=(\d+)\b", "total_batch_size", "global"),
)
PARTIAL_FC_CLAIM = re.compile(r"^rank-id:\d+:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}-Iter:\d")
PARTIAL_FC = re.compile(
    r"^rank-id:\d+:(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})-Iter:(\d+)"
    rf" Rank:({NUM}) it/sec Total:({NUM}) it/sec"
)


def parse_dle_mxnet_rn50(logs: list[Path], facts: RunFacts) -> ParseResult:
    """`{asctime}:INFO: Epoch[e] Batch [a-b]\\tSpeed: r samples/sec`: one line per interval,
    job-wide, printed by every rank (one rank's copy is kept). Timed by the asctime prefix
    (milliseconds); without it, by the printed job-wide rate. DLE's fit.py (not MXNet's
    Speedometer, whose b counts batches done) prints the 0-based batch indices of the interval,
    a = (i // disp) * disp and b = i: [0-19], [20-39] with --disp-batches 20, [0-0], [1-1] with 1.

    Method: timestamps (asctime prefix), else printed rates; job-wide (rank -1),
    `Batch [a-b]` = b - a + 1 iterations, b + 1 done."""
    notes: list[str] = []

    def read(line: Line) -> Row:
        m = match(DLE, line, "`Epoch[e] Batch [a-b]\\tSpeed: <rate> samples/sec`")
        a, b = int(m[2]), int(m[3])
        if b < a:
            raise Unreadable(f"batch interval [{a}-{b}] ends before it starts")
        done = b + 1
        return Row(
            line, done, counter=done, steps=done - a, key=(int(m[1]), done), rate=float(m[4])
        )

    rows = collect(logs, DLE_CLAIM, read, notes, checker(facts, DLE_STATED))
    method = stamps_or(rows, Method.PRINTED_RATES, notes, "the printed job-wide samples/sec")
    return global_result(logs, rows, facts, method, notes, "DLE MXNet `Epoch[e] Batch [a-b]`")


def parse_gluoncv_rn50(logs: list[Path], facts: RunFacts) -> ParseResult:
    """`INFO:root:Epoch[e] Batch[i]\\tSpeed: r samples/sec` every log_interval batches (i counts
    batches done, from 1). Upstream (train_horovod.py, the line DLPerf un-commented) computes
    `num_workers * batch_size * log_interval / elapsed` on rank 0 only: a job-wide rate over the
    interval, used as printed (harmonic: time = samples / rate), never multiplied by the ranks.
    The per-epoch `Epoch[e]\\tSpeed:` and the `Batch[i] Loss[...]` lines are skipped.

    Method: printed job-wide rates (asctime stamps if every line has one); job-wide (rank -1),
    log_interval batches."""
    notes: list[str] = []

    def read(line: Line) -> Row:
        m = match(GLUONCV, line, "`Epoch[e] Batch[i]\\tSpeed: <rate> samples/sec`")
        i = int(m[2])
        return Row(line, i, counter=i, key=(int(m[1]), i), rate=float(m[3]))

    rows = collect(logs, GLUONCV_CLAIM, read, notes, checker(facts, GLUONCV_STATED))
    method = stamps_or(rows, Method.PRINTED_RATES, notes, "the printed job-wide samples/sec")
    return global_result(logs, rows, facts, method, notes, "gluon-cv `Epoch[e] Batch[i]`")


def parse_gluonnlp_bert(logs: list[Path], facts: RunFacts) -> ParseResult:
    """`[step i]\\t... throughput=xK tks/s ... time=t, latency=l ms/batch` every log_interval
    steps, by every rank for itself. A record covers the steps since the previous line and lasts
    latency * steps (the interval's wall time, to 0.1 ms per step; `time=` has 10 ms). The token
    throughput (valid tokens, not sequences) is not used.

    Method: step times (latency x steps); one rank's own, log_interval steps."""
    notes = ["timed by latency= (ms per batch over the interval) times the interval's steps"]

    def read(line: Line) -> Row:
        m = match(GLUONNLP, line, "`[step i] ... latency=<ms> ms/batch`")
        i = int(m[1])
        return Row(line, i, counter=i, key=i, step_time_s=float(m[2]) / 1000)

    rows = collect(logs, GLUONNLP_CLAIM, read, notes, checker(facts, GLUONNLP_STATED))
    return per_rank_result(logs, rows, facts, Method.STEP_TIMES, notes, "gluon-nlp `[step i]`")


def parse_insightface_partial_fc(logs: list[Path], facts: RunFacts) -> ParseResult:
    """`rank-id:0:<asctime>-Iter:i Rank:r it/sec Total:t it/sec [e][loss]:l` every
    config.frequent updates (DLPerf: every update), logged by rank 0 only. i counts the updates
    done (from 1; the first update only starts the clock, so the first line is at frequent + 1
    or frequent); r and t are samples per second (despite `it/sec`): the rank's and the job's.
    Timed by the line's own asctime (milliseconds), which follows the `nd.waitall()` before the
    rates are computed; the printed rates are read and checked, not used. A record covers the
    updates since the previous line.

    Method: timestamps (asctime after the `rank-id:r:` prefix); job-wide (rank -1; rank 0 logs),
    the updates since the previous line."""
    notes = [
        "timed by the logging prefix's asctime after `rank-id:<r>:`; `Total: ... it/sec` (the "
        "job's samples per second) ignored"
    ]

    def read(line: Line) -> Row:
        m = match(PARTIAL_FC, line, "`rank-id:r:<asctime>-Iter:i Rank:<r> it/sec Total:<t> it/sec`")
        step, total = int(m[2]), float(m[4])
        if total <= 0:
            raise Unreadable(f"Total {m[4]}")
        return Row(line, step, counter=step, key=step, time_s=stamp_of(m[1]), rate=total)

    rows = collect(logs, PARTIAL_FC_CLAIM, read, notes)
    return global_result(
        logs, rows, facts, Method.TIMESTAMPS, notes, "insightface partial_fc `Iter:`"
    )
