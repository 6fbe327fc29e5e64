"""PaddlePaddle sources (release/1.8): PaddleCV image classification and PaddleNLP BERT."""

from __future__ import annotations

import re
from pathlib import Path

from dlperf.parse.records import Method, ParseResult
from dlperf.parse.upstream._common import (
    NUM,
    Line,
    Row,
    RunFacts,
    collect,
    global_result,
    match,
    per_rank_result,
    prefer_log,
    stamps_or,
)

CV_CLAIM = re.compile(r"^\[Pass \d+, train batch \d")
CV = re.compile(rf"^\[Pass (\d+), train batch (\d+)\].*\belapse ({NUM}) ?sec")
NLP_CLAIM = re.compile(r"^epoch: \d+, progress: ")
NLP = re.compile(rf"^epoch: (\d+), progress: \d+/\d+, step: (\d+), .*\bspeed: ({NUM}) steps/s")
TRAINERS = re.compile(r"\btrainers_num:\s*(\d+)")
ARGUMENT = re.compile(r"^(batch_size|in_tokens|max_seq_len): (\S+)$")


def parse_paddle_cv(logs: list[Path], facts: RunFacts) -> ParseResult:
    """`{asctime}-INFO: [Pass p, train batch i] \\t..., elapse t sec`, per rank (one workerlog per
    rank). Timed by the asctime prefix (milliseconds, wall time including data loading) when every
    line has it; otherwise by `elapse`, the seconds of the printed batch alone. With print_step > 1
    that one batch stands for the whole interval (noted)."""
    notes: list[str] = []

    def read(line: Line) -> Row:
        m = match(CV, line, "`[Pass p, train batch i] ... elapse <seconds> sec`")
        i = int(m[2])
        return Row(line, i, counter=i + 1, key=(int(m[1]), i), step_time_s=float(m[3]))

    rows = collect(logs, CV_CLAIM, read, notes)
    method = stamps_or(rows, Method.STEP_TIMES, notes, "elapse (seconds of the printed batch)")
    result = per_rank_result(logs, rows, facts, method, notes, "PaddleCV `[Pass p, train batch i]`")
    if method is Method.STEP_TIMES and any(r.steps > 1 for r in result.records):
        result.notes.append(
            "lines are printed every few batches: "
            "each one's elapse is taken to stand for its interval"
        )
    return result


def parse_paddle_nlp_bert(logs: list[Path], facts: RunFacts) -> ParseResult:
    """`epoch: e, progress: a/b, step: i, ..., speed: s steps/s, file: f` every skip_steps steps,
    printed by trainer 0 only (one trainer per node, each driving its node's GPUs). Upstream prints
    speed = skip_steps * trainers_num / elapsed, so it already includes the node count: the job's
    rate is speed / trainers_num iterations/s, i.e. speed * gpus_per_node * batch samples/s (as
    DLPerf computed it). trainers_num is read from the log's `trainers_num:N` line when present.
    `--batch_size` counts tokens when `in_tokens: True`: sequences = batch_size // max_seq_len
    (from the printed arguments, preferred over the run facts)."""
    notes: list[str] = []
    trainers: list[int] = []
    arguments: dict[str, str] = {}

    def other(line: Line) -> None:
        if m := TRAINERS.search(line.text):
            trainers.append(int(m[1]))
        elif m := ARGUMENT.match(line.text):
            arguments.setdefault(m[1], m[2])

    def read(line: Line) -> Row:
        m = match(NLP, line, "`epoch: e, progress: a/b, step: i, ..., speed: <s> steps/s`")
        i = int(m[2])
        return Row(line, i, counter=i, key=i, rate=float(m[3]))  # steps/s for now

    rows = collect(logs, NLP_CLAIM, read, notes, other)
    n_trainers = prefer_log(
        "trainers_num (nodes)", trainers[0] if trainers else None, facts.nodes, notes
    )
    bsz = facts.batch_size_per_device
    if "batch_size" in arguments and arguments["batch_size"].isdigit():
        logged = int(arguments["batch_size"])
        if arguments.get("in_tokens") == "True":
            seq_len = int(arguments.get("max_seq_len", "0") or 0) or facts.seq_len
            if not seq_len:
                notes.append(
                    "batch_size counts tokens but no max_seq_len is known: "
                    "using the run facts' batch"
                )
                logged = bsz
            else:
                logged //= seq_len
        bsz = prefer_log(
            "batch size per device (sequences)", logged, facts.batch_size_per_device, notes
        )
    per_step = bsz * facts.world_size
    for row in rows:
        row.rate = row.rate / n_trainers * per_step  # type: ignore[operator]
    notes.insert(
        0,
        f"printed steps/s converted to samples/s: speed / {n_trainers} trainer(s) "
        f"* {per_step} samples per step",
    )
    return global_result(
        logs, rows, facts, Method.PRINTED_RATES, notes, "PaddleNLP `epoch: e, progress:`", per_step
    )
