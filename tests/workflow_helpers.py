"""Running the repository's workflow from a test, in a scratch directory."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
# the integration tests' suite: the PyTorch workload (dlperf's own environment) at toy sizes
TINY_SUITE = ROOT / "tests" / "data" / "tiny.yaml"


def write_config(directory: Path, config: dict) -> Path:
    path = directory / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def snakemake(
    workdir: Path, *args: str, check: bool = True, timeout: float = 600
) -> subprocess.CompletedProcess:
    """Run the repository's workflow with `workdir` as working directory (results/ lands there)."""
    cmd = [*SNAKEMAKE, "-s", str(ROOT / "Snakefile"), *args]
    env = os.environ | {"PYTHONUNBUFFERED": "1"}
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=workdir
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"snakemake failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-6000:]}"
        )
    return proc


def planned_jobs(workdir: Path, *args: str) -> dict[str, list[str]]:
    """Jobs a dry run would execute: rule -> wildcard strings."""
    out = snakemake(workdir, "-n", "--cores", "2", *args).stdout
    jobs: dict[str, list[str]] = {}
    for block in re.split(r"\n(?=(?:local)?rule )", out):
        match = re.match(r"(?:local)?rule (\w+):", block)
        if match:
            wildcards = re.search(r"wildcards: (.*)", block)
            jobs.setdefault(match[1], []).append(wildcards[1] if wildcards else "")
    return jobs


def copy_workflow(directory: Path) -> Path:
    """A copy of the workflow (Snakefile, rules, envs, config, scripts) whose files a test may edit,
    e.g. a framework's pins; dlperf itself is still the one installed. Returns its Snakefile."""
    for name in ("rules", "envs", "config", "workflow"):
        shutil.copytree(ROOT / name, directory / name)
    shutil.copy(ROOT / "Snakefile", directory / "Snakefile")
    return directory / "Snakefile"


ENVIRONMENTS = ROOT / ".dlperf" / "envs"  # the tests' shared cache of framework environments


def environment_python(requirements: Path) -> str:
    """The interpreter of the environment a requirements file pins (a built-in workload's, an
    upstream trainer's), built as the workflow builds it (dlperf.environments; cached across
    test sessions in ENVIRONMENTS). Skips where it cannot be built, except under CI=true, where
    that is a failure."""
    from dlperf import environments

    env = environments.environment_for(requirements, ENVIRONMENTS)
    try:
        record = environments.ensure(env)
    except environments.EnvironmentBuildError as err:
        if os.environ.get("CI") == "true":
            raise
        import pytest

        pytest.skip(str(err))
    return str(record["python"])


def framework_python(framework: str) -> str:
    """The interpreter of a built-in workload's own environment (environment_python)."""
    requirements = own_requirements(framework)
    assert requirements, f"{framework} runs in dlperf's own environment"
    return environment_python(ROOT / requirements)


def own_requirements(framework: str) -> str | None:
    """The requirements file of a framework's own environment; None where it runs in dlperf's
    own (PyTorch)."""
    from dlperf.adapters import REGISTRY

    return getattr(REGISTRY[framework], "requirements", None)


def framework_param(framework: str, *rest: object) -> Any:
    """pytest.param(framework, *rest), marked `frameworks` where the framework runs in its own
    environment (own_requirements): a per-framework case of a test that runs the workload."""
    import pytest

    marks = [pytest.mark.frameworks] if own_requirements(framework) else []
    return pytest.param(framework, *rest, marks=marks)


def workload_env(**extra: str) -> dict[str, str]:
    """The environment a workload process gets from the harness: no rank variables of this
    process, and only the dlperf package on PYTHONPATH (never dlperf's own site-packages)."""
    from dlperf import environments

    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    return env | {"PYTHONPATH": str(environments.dlperf_only_path(ENVIRONMENTS))} | extra


def free_port() -> int:
    """A port nothing listens on now, chosen by the OS, for a test's rendezvous. (Workloads that
    also use the next few ports, as Paddle's and TensorFlow's do, find those free in practice.)"""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_ranks(
    command: list[str],
    directory: Path,
    world: int = 2,
    env: Callable[..., dict[str, str]] = workload_env,
) -> list[Path]:
    """Run `world` ranks of a workload on this machine as the harness starts them (the rank
    variables, one rendezvous port), assert that every rank exits 0, and return their logs."""
    port = str(free_port())
    logs = [directory / f"rank{rank}.log" for rank in range(world)]
    procs = []
    for rank, log in enumerate(logs):
        ranks = {"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank)}
        rendezvous = {"LOCAL_WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1"}
        with open(log, "w") as out:
            procs.append(
                subprocess.Popen(
                    command,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=env(**ranks, **rendezvous, MASTER_PORT=port),
                )
            )
    codes = [proc.wait(timeout=300) for proc in procs]
    tails = "\n".join(f"--- {log.name}\n{log.read_text()[-2000:]}" for log in logs)
    assert codes == [0] * world, tails
    return logs
