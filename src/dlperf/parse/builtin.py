"""Parser of the built-in workloads' `dlperf-step` lines (format: dlperf.logline)."""

from __future__ import annotations

from pathlib import Path

from dlperf import logline
from dlperf.parse.records import Method, ParseError, ParseResult, StepRecord

REQUIRED = ("rank", "step", "samples", "start", "end")


def parse_builtin_logs(logs: list[Path]) -> ParseResult:
    records: list[StepRecord] = []
    for path in logs:
        with open(path, errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                parsed = logline.parse_line(line)
                if parsed and parsed[0] == logline.STEP:
                    records.append(_record(parsed[1], path, lineno))
    return ParseResult(records, Method.TIMESTAMPS)


def _record(fields: dict[str, str], path: Path, lineno: int) -> StepRecord:
    missing = [k for k in REQUIRED if k not in fields]
    if missing:
        raise ParseError(f"step line lacks {', '.join(missing)}", path, lineno)
    try:
        return StepRecord(
            rank=int(fields["rank"]),
            step=int(fields["step"]),
            steps=1,
            samples=float(fields["samples"]),
            path=str(path),
            line=lineno,
            start_s=float(fields["start"]),
            time_s=float(fields["end"]),
        )
    except ParseError:
        raise
    except ValueError as err:
        raise ParseError(f"unreadable step line: {err}", path, lineno) from None
