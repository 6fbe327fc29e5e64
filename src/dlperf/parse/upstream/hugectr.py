"""HugeCTR's W&D (DLPerf v1.0's v2.2 and 24.06's Python API)."""

from __future__ import annotations

import re
from pathlib import Path

from dlperf.parse.records import Method, ParseResult
from dlperf.parse.upstream.lines import NUM, Line, Unreadable
from dlperf.parse.upstream.oneflow import header_stated, samples_per_step
from dlperf.parse.upstream.ranks import RunFacts, global_result
from dlperf.parse.upstream.rows import Row, collect, header_values, match
from dlperf.parse.upstream.stated import check_value, checker

HUGECTR_CLAIM = re.compile(r"^\[.*\bHUGECTR\b.*\bIter:")
HUGECTR = re.compile(rf"\bIter: (\d+) Time\((\d+) iters\): ({NUM})s(?=\s|$)")
HUGECTR_RANK = re.compile(r"\[RANK(\d+)\]")
HUGECTR_EVAL = re.compile(rf"^\[.*\bHUGECTR\b.*\bEval Time for \d+ iters: ({NUM})s(?=\s|$)")
# HugeCTR v24.06.00 (Python API): core23/logger.cpp's prefix `[HCTR][%T.mmm][INFO][RK<rank>]
# [<thread>]: ` (thread "main"), then src/pybind/model.cpp Model::fit's `Iter: <i> Time(<display>
# iters): <seconds>s Loss: <loss> lr:<lr>` (seconds as an ostream double: 6 significant digits)
# and, before training, `Training batchsize: <global>, evaluation batchsize: <n>`
HCTR_PREFIX = r"\[HCTR\]\[[\d:.]+\]\[INFO\]\[RK(\d+)\]\[[^\]]*\]: "
HCTR_CLAIM = re.compile(HCTR_PREFIX + r"Iter:")
HCTR_ITER = re.compile(HCTR_PREFIX + rf"Iter: (\d+) Time\((\d+) iters\): ({NUM})s(?=\s|$)")
HCTR_BATCH = re.compile(HCTR_PREFIX + r"Training batchsize: (\d+),")
HCTR_EVAL = re.compile(HCTR_PREFIX + rf"Eval Time for \d+ iters: ({NUM})s(?=\s|$)")


class HeldEvaluations:
    """HugeCTR restarts its training timer right after printing `Iter:`, then evaluates (when
    eval_interval divides the iteration): the next `Time(n iters)` holds that evaluation, whose own
    `Eval Time for <batches> iters: <seconds>s` line comes before it. So it is from v2.2's main.cpp
    to 24.06's Model::fit (23.2 evaluated before printing, so its line came before the `Iter:` whose
    time held it: the same rule reads both). The seconds of the `Eval Time` lines since a stream's
    previous `Iter:` are taken off its next one."""

    def __init__(self) -> None:
        self.pending: dict[tuple[int, int | None], float] = {}  # stream -> eval seconds since Iter
        self.taken: list[float] = []

    def evaluated(self, line: Line, seconds: float) -> None:
        stream = (line.file_index, line.tag_rank)
        self.pending[stream] = self.pending.get(stream, 0.0) + seconds

    def training_seconds(self, line: Line, iterations: int, printed: str) -> float:
        """`Time(<iterations> iters): <printed>s` less the evaluation it holds."""
        seconds = float(printed)
        if eval_s := self.pending.pop((line.file_index, line.tag_rank), 0.0):
            if seconds <= eval_s:
                raise Unreadable(
                    f"Time({iterations} iters) {printed}s does not hold the {eval_s:g}s evaluation"
                )
            self.taken.append(eval_s)
            seconds -= eval_s
        return seconds

    def note(self, notes: list[str]) -> None:
        if self.taken:
            notes.append(
                f"{len(self.taken)} evaluation(s), {sum(self.taken):g}s in all (`Eval Time`), "
                "taken off the `Time(n iters)` holding them"
            )


