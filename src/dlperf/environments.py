"""Each framework's own virtual environment, built from its pinned requirements (envs/*.txt).

The frameworks need colliding numpy and protobuf pins, so a built-in workload whose adapter names
`requirements` runs in a virtual environment of its own. The workflow builds it the first time a
run needs it (with uv, under a lock, so two runs never build it twice) in a cache folder keyed by
the requirements' content and the Python version: the same pins give the same folder, so an
environment built again reruns nothing; changing a pin is a new folder. What a run measures
names its environment (`identity_now`, dlperf.launch.measured), so a changed pin or exclude, or
another interpreter, reruns that framework's cells only. A site that provides its own interpreter
(a module, a container's python) names it in `site.environments.python`.

A build that fails (no wheel for this Python, a resolver conflict, a full disk) raises
EnvironmentBuildError with the reason and the build log's path; the run that needed it becomes
`failed` with both, and nothing half-built is left to be mistaken for a ready environment.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlperf.util import atomic_write_json

RECORD = "dlperf-environment.json"  # written last: its presence means the environment is ready
BUILD_TIMEOUT_S = 3600


class EnvironmentBuildError(RuntimeError):
    def __init__(self, name: str, reason: str, log: Path) -> None:
        super().__init__(f"environment {name} failed to build: {reason} (build log: {log})")
        self.reason, self.log = reason, log


@dataclass(frozen=True)
class Environment:
    name: str  # the requirements file's stem, e.g. tensorflow
    requirements: Path
    key: str  # of the pins and the interpreter: same key, same environment
    root: Path  # the virtual environment

    @property
    def excludes(self) -> Path | None:
        """envs/<name>.excludes.txt: requirements the pins' packages declare but never import
        (keras-hub's tensorflow-text drags in TensorFlow), left out of the resolution."""
        path = self.requirements.with_name(f"{self.name}.excludes.txt")
        return path if path.exists() else None

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    @property
    def record_path(self) -> Path:
        return self.root / RECORD

    @property
    def build_log(self) -> Path:  # beside the environment: kept when a failed build is removed
        return self.root.with_name(self.root.name + ".build.log")

    def record(self) -> dict[str, Any] | None:
        try:
            return dict(json.loads(self.record_path.read_text()))
        except (OSError, ValueError):
            return None


def environment_for(
    requirements: Path, cache_root: Path, python: str = sys.executable
) -> Environment:
    """The environment these pins give on this interpreter (not built yet, maybe)."""
    try:
        pins = requirements.read_bytes()
    except OSError as err:
        raise EnvironmentBuildError(
            requirements.stem, f"cannot read {requirements}: {err}", requirements
        ) from None
    digest = hashlib.sha256(pins)
    excludes = requirements.with_name(f"{requirements.stem}.excludes.txt")
    if excludes.exists():
        digest.update(excludes.read_bytes())
    digest.update(f"{interpreter_version(python)} {platform.machine()}".encode())
    key = digest.hexdigest()[:12]
    return Environment(
        requirements.stem, requirements, key, cache_root / f"{requirements.stem}-{key}"
    )


SITE_IDENTITY = "site "  # what starts a site interpreter's identity (the path follows)


def identity(record: dict[str, Any] | None) -> str | None:
    """What tells one environment from another, as a run's measure names it: its key (of the
    pins, their excludes and the interpreter), or the site's interpreter; None: dlperf's own."""
    if record is None:
        return None
    if record.get("key") == "site":
        return f"{SITE_IDENTITY}{record['python']}"
    return str(record.get("key"))


def is_site_interpreter(identity: str) -> bool:
    """An identity (identity()'s) of the site's interpreter, not an environment of dlperf's."""
    return identity.startswith(SITE_IDENTITY)


def identity_now(name: str, requirements: Path, settings: dict[str, Any]) -> str | None:
    """The identity a run in the environment `name` of these pins would record now, without
    building it (`settings`: the suite's site.environments); None where its pins cannot be read
    (the run itself then fails, naming them)."""
    site_python = settings["python"].get(name)
    if site_python:
        return identity({"key": "site", "python": site_python})
    try:
        return environment_for(requirements, Path(settings["root"])).key
    except EnvironmentBuildError:
        return None


def workflow_dir() -> Path:
    """The workflow's folder, where the adapters' `requirements` (envs/*.txt) are: the
    campaign sets DLPERF_WORKFLOW_DIR for every job it starts."""
    return Path(os.environ.get("DLPERF_WORKFLOW_DIR", "."))


def interpreter_version(python: str) -> str:
    if python == sys.executable:
        return platform.python_version()
    out = subprocess.run(
        [python, "-c", "import platform; print(platform.python_version())"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def ensure(env: Environment, python: str = sys.executable) -> dict[str, Any]:
    """The environment's record, building the environment first if it is not ready."""
    ready = env.record()
    if ready is None:
        env.root.parent.mkdir(parents=True, exist_ok=True)
        with _lock(env.root.with_name(env.root.name + ".lock")):
            ready = env.record() or _build(env, python)  # another run may have built it meanwhile
    # where this run finds it (the cache may have been built from another working directory)
    return ready | {"python": str(env.python.absolute())}


@contextmanager
def _lock(path: Path) -> Iterator[None]:
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _build(env: Environment, python: str) -> dict[str, Any]:
    shutil.rmtree(env.root, ignore_errors=True)  # a build that was interrupted half-way
    uv = _uv()
    started = time.time()
    steps = [
        [uv, "venv", "--quiet", "--python", python, str(env.root)],
        [uv, "pip", "install", "--python", str(env.python), "-r", str(env.requirements)]
        + (["--excludes", str(env.excludes)] if env.excludes else []),
    ]
    with open(env.build_log, "w") as log:
        for command in steps:
            log.write(f"$ {' '.join(command)}\n")
            log.flush()
            try:
                done = subprocess.run(
                    command,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    timeout=BUILD_TIMEOUT_S,
                    check=False,
                    env=_uv_env(),
                )
            except subprocess.TimeoutExpired:
                return _failed(env, f"`{command[1]} {command[2]}` ran past {BUILD_TIMEOUT_S} s")
            if done.returncode != 0:
                return _failed(
                    env,
                    f"`uv {command[1]} {command[2]}` exited {done.returncode}: "
                    f"{_last_error(env.build_log)}",
                )
    record = {
        "name": env.name,
        "key": env.key,
        "requirements": str(env.requirements),
        "requirements_sha256": hashlib.sha256(env.requirements.read_bytes()).hexdigest(),
        "python": str(env.python),
        "python_version": interpreter_version(str(env.python)),
        "packages": installed_packages(str(env.python)),
        "built_at": time.time(),
        "build_seconds": round(time.time() - started, 1),
        "build_log": str(env.build_log),
    }
    atomic_write_json(env.record_path, record)
    return record


def _failed(env: Environment, reason: str) -> dict[str, Any]:
    shutil.rmtree(env.root, ignore_errors=True)
    raise EnvironmentBuildError(env.name, reason, env.build_log)


def _last_error(log: Path) -> str:
    lines = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower() or "×" in line]
    return (errors or lines or ["no output"])[-1][:300]


def _uv() -> str:
    """uv from dlperf's own environment (a dependency), else from PATH."""
    beside = Path(sys.executable).with_name("uv")
    found = str(beside) if beside.exists() else shutil.which("uv")
    if not found:
        raise RuntimeError("uv is not installed: `pip install uv` in dlperf's environment")
    return found


def _uv_env() -> dict[str, str]:
    """uv with pip's settings of this machine: its certificates and local wheel folders."""
    env = dict(os.environ)
    cert = env.get("PIP_CERT") or env.get("SSL_CERT_FILE")
    if cert and "SSL_CERT_FILE" not in env:
        env["SSL_CERT_FILE"] = cert
    if env.get("PIP_FIND_LINKS") and "UV_FIND_LINKS" not in env:
        env["UV_FIND_LINKS"] = env["PIP_FIND_LINKS"]
    return env


def installed_packages(python: str) -> dict[str, str]:
    """name -> exact version of everything installed in an interpreter's environment."""
    script = (
        "import importlib.metadata as m, json; "
        "print(json.dumps({d.metadata['Name'].lower(): d.version for d in m.distributions()}))"
    )
    out = subprocess.run([python, "-c", script], capture_output=True, text=True, check=True)
    return dict(sorted(json.loads(out.stdout).items()))


def site_python_record(name: str, python: str) -> dict[str, Any]:
    """The record of an interpreter the site provides (a module's or a container's python). One
    that only exists on the nodes (inside the container, after `module load`) is recorded as such:
    the workload's dlperf-config line still states its framework's versions."""
    record: dict[str, Any] = {"name": name, "key": "site", "requirements": None, "python": python}
    try:
        return record | {
            "python_version": interpreter_version(python),
            "packages": installed_packages(python),
        }
    except (OSError, subprocess.CalledProcessError) as err:
        return record | {
            "python_version": None,
            "packages": {},
            "note": f"not runnable here: {err}",
        }


def dlperf_only_path(cache_root: Path) -> Path:
    """A folder holding only the dlperf package (a link to it), for a framework environment's
    PYTHONPATH: the workloads import dlperf's stdlib-only modules, and putting dlperf's own
    site-packages there would shadow the environment's numpy and protobuf."""
    import dlperf

    return _linked(cache_root / "dlperf-only", "dlperf", Path(dlperf.__file__).resolve().parent)


def _linked(folder: Path, name: str, target: Path) -> Path:
    """`folder` (resolved), holding `name`, a link to `target`."""
    link = folder / name
    if not (link.is_symlink() and link.resolve() == target):
        folder.mkdir(parents=True, exist_ok=True)
        temporary = folder / f".{name}.{os.getpid()}"
        temporary.unlink(missing_ok=True)
        temporary.symlink_to(target)
        temporary.replace(link)  # atomic: a run reading the link never sees it missing
    return folder.resolve()


def python_command_dir(cache_root: Path, python: str = sys.executable) -> Path:
    """A folder where `python` is this interpreter, for the rules' `python -m dlperf`: its own
    folder where its `python` is this one (a virtual environment), else a link to it under
    `cache_root` (a system python3 with no `python` beside it, or another Python's)."""
    here, target = Path(python).parent, Path(python).resolve()
    if (here / "python").exists() and (here / "python").resolve() == target:
        return here
    return _linked(cache_root / "python-command", "python", target)
