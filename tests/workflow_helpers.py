"""Running the repository's workflow from a test, in a scratch directory."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
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
    workdir: Path,
    *args: str,
    check: bool = True,
    timeout: float = 600,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess:
    """Run the repository's workflow with `workdir` as working directory (results/ lands there);
    `env`: variables set beside this process's (a copy's, WorkflowCopy.env)."""
    cmd = [*SNAKEMAKE, "-s", str(ROOT / "Snakefile"), *args]
    env = os.environ | {"PYTHONUNBUFFERED": "1"} | (env or {})
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=workdir
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"snakemake failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-6000:]}"
        )
    return proc


def dlperf_check(suite: Path) -> subprocess.CompletedProcess:
    """`dlperf check` of a suite file with the test cluster's site file, from the repository root."""
    return subprocess.run(
        [sys.executable, "-m", "dlperf", "check", str(suite), str(ROOT / "slurm" / "site.yaml")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )


def planned_jobs(
    workdir: Path, *args: str, env: dict[str, str] | None = None
) -> dict[str, list[str]]:
    """Jobs a dry run would execute: rule -> wildcard strings."""
    out = snakemake(workdir, "-n", "--cores", "2", *args, env=env).stdout
    jobs: dict[str, list[str]] = {}
    for block in re.split(r"\n(?=(?:local)?rule )", out):
        match = re.match(r"(?:local)?rule (\w+):", block)
        if match:
            wildcards = re.search(r"wildcards: (.*)", block)
            jobs.setdefault(match[1], []).append(wildcards[1] if wildcards else "")
    return jobs


def copy_workflow(directory: Path) -> Path:
    """A copy of the workflow (Snakefile, rules, envs, config, scripts and its workflow profile)
    whose files a test may edit, e.g. a framework's pins; dlperf itself is still the one
    installed (WorkflowCopy copies it too). Returns its Snakefile."""
    for name in ("rules", "envs", "config", "workflow", "profiles"):
        shutil.copytree(ROOT / name, directory / name)
    shutil.copy2(ROOT / "Snakefile", directory / "Snakefile")
    return directory / "Snakefile"


@dataclass(frozen=True)
class WorkflowCopy:
    """A copy of the workflow and of the dlperf package (src/dlperf) under `root`, laid out as in
    the repository, whose files a test may edit while other tests (another pytest-xdist worker)
    run the repository's own. Its files keep their modification times, and the workloads' code
    digests are of module names and contents (dlperf.workloads.code_digest): runs made by the
    repository's workflow are up to date against the unedited copy. Snakemake and the jobs it
    starts import the copy's dlperf (`env`); the paths of the rules' code inputs are the copy's
    (dlperf.rulecode), so against a copy the rules after the runs are remade once."""

    root: Path

    @classmethod
    def make(cls, root: Path) -> WorkflowCopy:
        copy_workflow(root)
        ignore = shutil.ignore_patterns("__pycache__")
        shutil.copytree(ROOT / "src" / "dlperf", root / "src" / "dlperf", ignore=ignore)
        return cls(root)

    @property
    def env(self) -> dict[str, str]:
        """The copy's dlperf first on PYTHONPATH, for Snakemake and every job it starts."""
        inherited = os.environ.get("PYTHONPATH")
        return {"PYTHONPATH": os.pathsep.join(filter(None, [str(self.root / "src"), inherited]))}

    def snakemake(self, workdir: Path, *args: str, **kwargs: Any) -> subprocess.CompletedProcess:
        """snakemake() of the copy's Snakefile (the last -s given wins) and dlperf."""
        return snakemake(workdir, "-s", str(self.root / "Snakefile"), *args, env=self.env, **kwargs)

    def planned_jobs(self, workdir: Path, *args: str) -> dict[str, list[str]]:
        """planned_jobs() of the copy's Snakefile and dlperf."""
        return planned_jobs(workdir, "-s", str(self.root / "Snakefile"), *args, env=self.env)


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
