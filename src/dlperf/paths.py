"""Every path under results/, computed in one place (the rules, the submitter and the tables)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

# the checkout the package runs from: its Snakefile, config/ and envs/ (an editable install)
WORKFLOW_DIR = Path(__file__).resolve().parents[2]
RESULTS = Path("results")
RUNS = "runs"  # results/runs/CELL/rN: each run's raw logs and manifest
REDO = ".redo"  # results/.redo/CELL/rN: the stamp that redoes a run (RunPaths.redo)


@dataclass(frozen=True)
class RunPaths:
    """Files of one run (cell, repeat): raw logs and the manifest, never rewritten later."""

    cell_id: str
    repeat: int
    root: Path = RESULTS

    @classmethod
    def of_manifest(cls, manifest: Path) -> RunPaths:
        """The run a manifest's folder names (results/runs/CELL/rREPEAT/manifest.json); a folder
        not named so raises ValueError."""
        repeat = manifest.parent.name
        if not (repeat.startswith("r") and repeat[1:].isdigit()):
            raise ValueError(f"{manifest}: not in a run's folder (runs/CELL/rN/)")
        return cls(
            manifest.parent.parent.name, int(repeat[1:]), manifest.parent.parent.parent.parent
        )

    # cached, and built in one call: the workflow asks for 5,000 runs' paths on every dry run
    @cached_property
    def dir(self) -> Path:
        return Path(self.root, RUNS, self.cell_id, f"r{self.repeat}")

    @cached_property
    def manifest(self) -> Path:
        return self.dir / "manifest.json"

    @property
    def submitit(self) -> Path:
        return self.dir / "submitit"

    def task_log(self, task: int, per_node: bool = False) -> Path:
        """Task `task`'s stdout and stderr: one per rank, or one per node for per-node launchers."""
        return self.dir / (f"node{task}.log" if per_node else f"rank{task}.log")

    def measured(self, digest: str) -> Path:
        """An empty file beside the manifest naming the measure the run recorded (its digest):
        whether a run is of the suite's measure is then one stat, not a JSON read."""
        return self.dir / f"measured-{digest}"

    @property
    def redo(self) -> Path:
        """A stamp touched when the run's record is of another measure than the suite's: an
        input of the run newer than its manifest, so it is redone (dlperf.launch.measured)."""
        return Path(self.root, REDO, self.cell_id, f"r{self.repeat}")

    def task_outcome(self, task: int) -> Path:
        return self.dir / f"task{task}.json"

    @property
    def json(self) -> Path:
        """The DDP-benchmark-style JSON of this run (derived; lives outside the raw folder)."""
        return run_json(ResultPaths(self.root).json, self.cell_id, self.repeat)

    @property
    def submitter_log(self) -> Path:
        """The Snakemake job's log: what the submitter said while it waited."""
        return self.root / "logs" / "run_cell" / self.cell_id / f"r{self.repeat}.log"


def run_json(folder: Path, cell_id: str, repeat: int) -> Path:
    """A run's JSON in a folder of them (ResultPaths.json, or the tables rule's output)."""
    return folder / cell_id / f"r{repeat}.json"


@dataclass(frozen=True)
class MaxBatchPaths:
    """Files of one `batch_size: max` cell's search: its result, and its probe runs (each a run
    of the cell at one batch size, with its own logs and manifest)."""

    cell_id: str
    root: Path = RESULTS

    @property
    def result(self) -> Path:
        """The search's outcome (the rule's output, read by every run of the cell)."""
        return self.root / "maxbatch" / f"{self.cell_id}.json"

    @property
    def probes(self) -> Path:
        """The folder of the probe runs, laid out as a results folder of their own."""
        return self.root / "maxbatch" / self.cell_id

    def probe(self, probe_cell_id: str, attempt: int = 1) -> RunPaths:
        """A probe run (attempt 1), or the confirmation of the size found (attempt 2)."""
        return RunPaths(probe_cell_id, attempt, self.probes)

    @property
    def log(self) -> Path:
        return self.root / "logs" / "find_max_batch" / f"{self.cell_id}.log"

    @property
    def redo(self) -> Path:
        """A stamp touched when the result was searched with other params than the suite's: an
        input of the search newer than its result, so it is redone (dlperf.util.stamp_inputs)."""
        return self.root / REDO / "maxbatch" / self.cell_id


