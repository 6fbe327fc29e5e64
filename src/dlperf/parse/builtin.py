"""Parser of the built-in workloads' lines (`dlperf-step rank=.. step=.. samples=.. start=.. end=..`)."""

from __future__ import annotations

import re
from pathlib import Path

from dlperf.parse.records import Method, ParseError, ParseResult, StepRecord

STEP = re.compile(r"^dlperf-step (?P<fields>.*)$")
FIELD = re.compile(r"(\w+)=(\S+)")
REQUIRED = ("rank", "step", "samples", "start", "end")


def parse_builtin_logs(logs: list[Path]) -> ParseResult:
    records: list[StepRecord] = []
    for path in logs:
        with open(path, errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                match = STEP.match(line.rstrip("\n"))
                if match:
                    records.append(_record(match["fields"], path, lineno))
    return ParseResult(records, Method.TIMESTAMPS)


def _record(text: str, path: Path, lineno: int) -> StepRecord:
    fields = dict(FIELD.findall(text))
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
    except ValueError as err:
        raise ParseError(f"unreadable step line: {err}", path, lineno) from None
