"""PaddlePaddle sources: release/1.8's PaddleCV image classification and PaddleNLP BERT
(DLPerf v1.0), and release current's PaddleClas and PaddleNLP BERT pretraining."""

from __future__ import annotations

import re
from pathlib import Path

from dlperf.parse.records import Method, ParseError, ParseResult
from dlperf.parse.upstream.lines import NUM, Line, Unreadable, stamp_of
from dlperf.parse.upstream.ranks import RunFacts, global_result, per_rank_result
from dlperf.parse.upstream.rows import Row, collect, match, prefer_log, stamps_or
from dlperf.parse.upstream.stated import check_value, checker, stated

CV_CLAIM = re.compile(r"^\[Pass \d+, train batch \d")
CV = re.compile(rf"^\[Pass (\d+), train batch (\d+)\].*\belapse ({NUM}) ?sec")
NLP_CLAIM = re.compile(r"^epoch: \d+, progress: ")
NLP = re.compile(rf"^epoch: (\d+), progress: \d+/\d+, step: (\d+), .*\bspeed: ({NUM}) steps/s")
# PaddleCV's train.py prints its arguments (`batch_size: 128`, a node's: per device x GPUs) and
# `trainer_id i, trainer_num n` (one trainer per device)
CV_STATED = (
    stated(r"^batch_size: (\d+)$", "batch_size (a node's)", "node_batch"),
    stated(r"\btrainer_num (\d+)\b", "trainer_num", "world"),
)
TRAINERS = re.compile(r"\btrainers_num:\s*(\d+)")
ARGUMENT = re.compile(r"^(batch_size|in_tokens|max_seq_len): (\S+)$")
# PaddleClas (ppcls/utils/logger.py: `[%Y/%m/%d %H:%M:%S] ppcls INFO: `, then
# ppcls/engine/train/utils.py log_info)
CLAS_PREFIX = r"(?:\[\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\] ppcls \w+: )?"
CLAS_CLAIM = re.compile(rf"^{CLAS_PREFIX}\[Train\]\[Epoch \d+/\d+\]\[Iter: \d")
CLAS = re.compile(
    rf"^{CLAS_PREFIX}\[Train\]\[Epoch (\d+)/\d+\]\[Iter: (\d+)/\d+\]"
    rf".*\bbatch_cost: ({NUM})s, reader_cost: {NUM}, ips: ({NUM}) samples/s"
)
CLAS24 = re.compile(
    rf"^{CLAS_PREFIX}\[Train\]\[Epoch (\d+)/\d+\]\[Iter: (\d+)/(\d+)\]"
    rf".*\bbatch_cost: ({NUM})s, reader_cost: {NUM}, ips: {NUM} samples/s"
)
# PaddleNLP (paddlenlp/utils/log.py: colorlog `[asctime] [levelname] - `, maybe colour-coded,
# then slm/model_zoo/bert/run_pretrain.py's line)
COLOUR = r"(?:\x1b\[[\d;]*m)?"
NLP_PREFIX = (
    rf"(?:{COLOUR}\[(?P<stamp>\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d,\d{{3}})\] "
    rf"\[\s*\w+\]{COLOUR} - )?"
)
NLP2_CLAIM = re.compile(rf"^{NLP_PREFIX}global step: \d+, epoch: ")
NLP2 = re.compile(
    rf"^{NLP_PREFIX}global step: (?P<step>\d+), epoch: (?P<epoch>\d+), batch: \d+, loss: \S+, "
    rf"avg_reader_cost: {NUM} sec, avg_batch_cost: (?P<cost>{NUM}) sec, "
    rf"avg_samples: (?P<samples>{NUM}), ips: {NUM} sequences/sec"
)


