"""Fixtures for the Slurm tests: the real test cluster (scripts/slurm-test-cluster.sh).

Tests marked `slurm` need the cluster: root and Debian's slurm-wlm + munge. Where it cannot run
they skip, saying how to enable them; under CI (CI=true) they must run, and a skip fails.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest
from slurmtest import CLUSTER_DIR, ENABLE_HINT, SCRIPT, Cluster, cluster_blocker, in_ci


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    """Under CI a skipped `slurm` test is a failure: the Slurm path must be proven there."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if report.skipped and in_ci() and item.get_closest_marker("slurm") is not None:
        report.outcome = "failed"
        report.longrepr = f"slurm test skipped under CI=true: {report.longrepr}"


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[Cluster]:
    """The cluster for the whole session: started here (and stopped after) unless already up."""
    reason = cluster_blocker()
    if reason:
        pytest.skip(f"{reason}; {ENABLE_HINT}")
    env = dict(os.environ)
    env.pop("SLURM_CONF", None)
    env["SLURM_CONF"] = str(CLUSTER_DIR / "etc" / "slurm.conf")
    was_up = (
        subprocess.run(
            [str(SCRIPT), "status", str(CLUSTER_DIR)], capture_output=True, env=env
        ).returncode
        == 0
    )
    start = subprocess.run(
        [str(SCRIPT), "start", str(CLUSTER_DIR)], capture_output=True, text=True, env=env
    )
    if start.returncode != 0:
        pytest.fail(f"test cluster did not start:\n{start.stdout}\n{start.stderr}")
    cluster = Cluster(conf=Path(env["SLURM_CONF"]), env=env)
    cluster.cancel_all()
    yield cluster
    if not was_up:
        subprocess.run([str(SCRIPT), "stop", str(CLUSTER_DIR)], capture_output=True, env=env)


@pytest.fixture
def cluster(slurm_cluster: Cluster) -> Iterator[Cluster]:
    """The cluster with an empty queue and every node usable, before and after the test."""
    slurm_cluster.cancel_all()
    yield slurm_cluster
    slurm_cluster.cancel_all()
    states = slurm_cluster.node_states().items()
    down = [name for name, state in states if state.startswith(("down", "drain", "drng", "fail"))]
    if down:
        slurm_cluster.run(
            "scontrol", "update", f"nodename={','.join(down)}", "state=resume", check=False
        )
