"""The status of a run and of a cell: one vocabulary and one severity order for every stage."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum


class Status(StrEnum):
    """What became of a run (and, aggregated, of a cell)."""

    OK = "ok"
    OOM = "oom"
    TIMEOUT = "timeout"
    FAILED = "failed"
    PARSE_ERROR = "parse_error"
    STALE = "stale"  # measured with other parameters than the suite's now (redone next time)
    SKIPPED = "skipped"
    MISSING = "missing"  # a cell none of whose planned runs has a result (cells only)


# Worst first. A run takes its worst task's status; among cells' statuses the tables, the report
# and the submitter all read this one order.
SEVERITY: tuple[Status, ...] = (
    Status.OOM,
    Status.TIMEOUT,
    Status.FAILED,
    Status.PARSE_ERROR,
    Status.STALE,
    Status.SKIPPED,
    Status.MISSING,
    Status.OK,
)
# Statuses a run can have (missing is only ever a cell's).
RUN_STATUSES: tuple[Status, ...] = tuple(s for s in SEVERITY if s is not Status.MISSING)


def severity(status: str) -> int:
    """0 for the worst; unknown words sort after every known status."""
    try:
        return SEVERITY.index(Status(status))
    except ValueError:
        return len(SEVERITY)


def worst(statuses: Iterable[str]) -> Status:
    """The most severe of some task statuses (ok when there are none)."""
    return min((Status(s) for s in statuses), key=severity, default=Status.OK)


def cell_status(counts: Mapping[str, int]) -> Status:
    """A cell's status from its runs' status counts.

    ok if any run gave a figure; else the most frequent status (ties: the more severe), so a cell
    whose runs all ran out of memory reads OOM, and one OOM among failures is not hidden.
    """
    done = {Status(s): n for s, n in counts.items() if n}
    if not done:
        return Status.MISSING
    if done.get(Status.OK):
        return Status.OK
    return max(done, key=lambda s: (done[s], -severity(s)))


def sort_statuses(statuses: Iterable[str]) -> list[str]:
    """Statuses in report order: ok first, then worst first."""
    return sorted(statuses, key=lambda s: (s != Status.OK, severity(s), s))
