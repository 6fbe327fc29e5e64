"""What every upstream parser shares: run facts, line prefixes, ranks, intervals, records.

A parser reads its logs through `collect`, which strips the prefixes launchers and loggers put in
front of a line, hands each line the source claims (its progress-line shape) to the source's own
reader, and turns an unreadable claimed line into a ParseError naming file:line. `per_rank_result`
and `global_result` then split the rows into ranks, work out how many iterations each row covers
and build the StepRecords.
"""

from __future__ import annotations

import calendar
import re
from collections import Counter
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

from dlperf.parse.records import Method, ParseError, ParseResult, StepRecord

NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"  # a finite decimal number (no nan/inf)


@dataclass(frozen=True)
class RunFacts:
    """The run's shape, from the cell and the launch; what the logs may not say.

    batch_size_per_device: samples (images, sequences) one device processes per logged iteration.
        With gradient accumulation it is the accumulated batch (one optimizer step). Always
        samples, never tokens: a source whose flag counts tokens is converted by its parser.
    world_size: devices (ranks) of the job, nodes * GPUs per node.
    nodes: nodes of the job; per-node launchers write one log per node.
    seq_len: tokens per sequence for language models (None for images).

    Where a log states a value itself (OneFlow's `batch_size_per_device = 128` header, Megatron's
    `global batch size`, HugeCTR's `batch_size`), the parser uses the log's and says so in a note
    when they disagree.
    """

    batch_size_per_device: int
    world_size: int = 1
    nodes: int = 1
    seq_len: int | None = None

    def __post_init__(self) -> None:
        if self.batch_size_per_device < 1 or self.world_size < 1 or self.nodes < 1:
            raise ValueError(f"run facts must be positive: {self}")
        if self.world_size % self.nodes:
            raise ValueError(
                f"world_size {self.world_size} is not a multiple of nodes {self.nodes}"
            )

    @property
    def gpus_per_node(self) -> int:
        return self.world_size // self.nodes

    @property
    def global_batch(self) -> int:
        return self.batch_size_per_device * self.world_size


# ------------------------------------------------------------------------------------- lines

MPI_TAG = re.compile(
    r"^\[(?:\d+,)?(\d+)\]<(?:stdout|stderr)>:"
)  # Open MPI --tag-output, horovodrun
TORCHRUN_TAG = re.compile(r"^\[default(\d+)\]:")  # torchrun --tee: the local rank
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


# -------------------------------------------------------------------------------------- rows


class Unreadable(Exception):
    """Raised by a source's line reader: the line is claimed but cannot be read."""


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


def collect(
    logs: Sequence[Path | str],
    claim: re.Pattern[str],
    read: Callable[[Line], Row | None],
    notes: list[str],
    other: Callable[[Line], None] | None = None,
) -> list[Row]:
    """Rows of every line matching `claim` (a progress line's prefix) read by `read`.

    `read` raises Unreadable for a claimed line it cannot read: that is a ParseError at file:line,
    except for a file's last line cut off without a newline (a killed run), which is skipped with a
    note (even when it happens to parse: its last number may be cut short). Lines not claimed go
    to `other` (headers, companion lines) or are skipped as noise.
    """
    rows: list[Row] = []
    limit = ROW_LIMIT.get()
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


# ------------------------------------------------------------------------------------- ranks


def split_ranks(rows: list[Row], facts: RunFacts, n_files: int) -> dict[int, list[Row]]:
    """Rows per rank: the rank a line names, else its MPI/torchrun tag, else the file's ranks.

    A file holds world_size / n_files ranks (one per rank file, or a node's ranks for per-node
    launchers). Untagged lines of several ranks in one file are told apart by the step they report:
    the k-th copy of a step in a file belongs to the file's k-th rank (rows without a key: by
    order, round robin).
    """
    per_file = facts.world_size // n_files if n_files and facts.world_size % n_files == 0 else 1
    copies: Counter[tuple[int, Hashable]] = Counter()
    order: Counter[int] = Counter()
    streams: dict[int, list[Row]] = {}
    for row in rows:
        line = row.line
        if row.rank is not None:
            rank = row.rank
        elif line.tag_rank is not None:
            rank = line.tag_rank
        elif line.local_rank is not None:
            rank = line.file_index * per_file + line.local_rank
        else:
            if row.key is None:
                slot = order[line.file_index] % per_file
                order[line.file_index] += 1
            else:
                slot = copies[line.file_index, row.key]
                copies[line.file_index, row.key] += 1
            if slot >= per_file:
                raise ParseError(
                    f"step {row.step} appears {slot + 1} times in a file that holds "
                    f"{per_file} rank(s); "
                    "cannot tell the ranks apart (tag the output, e.g. mpirun --tag-output)",
                    line.path,
                    line.lineno,
                )
            rank = line.file_index * per_file + slot
        streams.setdefault(rank, []).append(row)
    return streams


def fill_steps(rows: list[Row], notes: list[str]) -> None:
    """Iterations each row covers, where the line does not say: the counter's advance.

    The first row, and a row after the counter restarts (a new epoch), cover min(counter, the
    usual advance between lines), at least 1.
    """
    gaps = [
        b.counter - a.counter
        for a, b in zip(rows, rows[1:], strict=False)
        if a.counter is not None and b.counter is not None and b.counter > a.counter
    ]
    usual = Counter(gaps).most_common(1)[0][0] if gaps else 1
    previous: int | None = None
    for row in rows:
        if row.steps is None:
            if row.counter is None:
                raise ParseError(
                    "a progress line gives neither its iterations nor a counter",
                    row.line.path,
                    row.line.lineno,
                )
            if previous is not None and row.counter > previous:
                row.steps = row.counter - previous
            else:
                row.steps = max(1, min(row.counter, usual))
                if previous is not None:
                    notes.append(
                        f"{row.line.path}:{row.line.lineno}: the step counter restarted "
                        "(new epoch?); "
                        f"the line is taken to cover {row.steps} iteration(s)"
                    )
        previous = row.counter


