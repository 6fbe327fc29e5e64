"""From rows to StepRecords: the run's facts, which rank printed each row, how many iterations
each row covers; `per_rank_result` and `global_result` are a parser's last step."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path

from dlperf.parse.records import Method, ParseError, ParseResult, StepRecord
from dlperf.parse.upstream.rows import Row


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

    One rank's counters must run on without a gap: a line that repeats the previous counter
    (unless its source repeats it for a skipped update), goes back other than to a new epoch's
    start (at most one usual advance), advances by other than the iterations it says it covers,
    or by more than the usual advance (a line missing between) is a ParseError at that line: a
    repeated, missing or out-of-order line would otherwise shift the window's iterations or time.
    """
    gaps = [
        b.counter - a.counter
        for a, b in zip(rows, rows[1:], strict=False)
        if a.counter is not None and b.counter is not None and b.counter > a.counter
    ]
    usual = Counter(gaps).most_common(1)[0][0] if gaps else 1
    previous: int | None = None
    for row in rows:
        _contiguous(row, previous, usual, len(gaps))
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


def _contiguous(row: Row, previous: int | None, usual: int, advances: int) -> None:
    if previous is None or row.counter is None:
        return
    counter, line = row.counter, row.line
    problem = ""
    if counter == previous:
        if not row.repeats:
            problem = "repeats the previous line's counter"
    elif counter < previous:
        if counter > usual:
            problem = f"goes back from {previous}, not to a new epoch's start"
    elif row.steps is not None and counter - previous != row.steps and not row.repeats:
        problem = (
            f"advances {counter - previous} from the previous line's {previous} but covers "
            f"{row.steps} iteration(s)"
        )
    elif row.steps is None and advances >= 2 and counter - previous > usual:
        problem = (
            f"advances {counter - previous} from the previous line's {previous}, more than the "
            f"log's interval of {usual}: a progress line is missing"
        )
    if problem:
        raise ParseError(
            f"progress counter {counter} {problem} (a repeated, missing or out-of-order line)",
            line.path,
            line.lineno,
        )


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


def _streams(
    logs: Sequence[Path | str], rows: list[Row], facts: RunFacts, what: str
) -> dict[int, list[Row]]:
    """The rows per rank (split_ranks); a ParseError when the logs have none."""
    if not rows:
        first = str(logs[0]) if logs else None
        raise ParseError(f"no {what} lines in {len(logs)} log file(s)", first)
    return split_ranks(rows, facts, len(logs))


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
    streams = _streams(logs, rows, facts, what)
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
    records = build(kept, method, -1, per_step)
    reported = kept_reported(kept, notes)
    return ParseResult(records, method, dedupe_notes(notes), reported)


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
    streams = _streams(logs, rows, facts, what)
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
    reported = kept_reported([row for rank in ranks for row in streams[rank]], notes)
    return ParseResult(records, method, dedupe_notes(notes), reported)


def kept_reported(rows: list[Row], notes: list[str]) -> dict[str, dict[tuple[str, int], float]]:
    """ParseResult.reported of the rows that became records: each name's printed values by the
    record's (path, line), with a note per name; the records never use them."""
    reported: dict[str, dict[tuple[str, int], float]] = {}
    for row in rows:
        for name, value in row.reported.items():
            reported.setdefault(name, {})[row.line.path, row.line.lineno] = value
    for name, values in reported.items():
        low, high = min(values.values()), max(values.values())
        notes.append(
            f"the source's own `{name}` on {len(values)} line(s) ({low:g} to {high:g}), kept "
            f"beside dlperf's figure as reported[{name!r}], never in its place"
        )
    return reported


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
