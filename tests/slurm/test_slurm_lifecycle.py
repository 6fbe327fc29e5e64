"""What happens to runs on the real test cluster when things go wrong: an interrupted workflow,
a run over its time limit, a node going down. Then a restart redoes only the unfinished runs.

A fast run is the test suite's tiny model at batch 4 on 32x32 images (well under a second per
step); a slow one the same model at batch 128 on 224x224 images (seconds per step, about a minute
in all, 1.7 GB), stopped by each test long before its end.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest
from slurmtest import (
    Cluster,
    make_workdir,
    manifests,
    planned_runs,
    read_tsv,
    run_snakemake,
    start_snakemake,
    stop_group,
    suite,
    tiny_case,
    wait_for,
)

pytestmark = pytest.mark.slurm

FAST = "pytorch.resnet50.fp32.noxla.b4.{layout}"
SLOW = "pytorch.resnet50.fp32.noxla.b128.{layout}"


def slow_case(layouts: list[str]) -> dict[str, Any]:
    case = tiny_case(batch_size=[128], layouts=layouts)
    case["options"]["image_size"] = 224
    return case


def _finished_runs(workdir: Path) -> int:
    return (workdir / "snakemake.out").read_text().count("(Rule: run_cell)")


def _running(cluster: Cluster, marker: str) -> list[dict[str, str]]:
    return [job for job in cluster.jobs() if marker in job["name"] and job["state"] == "RUNNING"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupt_cancels_every_job_and_restart_redoes_only_the_rest(
    cluster: Cluster, tmp_path: Path, sig: signal.Signals
) -> None:
    """Ctrl-C (SIGINT to the foreground process group), or SIGTERM to the whole process tree as
    scancel or systemd send it: every submitted Slurm job is cancelled, nothing is left queued."""
    layouts = ["1n1g", "2n1g"]
    config = suite(
        repeats=1, time_limit_min=3, cases=[tiny_case(layouts=layouts), slow_case(layouts)]
    )
    workdir = make_workdir(tmp_path, config)
    proc = start_snakemake(workdir, env=cluster.env)
    try:
        fast = [f"{FAST.format(layout=lo)}/r1" for lo in ("1n1g", "2n1g")]
        wait_for(lambda: _finished_runs(workdir) >= 2, 180, "Snakemake to record the fast runs")
        assert set(fast) <= set(manifests(workdir))
        wait_for(lambda: len(_running(cluster, ".b128.")) == 2, 60, "both slow runs running")
        code = stop_group(proc, sig, timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code != 0
    left = cluster.wait_queue_empty(60)  # KillWait and the jobs' clean-up: seconds when idle
    assert not left, f"orphaned Slurm jobs after {sig.name}: {left}"
    assert sorted(manifests(workdir)) == sorted(fast), "an interrupted run must leave no manifest"

    # restart: only the interrupted runs are planned
    dry = run_snakemake(workdir, "-n", env=cluster.env)
    assert sorted(planned_runs(dry.stdout)) == sorted(
        f"results/runs/{SLOW.format(layout=lo)}/r1/manifest.json" for lo in ("1n1g", "2n1g")
    )
    if sig is not signal.SIGINT:
        return
    # and for real (a short time limit, which is no rule parameter, so the slow runs time out fast)
    before = {
        key: (workdir / "results" / "runs" / key / "manifest.json").stat().st_mtime_ns
        for key in fast
    }
    run_snakemake(  # about 40 s when idle
        workdir, "--config", "time_limit_min=0.1", "wait_grace_s=30", env=cluster.env, timeout=600
    )
    after = manifests(workdir)
    assert {after[f"{SLOW.format(layout=lo)}/r1"]["status"] for lo in ("1n1g", "2n1g")} == {
        "timeout"
    }
    for key, mtime in before.items():
        assert (workdir / "results" / "runs" / key / "manifest.json").stat().st_mtime_ns == mtime, (
            key
        )
    assert not cluster.wait_queue_empty(60)


def test_a_redo_cancels_the_job_a_killed_snakemake_left_running(
    cluster: Cluster, tmp_path: Path
) -> None:
    """SIGKILL to Snakemake's whole process group (its submitters too: nobody cancels) while a
    run trains, then `--unlock` and a re-run: the redo's job is the run's only one, the earlier
    job no longer trains beside it on the nodes it measures."""
    config = suite(repeats=1, time_limit_min=3, cases=[slow_case(["1n1g"])])
    workdir = make_workdir(tmp_path, config)
    proc = start_snakemake(workdir, env=cluster.env)
    try:
        first = wait_for(lambda: _running(cluster, ".b128."), 90, "the slow run running")[0]
        stop_group(proc, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert [job["id"] for job in _running(cluster, ".b128.")] == [first["id"]]  # orphaned
    run_snakemake(workdir, "--unlock", env=cluster.env)
    redo = start_snakemake(workdir, env=cluster.env)
    try:
        again = wait_for(
            lambda: [j for j in cluster.jobs() if ".b128." in j["name"] and j["id"] != first["id"]],
            90,
            "the redo's job",
        )
        wait_for(
            lambda: first["id"] not in {job["id"] for job in cluster.jobs()}, 60, "the first gone"
        )
        assert [job["id"] for job in cluster.jobs()] == [again[0]["id"]]
    finally:
        stop_group(redo, signal.SIGINT)
    assert not cluster.wait_queue_empty(60)


def test_run_over_its_time_limit_is_a_timeout_and_the_workflow_goes_on(
    cluster: Cluster, tmp_path: Path
) -> None:
    """Not a race on a loaded machine: the fast run takes seconds idle (about 30 s seen under
    load) and has 2.5 min, 5x that; the slow one is 4x the b128 run's minute (batch 256 on
    320x320 images), so it passes the limit idle, and load only slows it further."""
    slower = slow_case(["1n1g"])
    slower["batch_size"] = [256]
    slower["options"]["image_size"] = 320
    config = suite(
        repeats=1,
        time_limit_min=2.5,
        wait_grace_s=30,
        cases=[tiny_case(layouts=["1n1g"]), slower],
    )
    workdir = make_workdir(tmp_path, config)
    run_snakemake(workdir, "results/tables/cells.tsv", env=cluster.env, timeout=600)
    found = manifests(workdir)
    slow_id = "pytorch.resnet50.fp32.noxla.b256.1n1g"  # image size is an option
    slow, fast = found[f"{slow_id}/r1"], found[f"{FAST.format(layout='1n1g')}/r1"]
    assert slow["status"] == "timeout", slow["status_detail"]
    assert "time limit" in slow["status_detail"]
    assert fast["status"] == "ok", fast["status_detail"]
    cells = {row["cell_id"]: row for row in read_tsv(workdir / "results" / "tables" / "cells.tsv")}
    assert cells[slow_id]["status"] == "timeout"
    assert cells[FAST.format(layout="1n1g")]["status"] == "ok"
    assert not cluster.wait_queue_empty(60)


def test_node_down_fails_only_its_run_and_the_workflow_finishes(
    cluster: Cluster, tmp_path: Path
) -> None:
    """A node set DOWN under a running job: that run is recorded as failed (dlperf submits with
    --no-requeue: no second attempt), the runs on other nodes finish, and so does the workflow."""
    config = suite(
        repeats=1,
        time_limit_min=3,
        site={"exclusive": True},  # one run per node
        cases=[tiny_case(layouts=["1n1g", "2n1g"]), slow_case(["1n1g"])],
    )
    workdir = make_workdir(tmp_path, config)
    proc = start_snakemake(workdir, "results/tables/cells.tsv", env=cluster.env)
    try:
        job = wait_for(lambda: _running(cluster, ".b128."), 90, "the slow run running")[0]
        victim = job["nodes"]
        log = workdir / "results" / "runs" / f"{SLOW.format(layout='1n1g')}/r1" / "rank0.log"
        wait_for(
            lambda: log.exists() and "dlperf-config" in log.read_text(), 90, "the slow run training"
        )
        cluster.run("scontrol", "update", f"nodename={victim}", "state=down", "reason=dlperf-test")
        code = proc.wait(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
        cluster.run("scontrol", "update", f"nodename={victim}", "state=resume", check=False)
    out = (workdir / "snakemake.out").read_text()
    assert code == 0, out[-6000:]
    found = manifests(workdir)
    victim_run = found[f"{SLOW.format(layout='1n1g')}/r1"]
    # Slurm kills the job's processes on every node (SIGTERM, then SIGKILL): either the task still
    # reports its killed workload, or it never reports and the job's state NODE_FAIL is the reason
    detail = victim_run["status_detail"]
    assert victim_run["status"] == "failed", detail
    assert "NODE_FAIL" in detail or "exit code -15" in detail or "exit code -9" in detail, detail
    for layout in ("1n1g", "2n1g"):
        other = found[f"{FAST.format(layout=layout)}/r1"]
        assert other["status"] == "ok", (layout, other["status_detail"])
    cells = {
        row["cell_id"]: row["status"]
        for row in read_tsv(workdir / "results" / "tables" / "cells.tsv")
    }
    assert cells[SLOW.format(layout="1n1g")] == "failed"
    assert not cluster.wait_queue_empty(60)
