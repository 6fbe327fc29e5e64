"""From a layout and an adapter's launcher style to what Slurm (or the local executor) is asked."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import Any

from dlperf.adapters.base import Launcher
from dlperf.errors import ConfigError
from dlperf.launch.facts import visible_gpus
from dlperf.matrix import Cell


class AllocationError(ValueError):
    """A cell that cannot be placed on this site; the message names the cell."""


@dataclass(frozen=True)
class Allocation:
    nodes: int
    tasks_per_node: int
    gpus_per_node: int  # GPUs requested from the scheduler (0 on CPU-only sites)
    cpus_per_task: int
    devices_per_node: int  # ranks' devices per node (the layout's G), GPUs or CPU processes

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class LocalMachine:
    """What the local backend may place ranks on: one process per device, GPUs or CPUs."""

    devices: int
    kind: str  # "GPUs" or "CPUs"

    @classmethod
    def probe(cls, device: str) -> LocalMachine:
        """GPUs when the workloads train on them (device cuda, or auto with GPUs), else CPUs."""
        gpus = visible_gpus() if device != "cpu" else None
        if gpus:
            return cls(gpus, "GPUs")
        if device == "cuda":
            return cls(0, "GPUs")
        return cls(len(os.sched_getaffinity(0)), "CPUs")


def allocate(
    cell: Cell,
    launcher: Launcher,
    backend: str,
    site: dict[str, Any],
    local: LocalMachine | None = None,
) -> Allocation:
    """What one run of `cell` asks for; AllocationError (naming the cell) where it cannot fit.

    The local backend checks the layout against `local` (this machine) before any job starts:
    a typo such as 1n999g must not start hundreds of rank processes.
    """
    layout = cell.layout
    if backend == "local" and layout.nodes > 1:
        raise AllocationError(
            f"cell {cell.id}: layout {layout} spans {layout.nodes} nodes; the local backend runs "
            "one node (use `--profile slurm`, or drop the layout from the local suite)"
        )
    if backend == "local" and local is not None and layout.gpus_per_node > local.devices:
        raise AllocationError(
            f"cell {cell.id}: layout {layout} runs {layout.gpus_per_node} ranks, one per device; "
            f"this machine has {local.devices} {local.kind} for the local backend "
            "(use a smaller layout, or `--profile slurm`)"
        )
    if backend == "slurm":
        for key in ("nodes_max", "nodes"):  # site.nodes: the campaign's, 0 for as many as needed
            if site[key] and layout.nodes > site[key]:
                raise AllocationError(
                    f"cell {cell.id}: layout {layout} needs {layout.nodes} nodes; "
                    f"site.{key} is {site[key]}"
                )
        # 0: as many as the suite's widest layout needs (a CPU partition, request_gpus false)
        if site["gpus_per_node_max"] and layout.gpus_per_node > site["gpus_per_node_max"]:
            raise AllocationError(
                f"cell {cell.id}: layout {layout} needs {layout.gpus_per_node} GPUs per node; "
                f"site.gpus_per_node_max is {site['gpus_per_node_max']}"
            )
    per_node = launcher is Launcher.PER_NODE
    tasks = 1 if per_node else layout.gpus_per_node
    cpus = int(site["cpus_per_task"]) * (layout.gpus_per_node if per_node else 1)
    # locally, GPUs are handed to the job too: submitit's local executor hides every GPU
    # (CUDA_VISIBLE_DEVICES="") from a job that asks for none
    request_gpus = (backend == "slurm" and site["request_gpus"]) or (
        backend == "local" and local is not None and local.kind == "GPUs"
    )
    return Allocation(
        nodes=layout.nodes,
        tasks_per_node=tasks,
        gpus_per_node=layout.gpus_per_node if request_gpus else 0,
        cpus_per_task=cpus,
        devices_per_node=layout.gpus_per_node,
    )


# sbatch options dlperf sets itself, from the layout, the time limit and the site's own keys:
# submitit lets slurm_additional_parameters replace them, so `site.extra_args` must not name them
SET_BY_DLPERF = {
    **dict.fromkeys(
        (
            "time",
            "nodes",
            "ntasks",
            "ntasks-per-node",
            "cpus-per-task",
            "gpus",
            "gpus-per-node",
            "gres",
            "signal",
            "job-name",
            "output",
            "error",
            "array",
        ),
        "dlperf sets it from the layout and time_limit_min",
    ),  # fmt: skip
    "mem": "set site.mem_gb",
    **{
        key: f"set site.{key}" for key in ("partition", "account", "qos", "constraint", "exclusive")
    },
}


def check_extra_args(site: dict[str, Any]) -> None:
    """A ConfigError naming an extra sbatch option that would replace one dlperf sets (the
    job's --time, its allocation, ...) while the plan and the records assume dlperf's."""
    for key in site["extra_args"]:
        why = SET_BY_DLPERF.get(str(key).lstrip("-").replace("_", "-"))
        if why:
            raise ConfigError(f"site.extra_args.{key}: not an extra option: {why}")