def build(rows: list[Row], method: Method, rank: int, samples_per_step: float) -> list[StepRecord]:
    """StepRecords of one rank's rows. Timestamps must not go backwards (a line cut inside its
    trailing timestamp, or clocks stepped back, would make a negative interval)."""
    records = []
    previous: Row | None = None
    for row in rows:
        if method is Method.TIMESTAMPS and previous is not None and row.time_s is not None:
            if previous.time_s is not None and row.time_s < previous.time_s:
                raise ParseError(
                    f"timestamp {row.time_s} is earlier than the previous line's "
                    f"({previous.line.path}:{previous.line.lineno}: {previous.time_s})",
                    row.line.path,
                    row.line.lineno,
                )
        previous = row
        steps = row.steps or 1
        samples = row.samples if row.samples is not None else steps * samples_per_step
        fields: dict[str, float | None] = {}
        if method is Method.TIMESTAMPS:
            fields["time_s"] = row.time_s
        elif method is Method.STEP_TIMES:
            fields["duration_s"] = (
                row.duration_s
                if row.duration_s is not None
                else (row.step_time_s * steps if row.step_time_s is not None else None)
            )
        else:
            fields["rate"] = row.rate
        if any(value is None for value in fields.values()):
            raise ParseError(
                f"progress line lacks what {method} needs", row.line.path, row.line.lineno
            )
        records.append(
            StepRecord(rank, row.step, steps, samples, row.line.path, row.line.lineno, **fields)
        )
    return records


def _fmt_ranks(ranks: Sequence[int]) -> str:
    return (
        ", ".join(map(str, ranks))
        if len(ranks) <= 8
        else f"{ranks[0]}..{ranks[-1]} ({len(ranks)} ranks)"
    )


def _no_rows(logs: Sequence[Path | str], what: str) -> ParseError:
    first = str(logs[0]) if logs else None
    return ParseError(f"no {what} lines in {len(logs)} log file(s)", first)


def global_result(
    logs: Sequence[Path | str],
    rows: list[Row],
    facts: RunFacts,
    method: Method,
    notes: list[str],
    what: str,
    samples_per_step: float | None = None,
    finish: Callable[[list[Row]], None] | None = None,
) -> ParseResult:
    """Records of a source whose lines speak for the whole job (rank -1), one rank's copy only.

    `samples_per_step` is the job's samples per iteration (default: the facts' global batch);
    never multiplied again by the number of ranks that printed. `finish` may adjust the kept rows
    once their iterations are known.
    """
    if not rows:
        raise _no_rows(logs, what)
    streams = split_ranks(rows, facts, len(logs))
    ranks = sorted(streams)
    kept = streams[ranks[0]]
    if len(ranks) > 1:
        notes.append(
            f"the job-wide {what} lines were printed by ranks {_fmt_ranks(ranks)}; "
            f"kept rank {ranks[0]}'s "
            f"({len(kept)} lines), the others repeat them"
        )
    fill_steps(kept, notes)
    if finish is not None:
        finish(kept)
    per_step = facts.global_batch if samples_per_step is None else samples_per_step
    return ParseResult(build(kept, method, -1, per_step), method, dedupe_notes(notes))


def per_rank_result(
    logs: Sequence[Path | str],
    rows: list[Row],
    facts: RunFacts,
    method: Method,
    notes: list[str],
    what: str,
) -> ParseResult:
    """Records of a source whose lines speak for the rank that printed them (its own samples).

    Every rank of the job must have printed: a missing rank would silently lower the sum.
    """
    if not rows:
        raise _no_rows(logs, what)
    streams = split_ranks(rows, facts, len(logs))
    ranks = sorted(streams)
    if ranks != list(range(facts.world_size)):
        missing = sorted(set(range(facts.world_size)) - set(ranks))
        extra = sorted(set(ranks) - set(range(facts.world_size)))
        raise ParseError(
            f"{what} lines are per rank and the job has {facts.world_size} rank(s), but ranks "
            f"{_fmt_ranks(ranks)} printed them (missing: {_fmt_ranks(missing) or 'none'}; "
            f"unexpected: {_fmt_ranks(extra) or 'none'})",
            str(logs[0]),
        )
    notes.append(
        f"per-rank lines of {len(ranks)} rank(s): each record holds its rank's own samples; the "
        "job's figure adds the ranks' samples over the slowest rank's window time"
    )
    records: list[StepRecord] = []
    for rank in ranks:
        fill_steps(streams[rank], notes)
        records += build(streams[rank], method, rank, facts.batch_size_per_device)
    return ParseResult(records, method, dedupe_notes(notes))


def dedupe_notes(notes: list[str], limit: int = 5) -> list[str]:
    """Keep notes short: repeated kinds of note beyond `limit` are counted, not listed."""
    out: list[str] = []
    kinds: Counter[str] = Counter()
    for note in notes:
        kind = re.sub(r"^\S+:\d+: ", "", note)
        kinds[kind] += 1
        if kinds[kind] <= limit:
            out.append(note)
    for kind, count in kinds.items():
        if count > limit:
            out.append(f"... and {count - limit} more: {kind}")
    return out
