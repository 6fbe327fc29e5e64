"""Whether a finished run's logs speak for it: every launched rank in its own log, a window
inside the workload's life (that the manifest is its folder's run: dlperf.launch.record). Each
failed check is a ParseError
naming the file, which makes the run a parse_error (dlperf.measure.runs), never a figure."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from dlperf.measure.stats import RunThroughput
from dlperf.parse.records import ParseError, ParseResult

if TYPE_CHECKING:  # an annotation only: parsing does not import the launch side at run time
    from dlperf.launch.taskoutcome import TaskOutcome

# A window lies inside its process's life: on the log's timestamps it cannot take longer than the
# workload's wall time the harness measured on a monotonic clock (plus this much slack).
WINDOW_WALL_SLACK = (0.02, 1.0)  # relative, seconds


def check_window_within_wall_time(
    result: RunThroughput, workload_wall_s: float | None, logs: list[Path]
) -> None:
    """A wall clock stepped forward inside the window (NTP, a VM resumed) makes a throughput of
    nothing: the window then outlasts the process that logged it."""
    if not workload_wall_s:
        return
    relative, seconds = WINDOW_WALL_SLACK
    if result.window_time_s > workload_wall_s * (1 + relative) + seconds:
        raise ParseError(
            f"the window takes {result.window_time_s:.6g} s on the logged timestamps but the "
            f"workload ran {workload_wall_s:.6g} s (monotonic): the clock the steps were "
            f"stamped with jumped ({result.trace})"
        )


def check_every_rank_reported(
    parsed: ParseResult, logs: list[Path], per_node: bool, ranks: list[int] | None = None
) -> None:
    """A run is measured only when its logs speak for every process it launched.

    No step records at all names every log. For one process per device (the built-in
    workloads), a rank log without step records names that log: the figure of the other ranks
    alone would be a fraction of the real throughput, shown as ok. So does a log whose steps are
    another rank's (`ranks[i]` launched `logs[i]`): one rank's log copied over another's.
    (Per-node launchers may print from node 0 only; their parsers check their own lines.)
    """
    if not parsed.records:
        names = ", ".join(str(p) for p in logs) or "(no logs)"
        raise ParseError(f"no step records in {names}")
    if per_node or all(r.rank < 0 for r in parsed.records):
        return
    reporting = {r.path for r in parsed.records}
    for i, path in enumerate(logs):
        spoken = {r.rank for r in parsed.records if r.path == str(path)}
        if ranks is not None and spoken and spoken != {ranks[i]}:
            raise ParseError(
                f"this log of rank {ranks[i]} holds the steps of rank(s) "
                f"{', '.join(map(str, sorted(spoken)))}: a copy of another rank's log?",
                path,
            )
        if str(path) not in reporting:
            raise ParseError(
                f"no step records in this rank's log: {len(reporting)} of {len(logs)} "
                "launched ranks reported steps",
                path,
            )


def check_steps_within_tasks(
    parsed: ParseResult, logs: list[Path], tasks: list[TaskOutcome]
) -> None:
    """Steps stamped on the task's own epoch clock lie within the task's run as the harness timed
    it (`tasks[i]` ran `logs[i]`): a log of another run of the same cell, copied in with its
    fingerprint recomputed, or steps of an earlier run put before the real ones, do not."""
    for path, task in zip(logs, tasks, strict=True):
        began, ended = task.started_at, task.ended_at
        stamps = [
            t for r in parsed.records if r.path == str(path) for t in (r.start_s, r.time_s) if t
        ]
        if began is None or ended is None or not stamps:
            continue
        relative, seconds = WINDOW_WALL_SLACK
        slack = (ended - began) * relative + seconds
        if min(stamps) < began - slack or max(stamps) > ended + slack:
            raise ParseError(
                f"this log's steps are stamped {min(stamps):.6f} to {max(stamps):.6f}, outside its "
                f"task's run ({began:.6f} to {ended:.6f} on the harness's clock): another run's "
                "log, or the clock stepped during the run",
                path,
            )