def parse_paddle_cv(logs: list[Path], facts: RunFacts) -> ParseResult:
    """`{asctime}-INFO: [Pass p, train batch i] \\t..., elapse t sec`, per rank (one workerlog per
    rank). Timed by the asctime prefix (milliseconds, wall time including data loading) when every
    line has it; otherwise by `elapse`, the seconds of the printed batch alone. With print_step > 1
    that one batch stands for the whole interval (noted).

    Method: timestamps (asctime prefix), else step times (elapse); one rank's own, the printed
    batch(es)."""
    notes: list[str] = []

    def read(line: Line) -> Row:
        m = match(CV, line, "`[Pass p, train batch i] ... elapse <seconds> sec`")
        i = int(m[2])
        return Row(line, i, counter=i + 1, key=(int(m[1]), i), step_time_s=float(m[3]))

    rows = collect(logs, CV_CLAIM, read, notes, checker(facts, CV_STATED))
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
    (from the printed arguments, preferred over the run facts).

    Method: printed rates (steps/s / trainers x global batch); job-wide (rank -1), skip_steps
    steps."""
    notes: list[str] = []
    trainers: list[int] = []
    arguments: dict[str, str] = {}
    where: dict[str, Line] = {}

    def other(line: Line) -> None:
        if m := TRAINERS.search(line.text):
            check_value("trainers_num (nodes)", int(m[1]), "nodes", facts, line.path, line.lineno)
            trainers.append(int(m[1]))
        elif m := ARGUMENT.match(line.text):
            arguments.setdefault(m[1], m[2])
            where.setdefault(m[1], line)

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
        line = where["batch_size"]
        check_value(
            "batch_size (sequences per device)", logged, "per_device", facts, line.path, line.lineno
        )
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


def parse_paddleclas(logs: list[Path], facts: RunFacts) -> ParseResult:
    """PaddleClas (release current): `[Train][Epoch e/E][Iter: i/n]lr(...): ..., <metrics>,
    batch_cost: <s>s, reader_cost: <s>, ips: <r> samples/s, eta: ...`, printed by the ranks of
    Global.log_ranks (all of them, as the adapter asks), one workerlog per rank.

    batch_cost is the mean wall time per iteration (data loading included: the loss is read on
    the host every iteration, which waits for the GPU) over the iterations since the previous
    line; the meters also restart at iteration 5. Step times: each line covers the iterations
    since the previous one (i is 0-based), timed by batch_cost times their number. The logging
    prefix's timestamps have whole seconds only and are not used. The printed `ips` (the rank's
    batch over batch_cost) is kept in ParseResult.reported, never used.

    Method: step times (batch_cost, the mean since the previous line); one rank's own, the
    iterations since the previous line."""
    notes: list[str] = []

    def read(line: Line) -> Row:
        m = match(CLAS, line, "`[Train][Epoch e/E][Iter: i/n]... batch_cost: <s>s, ... ips:`")
        i = int(m[2])
        row = Row(line, i, counter=i + 1, key=(int(m[1]), i), step_time_s=float(m[3]))
        row.reported["ips"] = float(m[4])  # the rank's batch / batch_cost, as printed
        return row

    rows = collect(logs, CLAS_CLAIM, read, notes)
    notes.append("step times: batch_cost (mean seconds per iteration since the previous line)")
    result = per_rank_result(
        logs, rows, facts, Method.STEP_TIMES, notes, "PaddleClas `[Train][Epoch e/E][Iter: i/n]`"
    )
    if any(r.steps > 5 for r in result.records):
        result.notes.append(
            "lines are more than 5 iterations apart: the interval holding iteration 5, where "
            "PaddleClas restarts its meters, is timed by the mean of its later iterations"
        )
    return result


# PaddleClas v2.4's trainer restarts its meters at iteration 5 of every epoch, and only then.
CLAS24_RESET_ITER = 5


def parse_paddleclas_v24(logs: list[Path], facts: RunFacts) -> ParseResult:
    """PaddleClas v2.4's trainer (the `paddleclas` 2.4.0-2.4.2 wheels; release `package`): the
    same line as release/2.5's (`parse_paddleclas`), printed by rank 0 only (no
    Global.log_ranks), whose batch_cost is a running mean: v2.4's log_info never resets the
    meters, ppcls/engine/train/train.py restarts them at iteration 5 of each epoch only (release/
    2.5 also resets them after every line). So batch_cost x the iterations since the restart is
    their total, and a line's interval is that total less the previous line's, per iteration the
    interval's mean. An interval that holds a restart is timed by its iterations after it.

    Method: step times (batch_cost, a running mean since iteration 5: each line's total less the
    previous line's); one rank's own, the iterations since the previous line, rank 0 only."""
    notes: list[str] = []
    streams: dict[int, tuple[int, int, float]] = {}  # file -> (global iteration, restart, total)
    epochs: dict[tuple[int, int], int] = {}  # (file, epoch) -> its iterations (`/n`)
    straddled: list[int] = []

    def read(line: Line) -> Row:
        m = match(CLAS24, line, "`[Train][Epoch e/E][Iter: i/n]... batch_cost: <s>s, ... ips:`")
        epoch, i, n, mean_s = int(m[1]), int(m[2]), int(m[3]), float(m[4])
        epochs[line.file_index, epoch] = n
        done_before = sum(k for (f, e), k in epochs.items() if f == line.file_index and e < epoch)
        g = done_before + i  # 0-based iteration of the whole run
        restart = (
            done_before + CLAS24_RESET_ITER if i >= CLAS24_RESET_ITER else _restart(streams, line)
        )
        total_s = (g - restart + 1) * mean_s  # seconds of the iterations since the restart
        previous = streams.get(line.file_index)
        if previous and previous[1] == restart:
            seconds, iterations = total_s - previous[2], g - previous[0]
        else:
            seconds, iterations = total_s, g - restart + 1
            if previous and g - previous[0] > iterations:
                straddled.append(g)
        if iterations < 1 or seconds <= 0:
            raise Unreadable(f"batch_cost {mean_s} does not follow the previous line's")
        streams[line.file_index] = (g, restart, total_s)
        return Row(line, i, counter=i + 1, key=(epoch, i), step_time_s=seconds / iterations)

    rows = collect(logs, CLAS_CLAIM, read, notes)
    notes.append(
        "step times: from batch_cost, a running mean since iteration 5 of the epoch (PaddleClas "
        "v2.4): each line's interval is its total less the previous line's"
    )
    if straddled:
        notes.append(
            "an interval holding iteration 5, where PaddleClas v2.4 restarts its meters, is "
            "timed by the mean of its iterations from 5 on"
        )
    return per_rank_result(
        logs,
        rows,
        facts,
        Method.STEP_TIMES,
        notes,
        "PaddleClas v2.4 `[Train][Epoch e/E][Iter: i/n]`",
    )


def _restart(streams: dict[int, tuple[int, int, float]], line: Line) -> int:
    """Where the meters of an iteration before 5 started: the run's start in the first epoch,
    else the previous epoch's iteration 5 (the restart the stream has seen last)."""
    previous = streams.get(line.file_index)
    return previous[1] if previous else 0


def parse_paddlenlp_bert(logs: list[Path], facts: RunFacts) -> ParseResult:
    """PaddleNLP BERT pretraining (release current, slm/model_zoo/bert/run_pretrain.py):
    `global step: g, epoch: e, batch: b, loss: l, avg_reader_cost: r sec, avg_batch_cost: c sec,
    avg_samples: s, ips: x sequences/sec, ...` every logging_steps steps, by every rank (one
    workerlog per rank), each for its own batch.

    Timed by the logger's `[YYYY-MM-DD HH:MM:SS,mmm]` prefix when every line has one: the script
    takes avg_batch_cost before the host reads the loss to print it, so with GPU work still
    queued the wait falls outside every step's cost, while the stamps include it. Without stamps,
    step times (avg_batch_cost times the steps since the previous line), with a note.

    Method: timestamps (the logger's asctime prefix), else step times (avg_batch_cost); one rank's
    own, logging_steps steps."""
    notes: list[str] = []
    logged_batch: list[tuple[float, Line]] = []

    def read(line: Line) -> Row:
        m = match(NLP2, line, "`global step: g, epoch: e, ..., avg_batch_cost: <s> sec, ...`")
        step = int(m["step"])
        logged_batch.append((float(m["samples"]), line))
        row = Row(line, step, counter=step, key=step, step_time_s=float(m["cost"]))
        if m["stamp"]:
            row.time_s = stamp_of(m["stamp"])
        return row

    rows = collect(logs, NLP2_CLAIM, read, notes)
    stamped = [row for row in rows if row.time_s is not None]
    if rows and len(stamped) == len(rows):
        method = Method.TIMESTAMPS
        notes.append("timed by the logging prefix's timestamps; avg_batch_cost ignored")
    elif stamped:
        bare = next(row.line for row in rows if row.time_s is None)
        raise ParseError(
            "some progress lines carry a timestamp prefix and others do not", bare.path, bare.lineno
        )
    else:
        method = Method.STEP_TIMES
        notes.append(
            "no timestamp prefix on the progress lines: using avg_batch_cost, which leaves out "
            "the wait for the GPU when the loss is printed (may overstate the rate)"
        )
    # avg_samples is the mean batch of the steps since the previous line: a last, partial batch
    # of the data may lower it, nothing raises it, and a log of this cell has a full one
    bsz = facts.batch_size_per_device
    over = next(((b, line) for b, line in logged_batch if b > bsz), None)
    if over is None and logged_batch and all(b != bsz for b, _ in logged_batch):
        over = logged_batch[0]
    if over is not None:
        raise ParseError(
            f"the log says avg_samples = {over[0]:g} but the cell's batch size per device "
            f"{bsz}: a log of another run shape than its cell",
            over[1].path,
            over[1].lineno,
        )
    odd = sorted({b for b, _ in logged_batch if b != bsz})
    if odd:
        notes.append(
            f"avg_samples {', '.join(f'{b:g}' for b in odd)} differs from the run's batch "
            f"{facts.batch_size_per_device} per device (the run's batch is used)"
        )
    return per_rank_result(
        logs, rows, facts, method, notes, "PaddleNLP `global step: g, epoch: e, ...`"
    )