@dataclass(frozen=True)
class ResultPaths:
    """The derived files of a results folder: tables, per-run JSON, plots, reports, logs."""

    root: Path = RESULTS

    @classmethod
    def of_report(cls, report: Path) -> ResultPaths:
        """The results folder a report lies in (ROOT/report/report.LANG.FMT, as `report` names
        it); any other path raises ValueError."""
        parts = report.name.split(".")
        if len(parts) == 3 and len(report.parents) > 1:
            results = cls(report.parents[1])
            if results.report(parts[1], parts[2]) == report:
                return results
        raise ValueError(f"{report}: not a results folder's report (report/report.LANG.FMT)")

    @classmethod
    def of_cells(cls, cells: Path) -> ResultPaths:
        """The results folder a cells table lies in (ROOT/tables/cells.tsv, as `cells` names it);
        any other path raises ValueError."""
        if len(cells.parents) > 1 and cls(cells.parents[1]).cells == cells:
            return cls(cells.parents[1])
        raise ValueError(f"{cells}: not a results folder's cells table (tables/cells.tsv)")

    @property
    def tables(self) -> Path:
        return self.root / "tables"

    @property
    def steps(self) -> Path:
        return self.tables / "steps.tsv.gz"

    @property
    def runs(self) -> Path:
        return self.tables / "runs.tsv"

    @property
    def cells(self) -> Path:
        return self.tables / "cells.tsv"

    @property
    def json(self) -> Path:
        return self.root / "json"

    @property
    def plots(self) -> Path:
        return self.root / "plots"

    def report(self, lang: str, fmt: str) -> Path:
        return self.root / "report" / f"report.{lang}.{fmt}"

    def reports(self) -> list[Path]:
        """The reports there are, in every language and format."""
        return sorted((self.root / "report").glob("report.*.*"))

    def rule_log(self, rule: str) -> Path:
        return self.root / "logs" / f"{rule}.log"

    def remake(self, rule: str) -> Path:
        """A stamp touched when the rule's output stands but was made with other params: an
        input newer than the output, so it is remade (dlperf.util.stamp_inputs)."""
        return self.root / REDO / "rules" / rule

    def made(self, rule: str, digest: str) -> Path:
        """An empty file saying the rule's outputs were made with the params of this digest
        (dlperf.campaign.Campaign.made_marker)."""
        return self.root / ".made" / f"{rule}-{digest}"

    def run(self, cell_id: str, repeat: int) -> RunPaths:
        return RunPaths(cell_id, repeat, self.root)

    def cells_on_disk(self) -> set[str]:
        """The cells with a folder of runs or of redo stamps: one listing of each, where asking
        each of 5,000 runs would be two stats a run on every dry run."""
        cells: set[str] = set()
        for folder in (self.root / RUNS, self.root / REDO):
            try:
                cells.update(entry.name for entry in os.scandir(folder) if entry.is_dir())
            except (FileNotFoundError, NotADirectoryError):
                pass
        return cells

    def run_manifests(self) -> list[Path]:
        """The manifests of every run in the folder, sorted (cell, then repeat as text)."""
        return sorted(self.root.glob(f"{RUNS}/*/r*/manifest.json"))  # RunPaths.manifest's shape

    def max_batch(self, cell_id: str) -> MaxBatchPaths:
        return MaxBatchPaths(cell_id, self.root)

    def repeat_decision(self, cell_id: str, runs: int | str) -> Path:
        """Adaptive repeats: whether `cell_id` needs a run after its first `runs` (a checkpoint)."""
        return self.root / "repeats" / cell_id / f"after_r{runs}.json"

    def adaptive_runs(self, cell_id: str) -> Path:
        """Adaptive repeats: every run `cell_id` got, once its decisions said no more."""
        return self.root / "repeats" / cell_id / "runs.json"


# Wildcard patterns of the per-run files, for the rules (the same shapes as RunPaths builds).
RUN_MANIFEST_PATTERN = str(RunPaths("{cell}", 0).dir.parent / "r{repeat}" / "manifest.json")
RUN_LOG_PATTERN = str(RESULTS / "logs" / "run_cell" / "{cell}" / "r{repeat}.log")
MAX_BATCH_RESULT_PATTERN = str(MaxBatchPaths("{cell}").result)
MAX_BATCH_LOG_PATTERN = str(MaxBatchPaths("{cell}").log)
REPEAT_DECISION_PATTERN = str(ResultPaths().repeat_decision("{cell}", "{runs}"))
REPEAT_DECISION_LOG_PATTERN = str(ResultPaths().rule_log("repeat_decision/{cell}/after_r{runs}"))
ADAPTIVE_RUNS_PATTERN = str(ResultPaths().adaptive_runs("{cell}"))
ADAPTIVE_RUNS_LOG_PATTERN = str(ResultPaths().rule_log("adaptive_runs/{cell}"))
