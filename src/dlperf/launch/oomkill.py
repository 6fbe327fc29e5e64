"""Did the kernel's out-of-memory killer end the workload?

A workload that runs out of host memory (a CPU run, a Slurm job's memory cgroup, a container's
limit) prints nothing: the kernel sends it SIGKILL. Its memory cgroup counts each such kill
(cgroup v2 `memory.events`, v1 `memory.oom_control`: `oom_kill N`), and the workload shares the
task's cgroup, so the task reads the count before and after the workload: a SIGKILL while the
count grew is `oom`, not a crash.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

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
