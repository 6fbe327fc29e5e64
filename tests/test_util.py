"""The one writer of every dlperf file (atomic, with the permissions the umask gives), and the
stamps that remake what was made with other params (stamp_inputs)."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from dlperf.util import atomic_write_json, atomic_write_text, stamp_inputs


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_files_follow_the_umask(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        atomic_write_text(tmp_path / "a.md", "text")
        atomic_write_json(tmp_path / "sub" / "b.json", {"x": 1})
    finally:
        os.umask(old)
    for path in (tmp_path / "a.md", tmp_path / "sub" / "b.json"):
        assert stat.S_IMODE(path.stat().st_mode) == mode


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "m.json"
    atomic_write_text(path, "old")
    with pytest.raises(TypeError):
        atomic_write_json(path, {1j: 2})  # JSON keys must be strings
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["m.json"]


def _written_later(path: Path) -> None:
    """The path written a little later (a job's output after its inputs)."""
    time.sleep(0.01)
    path.write_text(path.read_text() + "x" if path.exists() else "x")


def test_a_dry_run_of_another_suite_leaves_a_consumed_stamp_an_input(tmp_path: Path):
    """A stamp a remake consumed is in the set of inputs Snakemake recorded: a dry run of
    another suite that stamps it again must not make it vanish from that set when the first
    suite comes back (Snakemake: "Set of input files has changed": measured runs redone)."""
    stamp, output = tmp_path / "stamp", tmp_path / "manifest.json"
    _written_later(output)
    assert stamp_inputs(stamp, output, stale=True) == [str(stamp)]  # an option changed
    _written_later(output)  # the run redone
    assert stamp_inputs(stamp, output, stale=False) == [str(stamp)]
    assert stamp_inputs(stamp, output, stale=True) == [str(stamp)]  # another suite's dry run
    assert stamp_inputs(stamp, output, stale=False) == [str(stamp)]  # back: nothing to redo
    assert stamp.stat().st_mtime_ns <= output.stat().st_mtime_ns


def test_a_stamp_no_remake_consumed_is_removed(tmp_path: Path):
    stamp, output = tmp_path / "stamp", tmp_path / "manifest.json"
    _written_later(output)
    assert stamp_inputs(stamp, output, stale=True) == [str(stamp)]  # another suite's dry run
    assert stamp_inputs(stamp, output, stale=False) == []
    assert not stamp.exists() and output.exists()


def test_a_consumed_stamp_stays_an_input_in_a_copy_that_kept_no_mtimes(tmp_path: Path):
    """Review: `cp -r` of a results folder (mtimes not kept) made a consumed stamp newer than its
    run's manifest; the next invocation took it for another suite's dry run and removed it, and
    the changed set of inputs redid every run that had ever been redone by a stamp."""
    stamp, output = tmp_path / "stamp", tmp_path / "manifest.json"
    _written_later(output)
    assert stamp_inputs(stamp, output, stale=True) == [str(stamp)]  # an option changed
    _written_later(output)  # the run redone
    assert stamp_inputs(stamp, output, stale=False) == [str(stamp)]  # consumed
    os.utime(stamp, ns=(time.time_ns() + 10**9,) * 2)  # the copy: written after the manifest
    assert stamp_inputs(stamp, output, stale=False) == [str(stamp)]
    assert stamp.exists()


def test_a_garbled_stamp_is_a_stamp_that_says_nothing(tmp_path: Path):
    """Review: a stamp garbled on disk (bytes that are no UTF-8) ended every dry run in a
    UnicodeDecodeError traceback from the rule that asks for its stamp (rules/tables.smk)."""
    stamp, output = tmp_path / "stamp", tmp_path / "manifest.json"
    _written_later(output)
    stamp.write_bytes(b"\xff\xfe\x00garbled")
    assert stamp_inputs(stamp, output, stale=False) == []  # newer, not consumed: another's
    assert not stamp.exists() and output.exists()
    stamp.write_bytes(b"\xff\xfe\x00garbled")
    assert stamp_inputs(stamp, output, stale=True) == [str(stamp)]
    assert stamp.read_text().startswith("stale at ")
    _written_later(output)  # consumed by the remake: said so, the garbled bytes kept after it
    stamp.write_bytes(b"\xff\xfe\x00garbled")
    os.utime(stamp, ns=(output.stat().st_mtime_ns - 10**6,) * 2)
    assert stamp_inputs(stamp, output, stale=False) == [str(stamp)]
    assert (
        stamp.read_bytes() == b"consumed: an input of its output's last remake\n\xff\xfe\x00garbled"
    )
