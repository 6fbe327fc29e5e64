"""Out of memory as a failed workload says it, in every framework's words (one catalogue for every
adapter), never a warning that only looks like it; and a workload the kernel's out-of-memory
killer ends (it prints nothing, it gets SIGKILL), read from its memory cgroup's kill count: for
real in a memory cgroup with a small limit (cgroup v1 or v2, as root), and the cgroup lookup on
/proc files as a container and a host show them."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

from dlperf.launch import task
from dlperf.launch.oom import OomKills, is_oom, oom_kill_counter

# Genuine lines, each from its framework's source or a public log
OUT_OF_MEMORY = [
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 79.11 GiB)",
    "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
    "F cudnn_conv.cpp CUDNN_STATUS_ALLOC_FAILED",
    "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Killed. ",
    "ResourceExhaustedError: OOM when allocating tensor with shape[256,64,112,112]",
    "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 8589934592 bytes.",
    "Error: Out of memory error on GPU 0. Cannot allocate 1.2GB memory on GPU 0",
    "MemoryError: (ResourceExhausted) Fail to alloc memory of 205520896 size",
    "mxnet.base.MXNetError: cudaMalloc retry failed: out of memory",
    "mxnet.base.MXNetError: Failed to allocate CPU Memory",
    # MindSpore's GPU runtime (gpu_kernel_runtime.cc, gpu_memory_allocator.cc)
    "RuntimeError: Device(id:0) memory isn't enough and alloc failed, kernel name: "
    "Default/Conv2D-op123, alloc size: 822083584B.",
    "Memory not enough: current free memory size[0] is smaller than required size[241827840B]",
    "Device memory is not enough, run graph failed!",
    "RuntimeError: Allocate output memory failed, alloc node:Default/Conv2D",
    # OneFlow's host allocator (Oneflow-Inc/oneflow#9938)
    "terminate called after throwing an instance of 'oneflow::RuntimeException' "
    "what(): Error: allocate failed",
    "allocate of <3> failed.\nJaxRuntimeError: INTERNAL: YNNPACK operation failed: error",
    "NCCL WARN Cuda failure 'out of memory'",
]
NOT_OUT_OF_MEMORY = [
    # TensorFlow's BFC allocator warns and trains on (tf-pose-estimation#225: the run then died
    # of a NaN, not of memory)
    "2018-06-19 02:49:08.322732: W tensorflow/core/common_runtime/bfc_allocator.cc:219] Allocator "
    "(GPU_0_bfc) ran out of memory trying to allocate 2.19GiB. The caller indicates that this is "
    "not a failure, but may mean that there could be performance gains if more memory were "
    "available.\ntensorflow.python.framework.errors_impl.InvalidArgumentError: Nan in summary "
    "histogram for: loss",
    # gRPC's RESOURCE_EXHAUSTED is a message size
    "grpc: RESOURCE_EXHAUSTED: Received message larger than max (8388608 vs. 4194304)",
    "INTERNAL: YNNPACK operation failed: error",
    "MXNetError: Check failed: assign(&dattr, vec.at(i))",
    "RuntimeError: NCCL error: unhandled system error",
]


@pytest.mark.parametrize("text", OUT_OF_MEMORY)
def test_each_frameworks_out_of_memory_is_recognised(text: str):
    assert is_oom(f"step 3\n{text}\n")


@pytest.mark.parametrize("text", NOT_OUT_OF_MEMORY)
def test_a_warning_or_another_error_is_no_out_of_memory(text: str):
    assert not is_oom(f"step 3\n{text}\n")


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


class GrownCount:
    """A cgroup whose OOM-kill count grew while the workload ran."""

    cgroup = "/sys/fs/cgroup/job_7"

    def grew(self) -> bool:
        return True


KILLED = [sys.executable, "-c", SELF_KILL]
WRAPPERS = {
    "sh -c": ["sh", "-c", f"{shlex.join(KILLED)}; exit $?"],  # exits 128 + 9
    "stop_after": [
        sys.executable,
        "-m",
        "dlperf.adapters.stop_after",
        "--pattern",
        r"step (?P<step>\d+)",
        "--step",
        "9",
        "--",
        *KILLED,
    ],
    "a launcher (torchrun, mpirun)": [  # exits 1 when a worker fails
        sys.executable,
        "-c",
        "import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]) and 1)",
        *KILLED,
    ],
}


@pytest.mark.parametrize("wrapper", WRAPPERS)
def test_a_workload_the_oom_killer_ends_under_a_wrapper_is_oom(monkeypatch, tmp_path, wrapper):
    """Review: only an exit of -9 (SIGKILL) was read against the cgroup's OOM-kill count, but a
    wrapper whose workload the kernel killed exits 137, 1, or (stop_after) 247: such a run was
    `failed`, and a `max` batch search stopped there instead of trying a smaller batch."""
    monkeypatch.setattr(task, "OomKills", SimpleNamespace(now=GrownCount))
    outcome = task.run_workload(WRAPPERS[wrapper], dict(os.environ), tmp_path / "rank0.log", 1.0)
    assert outcome["exit_code"] != 0
    assert outcome["status"] == "oom"
    assert outcome["detail"].startswith(
        "killed by the kernel's out-of-memory killer (memory cgroup /sys/fs/cgroup/job_7"
    )


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
