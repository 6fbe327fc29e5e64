"""Running the repository's workflow from a test, in a scratch directory."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]


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
    """Jobs a dry run would execute: rule -> wildcard strings (the run_cell_* rules as run_cell)."""
    out = snakemake(workdir, "-n", "--cores", "2", *args).stdout
    jobs: dict[str, list[str]] = {}
    for block in re.split(r"\n(?=(?:local)?rule )", out):
        match = re.match(r"(?:local)?rule (\w+):", block)
        if match:
            wildcards = re.search(r"wildcards: (.*)", block)
            rule = "run_cell" if match[1].startswith("run_cell_") else match[1]
            jobs.setdefault(rule, []).append(wildcards[1] if wildcards else "")
    return jobs
