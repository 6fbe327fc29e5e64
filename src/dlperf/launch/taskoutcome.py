"""A task's outcome as a run's record keeps it (`tasks[i]`: dlperf.launch.task writes it,
dlperf.launch.outcome adds its log's fingerprint), and the checks of those entries and of the
logs they name. dlperf.launch.record reads a record's tasks through this module."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlperf.jsontypes import conforms, shown, type_name
from dlperf.parse.records import ParseError
from dlperf.status import RUN_STATUSES, Status

# What a later stage reads of each task, by type; `task` and `log` are in every record, the
# others where the record's schema has them.
TASK_FIELDS: dict[str, Any] = {
    "task": int,
    "log": str,
    "status": str,
    "log_bytes": int,
    "log_sha256": str,
    "workload_wall_s": float | None,
    "exit_code": int | None,
    "started_at": float | None,
    "ended_at": float | None,
}
TASK_REQUIRED = ("task", "log")


@dataclass(frozen=True)
class TaskOutcome:
    """One task's outcome as its record states it: `tasks[i]` read as TASK_FIELDS (a field the
    record's schema lacks is None; a record before task statuses is ok)."""

    task: int
    log: str
    status: str = Status.OK
    log_bytes: int | None = None
    log_sha256: str | None = None
    workload_wall_s: float | None = None
    exit_code: int | None = None
    started_at: float | None = None
    ended_at: float | None = None

    @classmethod
    def of(cls, task: dict[str, Any]) -> TaskOutcome:
        return cls(**{k: task[k] for k in TASK_FIELDS if k in task})

    def problem(self, run_status: str) -> str:
        """Why this is no outcome a task of a run of `run_status` can have ('' if it is): an ok
        run has no task that failed, ran out of memory or ended before it started."""
        began, ended = self.started_at, self.ended_at
        if self.status not in RUN_STATUSES:
            return f"status {self.status!r} is not a task's"
        if run_status == Status.OK and self.status != Status.OK:
            return f"status is {self.status}, but the run's is ok"
        if began is not None and ended is not None and ended < began:
            return f"ended ({ended}) before it started ({began})"
        return ""


def mistyped_task(i: int, task: object) -> str:
    """What is wrong with the record's `tasks[i]` as JSON ('tasks[1].workload_wall_s is 'abc',
    not a finite number'): not an object, a required key missing, a value not of its type, a log
    outside the run's own folder; '' if nothing."""
    if not isinstance(task, dict):
        return f"tasks[{i}] is {shown(task)}, not an object"
    for key in TASK_REQUIRED:
        if key not in task:
            return f"tasks[{i}] lacks {key}"
    for key, value in task.items():
        if key in TASK_FIELDS and not conforms(value, TASK_FIELDS[key]):
            return f"tasks[{i}].{key} is {shown(value)}, not {type_name(TASK_FIELDS[key])}"
    if Path(task["log"]).name != task["log"] or task["log"] in ("", ".", ".."):
        return f"tasks[{i}].log {task['log']!r} is not a file of the run's own folder"
    return ""


def log_fingerprint(path: Path) -> dict[str, Any]:
    """A log's size and SHA-256 as its run left it: a log changed afterwards (emptied, or another
    run's copied over it with `cp -p`, its mtime kept) no longer matches (issue 20.1)."""
    digest = hashlib.sha256()
    with open(path, "rb") as log:
        for block in iter(lambda: log.read(1 << 20), b""):
            digest.update(block)
    return {"log_bytes": path.stat().st_size, "log_sha256": digest.hexdigest()}


def check_logs_exist(logs: list[Path]) -> None:
    """Every task's log is there; else a ParseError naming the one that is gone."""
    for path in logs:
        if not path.exists():
            raise ParseError(
                "this task's log is gone (deleted after the run?); delete the run's "
                "manifest to redo the run",
                path,
            )


def check_logs_unchanged(tasks: list[TaskOutcome], logs: list[Path]) -> None:
    """Every task's log (`tasks[i]` ran `logs[i]`) is what its run wrote (size and SHA-256 as
    recorded, where recorded: records before fingerprints have none); else a ParseError naming
    it. Checked after the parse, whose errors name the line at fault: this catches a log that
    parses, but is another run's (copied over it with `cp -p`, its mtime kept)."""
    for task, path in zip(tasks, logs, strict=True):
        if task.log_sha256 is None:
            continue
        now = log_fingerprint(path)
        if now != {"log_bytes": task.log_bytes, "log_sha256": task.log_sha256}:
            raise ParseError(
                f"this log is not the one its run wrote ({now['log_bytes']} bytes now, "
                f"{task.log_bytes} then; its SHA-256 differs): edited or copied over after "
                "the run? Delete the run's manifest to redo the run",
                path,
            )