def parse_hugectr(logs: list[Path], facts: RunFacts) -> ParseResult:
    """`[..][HUGECTR][INFO][RANK0]: Iter: i Time(n iters): t s Loss: ...`, job-wide (rank 0): a
    record covers n iterations and lasts t seconds, less any evaluation in it (HeldEvaluations: the
    `[..][HUGECTR][INFO]: Eval Time for b iters: t s` lines; v2.2 prints them on every process,
    told apart by their MPI tag, and `Iter:` on the first only). A `batch_size = N` header
    (DLPerf's wrapper) is the global batch and wins over the run facts. For W&D, stats'
    step_time_ms is the latency per iteration; peak memory is not in these lines.

    Method: step times (`Time(n iters)`, less the evaluation in it); job-wide (rank -1), n
    iterations."""
    notes = ["timed by `Time(n iters)`"]
    header: dict[str, str] = {}
    held = HeldEvaluations()

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
            duration_s=held.training_seconds(line, n, m[3]),
        )

    def other(line: Line) -> None:
        if m := HUGECTR_EVAL.match(line.text):
            held.evaluated(line, float(m[1]))
        else:
            header_values(line, header)

    rows = collect(
        logs, HUGECTR_CLAIM, read, notes, checker(facts, header_stated("batch_size"), other)
    )
    held.note(notes)
    per_step = samples_per_step(header, facts, notes, global_key="batch_size")
    return global_result(logs, rows, facts, Method.STEP_TIMES, notes, "HugeCTR `Iter:`", per_step)


def parse_hugectr_current(logs: list[Path], facts: RunFacts) -> ParseResult:
    """Release current (HugeCTR 24.06's Python API): `[HCTR][hh:mm:ss.mmm][INFO][RK0][main]: Iter:
    i Time(n iters): t s Loss: ...`, job-wide (the root rank prints): a record covers n iterations
    and lasts t seconds. The `Training batchsize: N` line fit prints first is the global batch
    and wins over the run facts. Copies of a line are told apart as for every job-wide source
    (MPI tag, else the step), not by `RK<r>`: only the root rank prints these lines.
    `Time(n iters)` also holds any evaluation since the previous `Iter:` line (fit restarts the
    timer before it evaluates): the seconds of the `Eval Time for b iters: t s` lines between
    them are taken off, with a note (HeldEvaluations; the adapter turns evaluation off, public
    logs have it on).

    Method: step times (`Time(n iters)`, less the evaluation in it), as parse_hugectr, on the
    `[HCTR][..][INFO][RK0][main]: ` logger's line; job-wide (rank -1), n iterations."""
    notes = ["timed by `Time(n iters)`"]
    header: dict[str, str] = {}
    held = HeldEvaluations()

    def read(line: Line) -> Row:
        m = match(HCTR_ITER, line, "`[HCTR][..][INFO][RKr][..]: Iter: i Time(n iters): <s>s`")
        n = int(m[3])
        if n < 1:
            raise Unreadable("Time(0 iters)")
        i = int(m[2])
        seconds = held.training_seconds(line, n, m[4])
        return Row(line, i, counter=i, steps=n, key=i, duration_s=seconds)

    def other(line: Line) -> None:
        if m := HCTR_EVAL.match(line.text):
            held.evaluated(line, float(m[2]))
        elif m := HCTR_BATCH.match(line.text):
            check_value("Training batchsize", int(m[2]), "global", facts, line.path, line.lineno)
            header.setdefault("batch_size", m[2])

    rows = collect(logs, HCTR_CLAIM, read, notes, other)
    held.note(notes)
    per_step = samples_per_step(header, facts, notes, global_key="batch_size")
    return global_result(logs, rows, facts, Method.STEP_TIMES, notes, "HugeCTR `Iter:`", per_step)
