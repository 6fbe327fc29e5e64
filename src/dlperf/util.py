"""Small helpers shared by every stage: the one way any file of dlperf is written."""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dlperf.paths import ResultPaths


def rule_logging(smk: Any) -> None:
    """A script rule's logging, into its log file (`smk`: the `snakemake` object)."""
    logging.basicConfig(
        filename=str(smk.log[0]) if smk.log else None,
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(message)s",
        force=True,
    )


def json_digest(data: Any) -> str:
    """12 hex digits of the data's canonical JSON: equal digests, equal data."""
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


def processes_for(threads: int) -> int:
    """Worker processes for a rule given `threads`: at most the CPUs this process may run on."""
    return max(1, min(threads, len(os.sched_getaffinity(0))))


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary name beside `path` to write to; renamed over `path` when the block succeeds.

    No reader ever sees half a file, and a failed write leaves the old file in place. The name is
    this process's and thread's own (no mkstemp: its random names cost a third of writing 5,000
    run JSONs), so the file gets the permissions any new file gets (0666 less the umask).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.unlink(missing_ok=True)  # a dead process's with this pid: its mode may not be ours
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def atomic_write_text(path: Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def atomic_write_json(path: Path, data: Any, indent: int | None = 2) -> None:
    """`indent=None`: one line, by json's C encoder (several times faster than indented output:
    the tables write one JSON per run)."""
    atomic_write_text(path, json.dumps(data, indent=indent, sort_keys=True, default=str) + "\n")


def folder_problem(out: Path) -> str | None:
    """Why files cannot be written into the folder `out`: it, or the first of its parents there
    is, is a file ('is a file', 'is inside F, a file') or is not writable (a read-only file
    system, another user's); None where they can (it is, or can be made, a writable folder)."""
    for folder in (out, *out.parents):  # the first that exists must be a folder
        if folder.exists():
            if not folder.is_dir():
                return "is a file" if folder == out else f"is inside {folder}, a file"
            if not os.access(folder, os.W_OK | os.X_OK):
                read_only = os.statvfs(folder).f_flag & os.ST_RDONLY
                why = "on a read-only file system" if read_only else "this user may not write it"
                return (
                    f"cannot be written ({why})"
                    if folder == out
                    else (f"cannot be made: {folder} cannot be written ({why})")
                )
            return None
    return None


def remove_reports(results: ResultPaths) -> None:
    """Take the reports and plots down: the figures they show are gone (a run being redone,
    tables that failed to build); the next invocation remakes them."""
    for path in results.reports():
        path.unlink(missing_ok=True)
    shutil.rmtree(results.plots, ignore_errors=True)


CONSUMED = "consumed: an input of its output's last remake\n"  # a stamp's first line, once


def modified_ns(path: Path) -> int:
    """A file's modification time; 0 for a missing one."""
    try:
        return path.stat().st_mtime_ns
    except FileNotFoundError:
        return 0


def marker_time_ns(marker: Path) -> int:
    """When a marker was written, as far as it can vouch that nothing changed after it: 0 for a
    time in the future (a clock stepped back, files copied from a host whose clock runs ahead),
    which a change made now could never be newer than. Raises FileNotFoundError."""
    written = marker.stat().st_mtime_ns
    return 0 if written > time.time_ns() else written


def stamp_inputs(stamp: Path, output: Path, stale: bool) -> list[str]:
    """A rule's extra input that remakes `output` when `stale` (made with other params than the
    suite's, by what dlperf records beside it), by the stamp's time and content: Snakemake's own records
    of params live in .snakemake/, which a fresh clone of a results folder, a new machine or
    `rm -rf .snakemake` loses. The stamp is touched now when stale. It is a file, not a rule's
    output (Snakemake does not remake a missing input of an existing output); once a remake
    consumed it (older than the output) it stays an input, since a changed set of inputs would
    remake the output again. A stamp newer than the output that nothing needs was left by a dry
    run of another suite: removed, so that nothing is remade for it, unless a remake had
    consumed it before (its first line says so): then it stays an input, set back to the
    output's time."""
    try:
        stamped: int | None = stamp.stat().st_mtime_ns
    except FileNotFoundError:
        stamped = None
    try:
        made: int | None = output.stat().st_mtime_ns
    except FileNotFoundError:
        made = None
    consumed = stamped is not None and made is not None and stamped <= made
    was_input = consumed or (stamped is not None and _said_consumed(stamp))
    if stale:
        # New content each time, not only a new time: Snakemake skips an input newer than its
        # output whose checksum is the one it recorded when it last made the output, so an empty
        # stamp would remake it once, and never again once .snakemake/ holds its checksum.
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text((CONSUMED if was_input else "") + f"stale at {time.time_ns()}\n")
        return [str(stamp)]
    if stamped is None:
        return []
    if consumed:
        if not _said_consumed(stamp):  # said in the stamp, not only by its time, which a
            stamp.write_bytes(CONSUMED.encode() + stamp.read_bytes())  # copy without mtimes loses
            os.utime(stamp, ns=(stamped, stamped))
        return [str(stamp)]
    if was_input and made is not None:  # a dry run of another suite stamped it: not for us
        os.utime(stamp, ns=(made, made))
        return [str(stamp)]
    stamp.unlink(missing_ok=True)
    return []


def _said_consumed(stamp: Path) -> bool:
    """Whether the stamp's first line says a remake consumed it; read as bytes: a stamp garbled
    on disk (a crash, a bad copy) is then only a stamp that says nothing, not a decode error."""
    return stamp.read_bytes().startswith(CONSUMED.encode())


def is_number(value: Any) -> bool:
    """A finite float or int (not NaN, not None, not a bool)."""
    if isinstance(value, bool) or value is None:
        return False
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False
