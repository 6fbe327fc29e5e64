"""Did a workload run out of memory? Its log's words (each framework's runtime says it its own way:
one catalogue for every adapter), or the kernel's out-of-memory killer.

A workload that runs out of host memory (a CPU run, a Slurm job's memory cgroup, a container's
limit) may print nothing: the kernel sends it SIGKILL. Its memory cgroup counts each such kill
(cgroup v2 `memory.events`, v1 `memory.oom_control`: `oom_kill N`), and the workload shares the
task's cgroup, so the task reads the count before and after the workload: a failure while the
count grew is `oom`, not a crash, however a wrapper around the killed process reported it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

OOM_MESSAGES = re.compile(
    "|".join(
        (
            # CUDA's, cuDNN's and cuBLAS's allocators in every framework (PyTorch's
            # torch.OutOfMemoryError "CUDA out of memory", MXNet's "cudaMalloc retry failed: out
            # of memory", Paddle's "Out of memory error on GPU 0", JAX's "Out of memory while
            # trying to allocate", NCCL's "Cuda failure 'out of memory'")
            r"(?i:out of memory)",
            r"OutOfMemoryError",
            r"CUDNN_STATUS_ALLOC_FAILED|CUBLAS_STATUS_ALLOC_FAILED",
            # host memory: Python's MemoryError, C++'s std::bad_alloc, glibc's ENOMEM, a
            # DataLoader worker the kernel's OOM killer ended
            r"MemoryError",
            r"std::bad_alloc",
            r"can't allocate memory",
            r"DataLoader worker \(pid \d+\) is killed by signal: Killed",
            # TensorFlow's allocators (CPU and GPU), XLA's (JAX, TensorFlow with jit_compile)
            r"ResourceExhausted",
            r"OOM when allocating",
            r"RESOURCE_EXHAUSTED",
            # JAX on a CPU: YNNPACK's refused scratch buffer, "allocate of <3> failed." before
            # "INTERNAL: YNNPACK operation failed: error"
            r"allocate of <\d+> failed",
            # Paddle's allocators: "(ResourceExhausted) Fail to alloc memory of 205520896 size"
            r"Fail to alloc memory",
            # MXNet's CPU storage: "Failed to allocate CPU Memory"
            r"Failed to allocate CPU Memory",
            # MindSpore's memory pools: "Allocate output memory failed, alloc node:..." and
            # "malloc memory failed." (CPU), "Device(id:0) memory isn't enough and alloc failed",
            # "Memory not enough: current free memory size[0] is smaller than required size[...]",
            # "Device memory is not enough, run graph failed!" (GPU)
            r"Allocate (output |workspace )?memory failed",
            r"malloc memory failed",
            r"memory isn't enough|[Mm]emory (is )?not enough",
            # OneFlow's host allocator: "what(): Error: allocate failed"
            r"Error: allocate failed",
        )
    )
)

# Lines that say it and are no failure: TensorFlow's and XLA's BFC allocator warns while training
# goes on ("Allocator (GPU_0_bfc) ran out of memory trying to allocate 2.19GiB. The caller
# indicates that this is not a failure, ..."), and gRPC's RESOURCE_EXHAUSTED is a message size
# ("Received message larger than max (...)"), not memory.
NOT_OOM = re.compile(
    r"The caller indicates that this is not a failure|(Received|Sent) message larger than max"
)


def is_oom(text: str) -> bool:
    """Whether a failed workload's log says it ran out of memory (each line on its own)."""
    return any(OOM_MESSAGES.search(line) and not NOT_OOM.search(line) for line in text.splitlines())


PROC = Path("/proc/self")


@dataclass(frozen=True)
class OomKills:
    """Where this process's memory cgroup counts its OOM kills, and the count when read."""

    counter: Path | None
    count: int | None

    @classmethod
    def now(cls, proc: Path = PROC) -> OomKills:
        counter = oom_kill_counter(proc)
        return cls(counter, _read_count(counter))

    def grew(self) -> bool:
        """Whether the OOM killer killed something in this cgroup since the count was read."""
        after = _read_count(self.counter)
        return self.count is not None and after is not None and after > self.count

    @property
    def cgroup(self) -> str:
        return str(self.counter.parent) if self.counter else ""


def oom_kill_counter(proc: Path = PROC) -> Path | None:
    """The file that counts OOM kills in the memory cgroup of `proc`, or None where none can be
    read (no cgroup file system, no memory controller)."""
    try:
        memberships = (proc / "cgroup").read_text().splitlines()
        mounts = (proc / "mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in memberships:  # "hierarchy-id:controllers:path"; v2 is "0::path"
        _, controllers, path = line.split(":", 2)
        v2 = controllers == ""
        if not v2 and "memory" not in controllers.split(","):
            continue
        directory = _mounted(mounts, path, v2)
        name = "memory.events" if v2 else "memory.oom_control"
        if directory is not None and (directory / name).is_file():
            return directory / name
    return None


def _mounted(mounts: list[str], path: str, v2: bool) -> Path | None:
    """Where cgroup `path` appears in this mount namespace (proc(5) mountinfo: field 4 is the
    mount's root within its file system, field 5 its mount point, after ' - ' its type and
    super options)."""
    for line in mounts:
        fields, _, tail = line.partition(" - ")
        parts, kind = fields.split(), tail.split()
        if len(parts) < 5 or len(kind) < 3:
            continue
        root, mount_point, fs_type, options = parts[3], parts[4], kind[0], kind[2].split(",")
        if fs_type != ("cgroup2" if v2 else "cgroup") or (not v2 and "memory" not in options):
            continue
        inside = path if root == "/" else path.removeprefix(root) if path.startswith(root) else None
        if inside is not None:
            return Path(mount_point) / inside.lstrip("/")
    return None


def _read_count(counter: Path | None) -> int | None:
    if counter is None:
        return None
    try:
        for line in counter.read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
    except (OSError, ValueError):
        pass
    return None
