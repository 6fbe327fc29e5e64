"""Running the repository's workflow from a test, in a scratch directory."""

from __future__ import annotations

import os
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
