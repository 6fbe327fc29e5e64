"""The status of a run and of a cell: one vocabulary and one severity order for every stage."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any


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


# Worst first. A run takes its worst task's status (run_status); among cells' statuses the
# tables, the report and the submitter all read this one order.
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


# A timeout that ended over this long after a task failed or ran out of memory hung on that task
# (the ranks left wait in a collective for the one that is gone). Within it, the failure may be
# the timeout's consequence instead: a timed-out workload's kill takes up to 10 s, and nodes'
# clocks differ a little.
HUNG_AFTER_S = 30.0


def run_status(tasks: Iterable[tuple[str, float | None]]) -> Status:
    """A run's status from its tasks' (status, ended_at): the worst of them, but for a timeout
    that came over HUNG_AFTER_S after a task failed or ran out of memory: that failure is the
    run's, its consequence is not (a rank's crash at 95 s, the others' timeouts at the limit).
    The submitter records it and a record is read against it: one rule for both."""
    tasks = list(tasks)
    broken = [e for s, e in tasks if s in (Status.FAILED, Status.OOM) and e is not None]
    hung_after = min(broken) + HUNG_AFTER_S if broken else math.inf
    return worst(
        status
        for status, ended in tasks
        if not (status == Status.TIMEOUT and ended is not None and ended > hung_after)
    )


def timed_out_sooner(status: str, limit_min: Any, time_limit_min: float) -> bool:
    """Whether an outcome (a run's, a search's) is a timeout under a shorter limit than
    `time_limit_min`: it may end otherwise under this one, so it is redone. Any other outcome
    stands whatever the limit (a limit is how a run is launched, not what it measures), and so
    does a timeout whose limit is not known (recorded before limits were)."""
    known = isinstance(limit_min, int | float) and not isinstance(limit_min, bool)
    return status == Status.TIMEOUT and known and limit_min < time_limit_min


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


def statuses_text(counts: Mapping[str, int]) -> str:
    """A cell's runs' status counts as its table's `statuses` field: "ok:1,oom:4"."""
    return ",".join(f"{k}:{v}" for k, v in sorted(counts.items()))


def status_counts(text: object) -> dict[str, int]:
    """statuses_text's counts back ({} for no text; a published table's own words, not of that
    form, count nothing)."""
    parts = text.split(",") if isinstance(text, str) else []
    pairs = (part.strip().partition(":") for part in parts)
    return {status: int(n) for status, _, n in pairs if n.strip().isdigit()}


def sort_statuses(statuses: Iterable[str]) -> list[str]:
    """Statuses in report order: ok first, then worst first."""
    return sorted(statuses, key=lambda s: (s != Status.OK, severity(s), s))
