"""Framework environments: keyed by their pins, built once under a lock, failures with reasons."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from dlperf import environments
from dlperf.environments import EnvironmentBuildError, ensure, environment_for


def pins(tmp_path: Path, text: str, name: str = "fw") -> Path:
    path = tmp_path / "envs" / f"{name}.txt"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


def test_same_pins_same_environment_changed_pin_new_one(tmp_path: Path) -> None:
    a = environment_for(pins(tmp_path, "# nothing\n"), tmp_path / "cache")
    b = environment_for(pins(tmp_path, "# nothing\n"), tmp_path / "cache")
    assert a == b and a.root.name == f"fw-{a.key}"
    c = environment_for(pins(tmp_path, "# nothing, changed\n"), tmp_path / "cache")
    assert c.key != a.key
    (tmp_path / "envs" / "fw.excludes.txt").write_text("tensorflow-text\n")
    d = environment_for(pins(tmp_path, "# nothing, changed\n"), tmp_path / "cache")
    assert d.key != c.key and d.excludes is not None


def test_builds_once_records_exact_versions_and_reuses(tmp_path: Path) -> None:
    env = environment_for(pins(tmp_path, "# no packages: the interpreter alone\n"), tmp_path / "c")
    record = ensure(env)
    assert Path(record["python"]) == env.python and env.python.exists()
    assert record["python_version"] == ".".join(map(str, sys.version_info[:3]))
    assert record["key"] == env.key and record["build_seconds"] >= 0
    assert json.loads(env.record_path.read_text()) == record
    marker = env.root / "marker"
    marker.write_text("kept")
    assert ensure(env) == record and marker.exists()  # not rebuilt
    # the interpreter is the environment's own: none of dlperf's packages are importable there
    probe = subprocess.run([str(env.python), "-c", "import pandas"], capture_output=True)
    assert probe.returncode != 0


def test_concurrent_runs_build_it_once(tmp_path: Path) -> None:
    env = environment_for(pins(tmp_path, "\n"), tmp_path / "c")
    records: list[dict] = []
    threads = [threading.Thread(target=lambda: records.append(ensure(env))) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(records) == 3 and len({r["built_at"] for r in records}) == 1


def test_half_built_environment_is_rebuilt(tmp_path: Path) -> None:
    env = environment_for(pins(tmp_path, "\n"), tmp_path / "c")
    env.root.mkdir(parents=True)
    (env.root / "junk").write_text("an interrupted build")
    ensure(env)
    assert not (env.root / "junk").exists() and env.record() is not None


def test_failed_build_names_reason_and_log_and_leaves_nothing(tmp_path: Path) -> None:
    env = environment_for(
        pins(tmp_path, "dlperf-no-such-package-anywhere==0.0.1\n"), tmp_path / "c"
    )
    with pytest.raises(EnvironmentBuildError) as caught:
        ensure(env)
    message = str(caught.value)
    assert message.startswith("environment fw failed to build: `uv pip install` exited")
    assert str(env.build_log) in message and env.build_log.exists()
    assert "dlperf-no-such-package-anywhere" in env.build_log.read_text()
    assert not env.root.exists() and env.record() is None


def test_unreadable_pins_are_a_build_error(tmp_path: Path) -> None:
    with pytest.raises(EnvironmentBuildError, match="cannot read"):
        environment_for(tmp_path / "envs" / "missing.txt", tmp_path / "c")


def test_dlperf_only_path_holds_dlperf_alone(tmp_path: Path) -> None:
    folder = environments.dlperf_only_path(tmp_path)
    assert [p.name for p in folder.iterdir()] == ["dlperf"]
    assert (folder / "dlperf" / "logline.py").exists()
    assert environments.dlperf_only_path(tmp_path) == folder  # idempotent


def test_a_site_interpreter_is_used_as_is(tmp_path: Path) -> None:
    record = environments.site_python_record("jax", sys.executable)
    assert record["key"] == "site" and record["packages"]["pandas"]
    elsewhere = environments.site_python_record("jax", "/opt/container-only/bin/python")
    assert elsewhere["packages"] == {} and "not runnable here" in elsewhere["note"]


def test_the_rules_python_is_this_interpreter_even_where_only_python3_exists(tmp_path):
    """Review: the rules run `python -m dlperf`; a system python3 with no `python` beside it (a
    GPU machine's image) would fail every run with exit 127."""
    from dlperf.environments import python_command_dir

    system = tmp_path / "usr" / "bin"
    system.mkdir(parents=True)
    (system / "python3.12").write_text("")
    made = python_command_dir(tmp_path / "cache", str(system / "python3.12"))
    assert (made / "python").resolve() == (system / "python3.12").resolve()
    assert python_command_dir(tmp_path / "cache", str(system / "python3.12")) == made  # kept
    (system / "python").write_text("")  # another Python's `python` beside it: not this one
    assert python_command_dir(tmp_path / "cache", str(system / "python3.12")) == made
    (system / "python").unlink()
    (system / "python").symlink_to("python3.12")  # a virtual environment's folder has its own
    assert python_command_dir(tmp_path / "cache", str(system / "python3.12")) == system
