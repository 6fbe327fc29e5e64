"""End to end on the real test cluster: `snakemake --profile slurm` over the tiny suite
(config/test-slurm.yaml: 1n1g, 1n2g and 2n1g, 2 repeats, on CPU), then its tables and manifests.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from slurmtest import Cluster, make_workdir, manifests, planned_runs, read_tsv, run_snakemake, suite

pytestmark = pytest.mark.slurm

LAYOUTS = ("1n1g", "1n2g", "2n1g")
CELL = "pytorch.resnet50.fp32.noxla.b4.{layout}"
MISSING = ("", "n/a", "nan", "NaN", "None")


@pytest.fixture(scope="module")
def finished(slurm_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The whole workflow, run once for this module: (working directory, snakemake's output)."""
    slurm_cluster.cancel_all()
    # 6 runs, 10 ranks in all, share the machine's 2 cores: each run gets 10 min (the suite's 3,
    # for seconds of work when idle, is too tight on a loaded machine) and the workflow 15; a
    # working run waits out neither
    workdir = make_workdir(tmp_path_factory.mktemp("e2e"), suite(time_limit_min=10))
    # `--config` on the command line must leave the profile's site (backend: slurm) in force
    proc = run_snakemake(
        workdir, "--config", "repeats=2", env=slurm_cluster.env, timeout=900, check=False
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"snakemake failed ({proc.returncode}):\n{out[-8000:]}"
    left = slurm_cluster.wait_queue_empty(60)
    assert not left, f"jobs left in the queue after the workflow ended: {left}"
    return workdir, out


def test_every_run_ok_on_slurm(finished: tuple[Path, str]) -> None:
    workdir, _ = finished
    found = manifests(workdir)
    assert sorted(found) == sorted(
        f"{CELL.format(layout=lo)}/r{k}" for lo in LAYOUTS for k in (1, 2)
    )
    for key, manifest in found.items():
        assert manifest["status"] == "ok", (key, manifest["status_detail"])
        assert manifest["backend"] == "slurm", key
        assert manifest["job_id"].isdigit(), key


def test_cells_table(finished: tuple[Path, str]) -> None:
    workdir, _ = finished
    cells = {row["layout"]: row for row in read_tsv(workdir / "results" / "tables" / "cells.tsv")}
    assert sorted(cells) == sorted(LAYOUTS)
    for layout, row in cells.items():
        assert row["status"] == "ok" and row["runs_ok"] == "2", (layout, row)
        for column in (
            "throughput_median",
            "throughput_min",
            "throughput_max",
            "speedup",
            "efficiency",
        ):
            assert row[column] not in MISSING, (layout, column, row[column])
            assert float(row[column]) > 0, (layout, column)
        assert row["speedup_baseline_cell"] == CELL.format(layout="1n1g")
    assert math.isclose(float(cells["1n1g"]["speedup"]), 1.0)
    for layout in ("1n2g", "2n1g"):
        speedup, efficiency = float(cells[layout]["speedup"]), float(cells[layout]["efficiency"])
        assert math.isclose(efficiency, speedup / 2, rel_tol=1e-3), layout
    runs = read_tsv(workdir / "results" / "tables" / "runs.tsv")
    assert len(runs) == 6
    for row in runs:
        assert row["status"] == "ok" and float(row["throughput_samples_per_s"]) > 0, row


def test_report_renders_runs_made_on_slurm(finished: tuple[Path, str]) -> None:
    workdir, _ = finished
    for lang in ("en", "zh"):
        for ext in ("md", "html"):
            assert (workdir / "results" / "report" / f"report.{lang}.{ext}").stat().st_size > 0
    text = (workdir / "results" / "report" / "report.en.md").read_text()
    assert "2n1g" in text or "| 2 | 2 |" in text


def _tasks(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted(manifest["tasks"], key=lambda t: t["task"])


@pytest.mark.parametrize("layout,nodes,per_node", [("2n1g", 2, 1), ("1n2g", 1, 2)])
def test_every_rank_gets_its_place(
    finished: tuple[Path, str], layout: str, nodes: int, per_node: int
) -> None:
    workdir, _ = finished
    for repeat in (1, 2):
        key = f"{CELL.format(layout=layout)}/r{repeat}"
        manifest = manifests(workdir)[key]
        tasks = _tasks(manifest)
        world = nodes * per_node
        assert [t["task"] for t in tasks] == list(range(world)), key
        assert len(manifest["node_names"]) == nodes, manifest["node_names"]
        assert len({t["node"] for t in tasks}) == nodes
        masters = {(t["rendezvous"]["MASTER_ADDR"], t["rendezvous"]["MASTER_PORT"]) for t in tasks}
        assert len(masters) == 1, f"{key}: ranks disagree on the rendezvous {masters}"
        for t in tasks:
            env = t["rendezvous"]
            assert env["RANK"] == str(t["task"]) and env["WORLD_SIZE"] == str(world), (key, env)
            assert env["LOCAL_RANK"] == str(t["task"] % per_node), (key, env)
            assert env["NODE_RANK"] == str(t["task"] // per_node) == str(t["node_rank"]), (key, env)
            log = workdir / "results" / "runs" / key / f"rank{t['task']}.log"
            steps = [
                line for line in log.read_text().splitlines() if line.startswith("dlperf-step ")
            ]
            assert steps and all(f" rank={t['task']} " in line for line in steps), log
        if nodes > 1:
            assert manifest["nodes"] and len(manifest["nodes"]) == nodes  # facts of each node


def test_concurrent_jobs_get_distinct_ports(finished: tuple[Path, str]) -> None:
    workdir, _ = finished
    ports: dict[str, str] = {}
    spans = []
    for manifest in manifests(workdir).values():
        tasks = _tasks(manifest)
        ports[manifest["job_id"]] = tasks[0]["rendezvous"]["MASTER_PORT"]
        spans.append((manifest["started_at"], manifest["ended_at"]))
    assert len(set(ports.values())) == len(ports), ports
    overlapping = sum(1 for a in spans for b in spans if a is not b and a[0] < b[1] and b[0] < a[1])
    assert overlapping > 0, "the runs were expected to run at the same time"


def test_restart_after_completion_has_nothing_to_do(
    finished: tuple[Path, str], slurm_cluster: Cluster
) -> None:
    workdir, _ = finished
    proc = run_snakemake(workdir, "-n", "results/tables/cells.tsv", env=slurm_cluster.env)
    assert planned_runs(proc.stdout) == []
