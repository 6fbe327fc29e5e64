"""From a layout and an adapter's launcher style to what Slurm (or the local executor) is asked."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from dlperf.adapters.base import Launcher
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


def allocate(cell: Cell, launcher: Launcher, backend: str, site: dict[str, Any]) -> Allocation:
    layout = cell.layout
    if backend == "local" and layout.nodes > 1:
        raise AllocationError(
            f"cell {cell.id}: layout {layout} spans {layout.nodes} nodes; the local backend runs "
            "one node (use `--profile slurm`, or drop the layout from the local suite)"
        )
    if backend == "slurm":
        if layout.nodes > site.get("nodes_max", 64):
            raise AllocationError(
                f"cell {cell.id}: layout {layout} needs {layout.nodes} nodes; site.nodes_max is {site['nodes_max']}"
            )
        if layout.gpus_per_node > site.get("gpus_per_node_max", 8):
            raise AllocationError(
                f"cell {cell.id}: layout {layout} needs {layout.gpus_per_node} GPUs per node; "
                f"site.gpus_per_node_max is {site['gpus_per_node_max']}"
            )
    per_node = launcher is Launcher.PER_NODE
    tasks = 1 if per_node else layout.gpus_per_node
    cpus = int(site.get("cpus_per_task", 1)) * (layout.gpus_per_node if per_node else 1)
    request_gpus = backend == "slurm" and site.get("request_gpus", True)
    return Allocation(
        nodes=layout.nodes,
        tasks_per_node=tasks,
        gpus_per_node=layout.gpus_per_node if request_gpus else 0,
        cpus_per_task=cpus,
        devices_per_node=layout.gpus_per_node,
    )
