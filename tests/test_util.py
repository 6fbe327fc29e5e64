"""The one writer of every dlperf file: atomic, and with the permissions the umask gives."""

from __future__ import annotations

import os
import stat

import pytest

from dlperf.util import atomic_write_json, atomic_write_text


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
