"""Helpers for the Slurm tests: the test cluster's commands and the workflow in a scratch directory.

Every workflow runs in its own scratch directory holding a verbatim copy of the repository's
profile folder `slurm/` and, as `config/config.yaml`, a suite derived from config/test-slurm.yaml,
so `snakemake --profile slurm` is exercised exactly as a user types it.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "slurm-test-cluster.sh"
CLUSTER_DIR = Path(os.environ.get("DLPERF_SLURM_TEST_DIR", ROOT / ".slurm-test"))
TEST_SUITE = ROOT / "config" / "test-slurm.yaml"
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
ENABLE_HINT = (
    "needs the Slurm test cluster: run the tests as root on a machine with "
    "`apt-get install -y slurm-wlm munge` (CI=true makes this a failure instead of a skip)"
)


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def cluster_blocker() -> str | None:
    """Why this machine cannot host the test cluster, or None."""
    if os.geteuid() != 0:
        return "not running as root"
    missing = [
        t for t in ("slurmctld", "slurmd", "munged", "sbatch", "squeue") if not shutil.which(t)
    ]
    if missing:
        return f"{', '.join(missing)} not found"
    return None


@dataclass(frozen=True)
class Cluster:
    conf: Path
    env: dict[str, str]  # os.environ with SLURM_CONF

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """A Slurm command: one that waits out the cluster's MessageTimeout (60 s) still reports."""
        return subprocess.run(
            list(args), env=self.env, capture_output=True, text=True, check=check, timeout=120
        )

    def jobs(self, states: str = "") -> list[dict[str, str]]:
        """Jobs in the queue (pending, running, completing; `states="all"` adds ended ones)."""
        args = ["squeue", "--noheader", "--format=%i|%j|%T|%N"]
        if states:
            args.append(f"--states={states}")
        out = self.run(*args).stdout
        rows = [line.split("|") for line in out.splitlines() if line.strip()]
        return [{"id": r[0], "name": r[1], "state": r[2], "nodes": r[3]} for r in rows]

    def wait_queue_empty(self, timeout: float = 30) -> list[dict[str, str]]:
        """Wait until no job is pending, running or completing; return what is left."""
        deadline = time.time() + timeout
        while True:
            left = self.jobs()
            if not left or time.time() > deadline:
                return left
            time.sleep(0.5)

    def cancel_all(self) -> None:
        ids = [job["id"] for job in self.jobs()]
        if ids:
            self.run("scancel", *ids, check=False)
            self.wait_queue_empty(60)

    def node_states(self) -> dict[str, str]:
        out = self.run("sinfo", "--noheader", "--Node", "--format=%N %t").stdout
        return dict(line.split() for line in sorted(set(out.splitlines())) if line.strip())


def suite(**overrides: Any) -> dict[str, Any]:
    """config/test-slurm.yaml with top-level keys replaced (`cases` replaces the whole list)."""
    config = yaml.safe_load(TEST_SUITE.read_text())
    config.update(copy.deepcopy(overrides))
    return config


def tiny_case(**overrides: Any) -> dict[str, Any]:
    """The test suite's case (tiny ResNet-50), with keys replaced."""
    case = copy.deepcopy(yaml.safe_load(TEST_SUITE.read_text())["cases"][0])
    case.update(overrides)
    return case


def make_workdir(path: Path, config: dict[str, Any], site_yaml: str | None = None) -> Path:
    """A working directory: the real profile folder, copied, and `config` as config/config.yaml."""
    shutil.copytree(ROOT / "slurm", path / "slurm")
    if site_yaml is not None:
        (path / "slurm" / "site.yaml").write_text(site_yaml)
    (path / "config").mkdir(parents=True, exist_ok=True)
    (path / "config" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def snakemake_cmd(*args: str) -> list[str]:
    return [*SNAKEMAKE, "-s", str(ROOT / "Snakefile"), "--profile", "slurm", *args]


def run_snakemake(
    workdir: Path,
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = 300,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """`snakemake --profile slurm ARGS` in `workdir`, as typed there."""
    full_env = (env or dict(os.environ)) | {"PYTHONUNBUFFERED": "1"}
    proc = subprocess.run(
        snakemake_cmd(*args),
        cwd=workdir,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    logs = len(list(workdir.glob("snakemake-*.out")))
    (workdir / f"snakemake-{logs + 1}.out").write_text(
        proc.stdout + proc.stderr
    )  # for post-mortems
    if check and proc.returncode != 0:
        raise AssertionError(
            f"snakemake failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}"
        )
    return proc


def start_snakemake(workdir: Path, *args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    """Snakemake in its own process group, as a terminal's foreground job."""
    log = open(workdir / "snakemake.out", "w")  # noqa: SIM115 (closed with the process)
    return subprocess.Popen(
        snakemake_cmd(*args),
        cwd=workdir,
        env=env | {"PYTHONUNBUFFERED": "1"},
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def stop_group(proc: subprocess.Popen[str], sig: signal.Signals, timeout: float = 60) -> int:
    """Send `sig` to the process group (what Ctrl-C or scancel does); wait for the leader."""
    os.killpg(proc.pid, sig)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.5) -> Any:
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def manifests(workdir: Path) -> dict[str, dict[str, Any]]:
    """`cell_id/rK` -> manifest of every finished run."""
    found = {}
    for path in sorted((workdir / "results" / "runs").glob("*/r*/manifest.json")):
        found[f"{path.parent.parent.name}/{path.parent.name}"] = json.loads(path.read_text())
    return found


def read_tsv(path: Path) -> list[dict[str, str]]:
    lines = path.read_text().splitlines()
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t"), strict=True)) for line in lines[1:] if line]


def planned_runs(output: str) -> list[str]:
    """The manifests the run rule (run_cell) of a dry run plans, from its printed job blocks."""
    runs = []
    block_rule = None
    for line in output.splitlines():
        stripped = line.strip()
        if stripped.startswith(("rule ", "localrule ")):
            block_rule = stripped.split()[1].rstrip(":")
        elif stripped.startswith("output:") and block_rule == "run_cell":
            runs.append(stripped.split(":", 1)[1].split(",")[0].strip())  # the manifest
    return runs
