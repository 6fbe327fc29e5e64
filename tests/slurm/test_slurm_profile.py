"""The profile `slurm/` as typed (`snakemake --profile slurm`), in dry runs: no cluster needed.

The test suite has a 2n1g cell, which the local backend refuses ("spans 2 nodes"): a dry run that
plans it proves the profile's site file (backend: slurm) was applied.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from slurmtest import ROOT, SNAKEMAKE, make_workdir, planned_runs, run_snakemake, suite, tiny_case

SITE_YAML = (ROOT / "slurm" / "site.yaml").read_text()


def test_profile_as_typed_plans_every_run_on_slurm(tmp_path: Path) -> None:
    workdir = make_workdir(tmp_path, suite())
    proc = run_snakemake(workdir, "-n")
    runs = planned_runs(proc.stdout)
    assert len(runs) == 3 * 2, proc.stdout[-3000:]
    assert any(".2n1g/" in run for run in runs)


def test_config_on_the_command_line_keeps_the_site(tmp_path: Path) -> None:
    """`--config` drops a profile's `config:` block; the profile's config files stay applied."""
    site = SITE_YAML + "site:\n  nodes_max: 1\n"
    workdir = make_workdir(tmp_path / "limited", suite(), site_yaml=site)
    proc = run_snakemake(workdir, "-n", "--config", "repeats=1", check=False)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "cell pytorch.resnet50.fp32.noxla.b4.2n1g" in out and "nodes_max is 1" in out

    workdir = make_workdir(tmp_path / "real", suite())
    proc = run_snakemake(workdir, "-n", "--config", "repeats=1")
    runs = planned_runs(proc.stdout)
    assert len(runs) == 3, "--config repeats=1 applies"  # and the 2n1g cell is accepted: slurm

    # the control: without the profile the same suite runs locally, which refuses 2n1g
    control = subprocess.run(
        [*SNAKEMAKE, "-s", str(ROOT / "Snakefile"), "-n", "--cores", "1", "--config", "repeats=1"],
        cwd=workdir,
        capture_output=True,
        text=True,
        env=os.environ | {"PYTHONUNBUFFERED": "1"},
        timeout=120,
    )
    assert control.returncode != 0 and "local backend" in control.stdout + control.stderr


def test_oversized_layout_is_refused_before_submission(tmp_path: Path) -> None:
    config = suite(cases=[tiny_case(layouts=["1n1g", "1n16g"])])
    workdir = make_workdir(tmp_path, config)
    proc = run_snakemake(workdir, "-n", check=False)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "cell pytorch.resnet50.fp32.noxla.b4.1n16g" in out and "gpus_per_node_max is 8" in out
    assert not (workdir / "results").exists()
