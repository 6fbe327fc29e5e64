"""Log lines as every upstream parser reads them: the prefixes launchers and loggers put in front
of a line (srun and `[host:rank]` labels, MPI and torchrun tags, absl and logging timestamps)
stripped, the tags and timestamps kept as facts."""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"  # a finite decimal number (no nan/inf)


class Unreadable(Exception):
    """Raised by a source's line reader: the line is claimed but cannot be read."""


MPI_TAG = re.compile(
    r"^\[(?:\d+,)?(\d+)\]<(?:stdout|stderr)>:"
)  # Open MPI --tag-output, horovodrun
TORCHRUN_TAG = re.compile(r"^\[default(\d+)\]:")  # torchrun --tee: the local rank
# A launcher's label on every line of a task's output, only at the very start of the line:
# srun --label's task id, right-aligned where there are ten tasks or more (`0: `, ` 7: `), and
# `[host:rank]: ` (`[node01:0]: `, `[lrdn3321:3]: `). Stripped whatever follows, as the tags
# are: no source's line starts so (OneFlow's `[rank:0] iter:` has no colon after the bracket).
# Its number is not kept as a rank: srun's is the global rank where srun starts every process,
# the node's where it starts one torchrun per node (`0: [default3]: `, the torchrun tag then
# giving the local rank), and `[host:rank]`'s may be either (the log does not say which launcher
# printed it): a rank is still read from the line itself, an MPI or torchrun tag, or the line's
# place in its file (ranks.split_ranks), never from a label.
LAUNCHER_LABEL = re.compile(r"^(?: *\d+|\[[A-Za-z0-9][\w.-]*:\d+\]): ")
ABSL = re.compile(r"^[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{6})\s+\d+\s+[^\]\s]+\]\s?")
ASCTIME = re.compile(
    r"^(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)[,.](\d{3,6})"
    r"(?:\s*[:\-]?\s*(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\s*[:\-]\s?|\s+)"
)
LOGGER = re.compile(r"^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[A-Za-z_][\w.]*:")  # INFO:root:
ABSL_BASE_YEAR = 2000  # absl prints no year; a leap year, and only differences matter


@dataclass(frozen=True)
class Line:
    """One log line with its prefixes stripped and what they said."""

    path: str
    lineno: int  # 1-based
    text: str  # without prefixes, stripped
    file_index: int  # position of the file in the logs list
    tag_rank: int | None = None  # global rank from an MPI/Horovod tag
    local_rank: int | None = None  # local rank from a torchrun tag
    stamp: float | None = None  # epoch seconds from a logging/absl prefix (naive, read as UTC)
    partial: bool = False  # the file's last line, cut off without a newline


def read_lines(logs: Sequence[Path | str]) -> Iterator[Line]:
    for index, path in enumerate(logs):
        year, last_month = ABSL_BASE_YEAR, 0
        with open(path, errors="replace") as f:
            for lineno, raw in enumerate(f, 1):
                text = raw.rstrip("\n").rstrip("\r")
                if m := LAUNCHER_LABEL.match(text):
                    text = text[m.end() :].lstrip()
                tag = local = None
                stamp: float | None = None
                while True:
                    if m := MPI_TAG.match(text):
                        tag = int(m[1])
                    elif m := TORCHRUN_TAG.match(text):
                        local = int(m[1])
                    elif m := ABSL.match(text):
                        month = int(m[1])
                        if month < last_month:  # December to January: the year rolled over
                            year += 1
                        last_month = month
                        stamp = _epoch(year, month, *map(int, m.groups()[1:5])) + int(m[6]) / 1e6
                    elif m := ASCTIME.match(text):
                        stamp = _epoch(*map(int, m.groups()[:6])) + float("0." + m[7])
                    elif m := LOGGER.match(text):
                        pass
                    else:
                        break
                    text = text[m.end() :].lstrip()
                yield Line(
                    str(path),
                    lineno,
                    text.strip(),
                    index,
                    tag,
                    local,
                    stamp,
                    not raw.endswith("\n"),
                )


def _epoch(year: int, month: int, day: int, hour: int, minute: int, second: int) -> float:
    return float(calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0)))


def stamp_of(text: str) -> float:
    """Epoch seconds of `YYYY-MM-DD HH:MM:SS[.,]ffffff` (naive, read as UTC; differences only)."""
    m = re.fullmatch(r"(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,6}))?", text)
    if not m:
        raise Unreadable(f"not a timestamp: {text!r}")
    return _epoch(*map(int, m.groups()[:6])) + (float("0." + m[7]) if m[7] else 0.0)
