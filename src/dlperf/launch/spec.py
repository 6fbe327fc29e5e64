"""RunSpec: everything one run needs on the node, as plain JSON-able data; Harness: where and
how runs are launched."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from dlperf.matrix import Cell
from dlperf.paths import RESULTS, RunPaths

STARTUP_MARGIN_MIN = 5  # a job's time beyond its run's own limit (Harness.job_time_min)


@dataclass(frozen=True)
class Harness:
    """Where and how runs are launched: not part of what is measured, so never a rule param.
    Values come from a validated config (the schema owns the defaults)."""

    backend: str
    site: dict[str, Any]
    time_limit_min: float
    wait_grace_s: float
    local_devices: int = (
        0  # devices the local backend may use: CPUs, or GPUs when it trains on them
    )
    results_root: str = str(RESULTS)

    @property
    def job_time_min(self) -> int:
        """The job's time limit (Slurm's --time), whole minutes: the run's own limit counts from
        the workload's start, and before it come setup lines, a container, imports and the node
        facts, for which the job has STARTUP_MARGIN_MIN more."""
        return math.ceil(self.time_limit_min) + STARTUP_MARGIN_MIN


def harness_json(config: dict[str, Any]) -> str:
    """The harness part of a validated config, as run-cell reads it."""
    keys = ("backend", "site", "time_limit_min", "wait_grace_s")
    return json.dumps({k: config[k] for k in keys}, sort_keys=True)


@dataclass(frozen=True)
class RunSpec:
    cell: Cell
    repeat: int
    adapter: str
    options: dict[str, Any]  # resolved: the adapter's defaults with the case's options over them
    steps: int
    device: str
    time_limit_min: float
    backend: str
    allocation: dict[str, Any]
    results_root: str = str(RESULTS)
    env: dict[str, str] = field(default_factory=dict)
    container: dict[str, Any] | None = None  # site.container (Slurm backend only)
    port: int | None = (
        None  # fixed rendezvous port (local backend); Slurm derives it from the job id
    )
    submitter_pid: int | None = None  # local backend: the run dies with its submitter
    python: str | None = None  # the framework's own interpreter (dlperf.environments); None: ours
    batch_size_resolved: int | None = (
        None  # what a `max` cell's search found (dlperf.plan.maxbatch)
    )

    @property
    def trained_cell(self) -> Cell:
        """The cell as the workload trains it: a `max` cell at the batch size its search found."""
        if self.batch_size_resolved is None:
            return self.cell
        return replace(self.cell, batch_size=self.batch_size_resolved)

    @property
    def paths(self) -> RunPaths:
        return RunPaths(self.cell.id, self.repeat, Path(self.results_root))

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["cell"] = self.cell.key()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSpec:
        return cls(**(data | {"cell": Cell.from_key(data["cell"])}))
