"""Rows: the progress lines a source claims, read by the source's own reader.

A parser reads its logs through `collect`, which hands each line the source claims (its
progress-line shape) to the source's reader and turns an unreadable claimed line into a ParseError
naming file:line. The helpers below are what several sources' readers share.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

from dlperf.parse.records import Method, ParseError
from dlperf.parse.upstream.lines import Line, Unreadable, read_lines


@dataclass
class Row:
    """What one claimed line says, before it becomes a StepRecord."""

    line: Line
    step: int  # the source's own step number, as printed
    counter: int | None = None  # iterations completed so far, as the source counts them
    steps: int | None = None  # iterations covered, when the line says so itself
    key: Hashable | None = None  # tells the ranks' copies of one step apart; None: by order
    rank: int | None = None  # a rank the line itself names (`Rank : 3`, `[RANK0]`)
    time_s: float | None = None
    duration_s: float | None = None  # seconds of the whole record
    step_time_s: float | None = None  # seconds per iteration (times `steps` when built)
    rate: float | None = None  # samples/s
    samples: float | None = None  # samples covered, when the line says so itself
    info: dict[str, float] = field(default_factory=dict)  # other numbers a source keeps
    # figures the line prints about its own iterations (a throughput, TFLOP/s), by name: kept in
    # ParseResult.reported beside dlperf's own figure, never used for the records
    reported: dict[str, float] = field(default_factory=dict)
    repeats: bool = False  # may repeat the previous line's counter (one more iteration run)


def collect(
    logs: Sequence[Path | str],
    claim: re.Pattern[str],
    read: Callable[[Line], Row | None],
    notes: list[str],
    other: Callable[[Line], None] | None = None,
    copies: int = 1,
) -> list[Row]:
    """Rows of every line matching `claim` (a progress line's prefix) read by `read`; `copies`:
    how many times the source prints each progress line into a log (ROW_LIMIT counts them all).

    `read` raises Unreadable for a claimed line it cannot read: that is a ParseError at file:line,
    except for a file's last line cut off without a newline (a killed run), which is skipped with a
    note (even when it happens to parse: its last number may be cut short). Lines not claimed go
    to `other` (headers, companion lines) or are skipped as noise.
    """
    rows: list[Row] = []
    limit = ROW_LIMIT.get()
    limit = None if limit is None else limit * copies
    per_file: Counter[int] = Counter()
    for line in read_lines(logs):
        if limit is not None and per_file[line.file_index] >= limit:
            continue  # this file has given every row the window can reach: none is kept
        if not claim.match(line.text):
            if other is not None:
                other(line)
            continue
        if line.partial:
            notes.append(
                f"{line.path}:{line.lineno}: skipped the last line, cut off without a newline"
            )
            continue
        try:
            row = read(line)
        except Unreadable as err:
            raise ParseError(
                f"unreadable progress line ({err}): {line.text[:160]!r}", line.path, line.lineno
            ) from None
        if row is not None:
            rows.append(row)
            per_file[line.file_index] += 1
    return rows


# At most this many progress rows of one log are kept (None: all): set by the adapter around a
# parse for the tables, from the iterations the window needs and the ranks that may print into a
# log (every row covers at least one iteration of one rank), so memory is bounded by the window,
# not by the log's length (issue 20.14).
ROW_LIMIT: ContextVar[int | None] = ContextVar("ROW_LIMIT", default=None)


@contextmanager
def rows_for(iterations: int | None, ranks: int) -> Iterator[None]:
    """Parses inside keep the rows `iterations` of `ranks` ranks can need, with a margin (the
    interval before the window, a first line that is no interval); None: every row."""
    token = ROW_LIMIT.set(None if iterations is None else (iterations + 2) * ranks + 2)
    try:
        yield
    finally:
        ROW_LIMIT.reset(token)


def match(pattern: re.Pattern[str], line: Line, what: str) -> re.Match[str]:
    m = pattern.match(line.text)
    if not m:
        raise Unreadable(f"expected {what}")
    return m


def header_values(line: Line, into: dict[str, str]) -> None:
    """Collect OneFlow-style `key = value` header lines (first value of each key wins)."""
    m = re.fullmatch(r"(\w+) = (\S+)", line.text)
    if m:
        into.setdefault(m[1], m[2])


def logged_int(values: dict[str, str], key: str) -> int | None:
    try:
        return int(values[key])
    except (KeyError, ValueError):
        return None


def prefer_log(name: str, logged: int | None, fact: int, notes: list[str]) -> int:
    """The log's value where it states one (noting a disagreement with the run facts)."""
    if logged is None:
        return fact
    if logged != fact:
        notes.append(
            f"the log says {name} = {logged} but the run facts say {fact}; using the log's"
        )
    return logged


def stamps_or(rows: list[Row], fallback: Method, notes: list[str], what: str) -> Method:
    """TIMESTAMPS from the lines' logging prefixes when every line has one, else `fallback`."""
    stamped = [row for row in rows if row.line.stamp is not None]
    if rows and len(stamped) == len(rows):
        for row in rows:
            row.time_s = row.line.stamp
        notes.append(f"timed by the logging prefix's timestamps; {what} ignored")
        return Method.TIMESTAMPS
    if stamped:
        bare = next(row.line for row in rows if row.line.stamp is None)
        raise ParseError(
            "some progress lines carry a timestamp prefix and others do not", bare.path, bare.lineno
        )
    notes.append(f"no timestamp prefix on the progress lines: using {what}")
    return fallback
