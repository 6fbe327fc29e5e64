"""Every path under results/, computed in one place."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

RESULTS = Path("results")


@dataclass(frozen=True)
class RunPaths:
    """Files of one run (cell, repeat): raw logs and the manifest, never rewritten later."""

    cell_id: str
    repeat: int
    root: Path = RESULTS

    @property
    def dir(self) -> Path:
        return self.root / "runs" / self.cell_id / f"r{self.repeat}"

    @property
    def manifest(self) -> Path:
        return self.dir / "manifest.json"

    @property
    def submitit(self) -> Path:
        return self.dir / "submitit"

    def task_log(self, task: int, per_node: bool = False) -> Path:
        return self.dir / (f"node{task}.log" if per_node else f"rank{task}.log")

    @property
    def json(self) -> Path:
        """The DDP-benchmark-style JSON of this run (derived; lives outside the raw folder)."""
        return self.root / "json" / self.cell_id / f"r{self.repeat}.json"


def manifest_path(cell_id: str, repeat: int, root: Path = RESULTS) -> Path:
    return RunPaths(cell_id, repeat, root).manifest


TABLES = RESULTS / "tables"
STEPS_TABLE = TABLES / "steps.tsv.gz"
RUNS_TABLE = TABLES / "runs.tsv"
CELLS_TABLE = TABLES / "cells.tsv"
PLOTS = RESULTS / "plots"
REPORT = RESULTS / "report"
