"""Parser of the built-in workloads' `dlperf-step` lines (format: dlperf.logline).

It streams: a log is read line by line, and once every rank of a log has logged the iterations
the window needs (`keep_iterations`), the rest of the log is left unread. Memory and time then
stay bounded by the window, not by the log's length (a long run, or a workload told to run far
past the window): steps the window never reaches are no figure, and none is kept.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from dlperf import logline
from dlperf.parse.records import Method, ParseError, ParseResult, StepRecord

REQUIRED = ("rank", "step", "samples", "start", "end")
LOSS = "loss"  # ParseResult.reported's name for each step's loss


def parse_builtin_logs(logs: list[Path], keep_iterations: int | None = None) -> ParseResult:
    """Each rank's step records, in log order; with `keep_iterations`, only the first that many
    of each rank in each log (the window's).

    Every workload numbers its steps 1, 2, 3...: a step line that is not the next of its rank
    (one lost to other output run into it, deleted, or repeated) is a ParseError naming the
    line, since a window counted over the remaining lines would silently cover other steps."""
    records: list[StepRecord] = []
    losses: dict[tuple[str, int], float] = {}
    for path in logs:
        name = str(path)  # one string shared by the log's records
        kept: Counter[int] = Counter()  # records kept per rank of this log
        last: Counter[int] = Counter()  # the last step number per rank of this log
        with open(path, errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                if not line.startswith(logline.STEP_PREFIX):
                    if logline.STEP_PREFIX in line:
                        raise ParseError(
                            "a step line run into by other output (stderr without a newline?): "
                            "its step cannot be trusted",
                            name,
                            lineno,
                        )
                    continue
                parsed = logline.parse_line(line)
                if parsed:
                    record = _record(parsed[1], name, lineno)
                    if record.step != last[record.rank] + 1:
                        raise ParseError(
                            f"rank {record.rank}'s step {record.step} follows its step "
                            f"{last[record.rank]}: a step line is missing, garbled or repeated",
                            name,
                            lineno,
                        )
                    last[record.rank] = record.step
                    if keep_iterations is None or kept[record.rank] < keep_iterations:
                        records.append(record)
                        kept[record.rank] += 1
                        if "loss" in parsed[1]:
                            losses[(name, lineno)] = _loss(parsed[1]["loss"], name, lineno)
                    elif min(kept.values()) >= keep_iterations:
                        break  # every rank of this log has its window: nothing further is read
    return ParseResult(records, Method.TIMESTAMPS, reported={LOSS: losses} if losses else {})


def _loss(text: str, path: str, lineno: int) -> float:
    try:
        return float(text)  # nan and inf read as themselves: a diverged step is told, not hidden
    except ValueError:
        raise ParseError(f"unreadable loss {text!r}", path, lineno) from None


def _record(fields: dict[str, str], path: str, lineno: int) -> StepRecord:
    missing = [k for k in REQUIRED if k not in fields]
    if missing:
        raise ParseError(f"step line lacks {', '.join(missing)}", path, lineno)
    try:
        return StepRecord(
            rank=int(fields["rank"]),
            step=int(fields["step"]),
            steps=1,
            samples=float(fields["samples"]),
            path=path,
            line=lineno,
            start_s=float(fields["start"]),
            time_s=float(fields["end"]),
        )
    except ParseError:
        raise
    except ValueError as err:
        raise ParseError(f"unreadable step line: {err}", path, lineno) from None
