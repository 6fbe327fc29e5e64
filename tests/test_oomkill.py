"""A workload the kernel's out-of-memory killer ends (it prints nothing, it gets SIGKILL) is `oom`,
read from its memory cgroup's kill count: for real in a memory cgroup with a small limit (cgroup
v1 or v2, as root), and the cgroup lookup on /proc files as a container and a host show them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from dlperf.launch.oomkill import OomKills, oom_kill_counter

LIMIT_BYTES = 128 * 2**20
# the workload: a child that takes 1 GiB, or one that SIGKILLs itself (no OOM)
HOG = "bytearray(2**30); print('survived')"
SELF_KILL = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
# the task, moved into the limited cgroup before it starts the workload as dlperf's task does
TASK = """
import json, sys
from pathlib import Path
from dlperf.launch.task import run_workload
Path(sys.argv[1]).write_text(str(__import__("os").getpid()))
log = Path(sys.argv[2])
outcome = run_workload([sys.executable, "-c", sys.argv[3]], {}, log, 1.0, lambda tail: False)
print(json.dumps(outcome))
"""


def limited_cgroup(tmp_path: Path) -> Path:
    """A child of this process's memory cgroup with a 128 MiB limit, or a skip saying why not."""
    counter = oom_kill_counter()
    if counter is None:
        pytest.skip("no memory cgroup to read here")
    child = counter.parent / f"dlperf-test-{uuid.uuid4().hex[:8]}"
    v2 = counter.name == "memory.events"
    try:
        child.mkdir()
        limit = child / ("memory.max" if v2 else "memory.limit_in_bytes")
        limit.write_text(str(LIMIT_BYTES))
        if v2 and (child / "memory.swap.max").exists():
            (child / "memory.swap.max").write_text("0")
    except OSError as err:
        if child.is_dir():
            child.rmdir()
        pytest.skip(f"cannot make a limited memory cgroup under {counter.parent}: {err}")
    return child


def run_in(cgroup: Path, tmp_path: Path, workload: str) -> dict:
    procs = cgroup / "cgroup.procs"
    proc = subprocess.run(
        [sys.executable, "-c", TASK, str(procs), str(tmp_path / "rank0.log"), workload],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture
def cgroup(tmp_path):
    child = limited_cgroup(tmp_path)
    yield child
    for _ in range(50):  # the task's processes have exited; the kernel frees the cgroup soon after
        try:
            child.rmdir()
            return
        except OSError:
            os.sched_yield()


def test_a_workload_the_oom_killer_ends_is_oom_and_says_so(cgroup, tmp_path):
    outcome = run_in(cgroup, tmp_path, HOG)
    assert outcome["status"] == "oom"
    assert outcome["exit_code"] == -9
    assert outcome["detail"] == (
        f"killed by the kernel's out-of-memory killer (memory cgroup {cgroup}: the job's memory "
        "limit or the node's memory ran out)"
    )


def test_a_sigkill_that_is_no_oom_kill_stays_failed(cgroup, tmp_path):
    outcome = run_in(cgroup, tmp_path, SELF_KILL)
    assert outcome["status"] == "failed"
    assert outcome["detail"] == "killed by SIGKILL (exit code -9); last line: (empty log)"


def fake_proc(tmp_path: Path, cgroup: str, mountinfo: list[str]) -> Path:
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "cgroup").write_text(cgroup)
    (proc / "mountinfo").write_text("\n".join(mountinfo) + "\n")
    return proc


def test_cgroup_v1_memory_counter_under_a_slurm_job(tmp_path):
    mount = tmp_path / "memory"
    job = mount / "slurm/uid_0/job_7/step_0/task_1"
    job.mkdir(parents=True)
    (job / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n")
    proc = fake_proc(
        tmp_path,
        "9:name=systemd:/\n5:cpu,cpuacct:/slurm/uid_0/job_7\n"
        "4:memory:/slurm/uid_0/job_7/step_0/task_1\n0::/\n",
        [
            f"32 31 0:29 / {tmp_path}/cpu rw,relatime - cgroup cgroup rw,cpu,cpuacct",
            f"35 31 0:32 / {mount} rw,relatime - cgroup cgroup rw,memory",
            f"41 31 0:38 / {tmp_path}/unified rw,relatime - cgroup2 cgroup2 rw",
        ],
    )
    assert oom_kill_counter(proc) == job / "memory.oom_control"
    kills = OomKills.now(proc)
    assert kills.count == 3 and not kills.grew()
    (job / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 4\n")
    assert kills.grew()


def test_cgroup_v2_in_a_container_whose_mount_root_is_its_own_cgroup(tmp_path):
    """A container sees its cgroup mounted at /sys/fs/cgroup with root = its path on the host."""
    mount = tmp_path / "cgroup"
    mount.mkdir()
    (mount / "memory.events").write_text("low 0\nhigh 0\nmax 5\noom 1\noom_kill 1\n")
    proc = fake_proc(
        tmp_path,
        "0::/system.slice/docker-ab12.scope\n",
        [f"30 25 0:26 /system.slice/docker-ab12.scope {mount} rw - cgroup2 cgroup2 rw"],
    )
    assert oom_kill_counter(proc) == mount / "memory.events"
    assert OomKills.now(proc).count == 1


def test_no_memory_cgroup_reads_as_no_oom_kill(tmp_path):
    proc = fake_proc(tmp_path, "0::/\n", [])
    kills = OomKills.now(proc)
    assert kills.counter is None and kills.count is None and not kills.grew()
    assert OomKills.now(tmp_path / "absent").counter is None
