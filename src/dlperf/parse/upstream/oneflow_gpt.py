"""OneFlow-GPT's metric lines (OneFlow-Benchmark LanguageModeling/GPT, oneflow_gpt/util.py's
Metric), DLPerf's GPT special case.

With `--metric-print-format table`, as DLPerf ran it, a title row, a rule, then a row every
log_interval steps, `| step | micro_batches | samples | throughput | latency | loss |` (the
title's first column reads `batches` before ed0d22c of 2021-05-13, as DLPerf's own log shows); the
title is printed again after the nvidia-smi report at step 10. With `normal`:
`step=s,micro_batches=m,samples=n,throughput=t,latency=l,loss=x,` (read from util.py's
step_print: no public log of it was found).
"""

from __future__ import annotations

import re
from pathlib import Path

from dlperf.parse.records import Method, ParseError, ParseResult
from dlperf.parse.upstream.lines import NUM, Line, Unreadable
from dlperf.parse.upstream.ranks import RunFacts, global_result
from dlperf.parse.upstream.rows import Row, collect, prefer_log
from dlperf.parse.upstream.stated import argument, checker

GPT_CLAIM = re.compile(r"^(?:\|\s*\d|(?:step|batches)=\d)")
GPT_TABLE = re.compile(rf"^\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*({NUM})\s*\|\s*({NUM})\s*\|")
GPT_NORMAL = re.compile(
    rf"^(?:step|batches)=(\d+),micro_batches=(\d+),samples=(\d+),throughput=({NUM}),"
    rf"latency=({NUM}),"
)
# config.py's print_args (`  key ..... value`): the micro batch is per data-parallel rank; the
# global batch (micro x data parallel x accumulation) is read from the samples column instead
GPT_STATED = (
    argument("micro_batch_size", "per_device"),
    argument("num_gpus_per_node", "per_node"),
    argument("num_nodes", "nodes"),
)


def parse_oneflow_gpt(logs: list[Path], facts: RunFacts) -> ParseResult:
    """OneFlow-GPT's metric row every log_interval steps (table or normal format), job-wide.
    `step` counts the steps done; `samples` the samples so far (micro batch x data parallel x
    accumulation per step); `throughput` the samples per second since the previous row
    (util.py: the samples over the elapsed time between the callbacks), used as printed
    (harmonic: time = samples / rate). `latency` is left alone: it divides by log_interval even
    for a last row that covers fewer steps. A record covers the steps since the previous row and
    the samples they added; the first row's span starts when the metric was created, before the
    job was compiled, and the row after step 10 holds the nvidia-smi report util.py runs in step
    10's callback: a warm-up of 20 steps (DLPerf's, and the window's default) skips both. The
    report's lines and the title rows between the metric rows are skipped.

    Method: printed rates (the job's samples/s since the previous row, its samples the advance of
    the `samples` column); job-wide (rank -1), the steps since the previous row (table or normal
    format)."""
    notes = [
        "timed by the printed job-wide `throughput` (samples since the previous row over their "
        "time); the first row's span includes the job's compilation, the row after step 10 the "
        "nvidia-smi report run in step 10's callback"
    ]

    def read(line: Line) -> Row:
        m = GPT_TABLE.match(line.text) or GPT_NORMAL.match(line.text)
        if not m:
            raise Unreadable(
                "expected `| step | micro_batches | samples | throughput | latency |` or "
                "`step=s,micro_batches=m,samples=n,throughput=t,latency=l,`"
            )
        step, rate = int(m[1]), float(m[4])
        if rate <= 0:
            raise Unreadable(f"throughput {m[4]}")
        row = Row(line, step, counter=step, key=step, rate=rate)
        row.info["samples"] = int(m[3])
        return row

    def samples(kept: list[Row]) -> None:
        previous = 0
        for row in kept:
            row.samples = row.info["samples"] - previous
            if row.samples <= 0:
                raise ParseError(
                    f"samples {int(row.info['samples'])} do not advance from the previous row's "
                    f"{previous}",
                    row.line.path,
                    row.line.lineno,
                )
            previous = int(row.info["samples"])
        # a row after the first: a resumed run's first row may cover fewer steps than it counts
        usual = kept[1] if len(kept) > 1 else kept[0]
        prefer_log(
            "global batch (samples per step)",
            round(float(usual.samples or 0) / (usual.steps or 1)),
            facts.global_batch,
            notes,
        )

    rows = collect(logs, GPT_CLAIM, read, notes, checker(facts, GPT_STATED))
    return global_result(
        logs, rows, facts, Method.PRINTED_RATES, notes, "OneFlow-GPT metric", finish=samples
    )
