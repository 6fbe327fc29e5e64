"""What a GPU proof found (proof.json; proof.md: dlperf.gpuproof.proofmd), from the tables, the raw logs
and the references.

- The built-in figure against its plain loop: the cell's median over the reference's throughput.
- The measurement checked on the device's clock: per run, samples in the window over the window's
  time on CUDA events (the workload's `device_s=` at each step's end) against the same window on
  the host's timestamps, which the tables use.
- The GPU's facts as the run saw them (its `dlperf-config` line and the node's nvidia-smi), the
  `batch_size: max` searches, the issue's targets, and every case not done with why.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from dlperf import logline
from dlperf.defaults import suite_default
from dlperf.launch.record import RunRecord
from dlperf.matrix import Cell
from dlperf.measure.efficiency import CELL_FIGURE_COLUMNS
from dlperf.parse.records import ParseError
from dlperf.paths import ResultPaths
from dlperf.status import Status


@dataclass
class Stage:
    """One case of the suite: what became of it."""

    number: int  # 1-based, as in the suite file
    case: dict[str, Any]
    cells: list[str]
    state: str = "pending"  # done, stopped (budget), not_run (why), failed (Snakemake's exit)
    detail: str = ""
    seconds: float = 0.0
    reference: dict[str, Any] | None = None


# The issues' bar for one H100 (NVIDIA's PyTorch RN50 AMP on an A100-80GB: 2,470 img/s); GPT's
# is torchtitan's published Llama MFU on H100s without Float8 (33-39%), its low end.
TARGETS = {
    "resnet50_amp_samples_per_s": 3600.0,
    "resnet50_amp_vs_reference": 1.0,
    "bert_base_amp_mfu_pct": 45.0,
    "gpt_amp_mfu_pct": 33.0,
}
DEVICE_CLOCK_TOLERANCE_PCT = 1.0
CELL_FIGURES = [
    "status",
    "statuses",
    "batch_size_resolved",
    "throughput_median",
    "throughput_cv",
    "flags",  # what weakens the figure (dlperf.measure.runflags): a target is not judged on it
    *CELL_FIGURE_COLUMNS,
]


def run_outcomes(results: Path, cells: list[str]) -> list[dict[str, str]]:
    """Each run of these cells that has ended: cell, run, status and why (its manifest's detail)."""
    outcomes = []
    for cell in cells:
        for manifest in sorted((results / "runs" / cell).glob("r*/manifest.json")):
            try:
                record = RunRecord.read(manifest)
                status, detail = str(record.status), record.status_detail
            except ParseError as err:
                status, detail = str(Status.PARSE_ERROR), str(err)
            run = manifest.parent.name
            outcomes.append({"cell": cell, "run": run, "status": status, "detail": detail})
    return outcomes


def run_statuses(results: Path, cells: list[str]) -> str:
    """`ok:3 oom:1` over the manifests of these cells' runs (what the progress line says)."""
    counts: dict[str, int] = {}
    for outcome in run_outcomes(results, cells):
        counts[outcome["status"]] = counts.get(outcome["status"], 0) + 1
    return " ".join(f"{k}:{v}" for k, v in sorted(counts.items()))


def runs_not_ok(results: Path, cells: list[str]) -> list[dict[str, str]]:
    """The runs of these cells that ended other than ok, each with why: a case Snakemake ran to
    the end may have measured nothing (its runs failed), and the proof must say so."""
    return [o for o in run_outcomes(results, cells) if o["status"] != Status.OK]


def suite_window(suite: dict[str, Any]) -> tuple[int, int]:
    """(warmup, measure) steps of a suite as written: a key left out is the schema's default."""
    window = suite.get("window", {})
    warmup, measure = (
        int(window.get(k, suite_default("window", k))) for k in ("warmup", "measure")
    )
    return warmup, measure


def build(
    results: Path,
    stages: list[Stage],
    facts: dict[str, Any],
    suite: dict[str, Any],
    report_state: str,
) -> dict[str, Any]:
    paths = ResultPaths(results)
    cells = _cells(paths)
    warmup, measure = suite_window(suite)
    proof: dict[str, Any] = {
        "suite": suite.get("name"),
        "window": {"warmup": warmup, "measure": measure},
        "report": report_state,
        "node": {k: facts.get(k) for k in ("host", "gpus", "cuda_driver_version", "cpu_model")},
        "topology": facts.get("topology"),
        "versions": _versions(paths, [c for s in stages for c in s.cells]),
        "cases": [],
    }
    for stage in stages:
        entry: dict[str, Any] = {
            "number": stage.number,
            "cells": {cell: cells.get(cell, {"status": Status.MISSING}) for cell in stage.cells},
            "state": stage.state,
            "detail": stage.detail,
            "seconds": round(stage.seconds, 1),
        }
        if stage.reference is not None:
            entry["reference"] = stage.reference
            entry["vs_reference"] = _vs_reference(stage.reference, entry["cells"])
        entry["device_clock"] = [
            check
            for cell in stage.cells
            for check in device_clock_checks(paths, cell, warmup, measure)
        ]
        failed_runs = runs_not_ok(results, stage.cells)
        if failed_runs:
            entry["runs_not_ok"] = failed_runs
        skipped = [s for cell in stage.cells for s in cuda_graph_skips(paths, cell)]
        if skipped:
            entry["cuda_graphs_skipped"] = skipped
        searches = {
            cell: _search(paths, cell)
            for cell in stage.cells
            if Cell.parse(cell).batch_size == "max"
        }
        if searches:
            entry["max_batch"] = searches
        proof["cases"].append(entry)
    proof["targets"] = targets(proof)
    return proof


def _cells(paths: ResultPaths) -> dict[str, dict[str, Any]]:
    if not paths.cells.exists():
        return {}
    table = pd.read_csv(paths.cells, sep="\t")
    columns = [c for c in CELL_FIGURES if c in table.columns]
    return {row["cell_id"]: {k: _plain(row[k]) for k in columns} for _, row in table.iterrows()}


def _plain(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    return value.item() if hasattr(value, "item") else value


def _versions(paths: ResultPaths, cells: list[str]) -> dict[str, str]:
    """The framework, CUDA, cuDNN, NCCL and GPU a built-in run stated in its config line."""
    for cell in cells:
        for log in sorted((paths.root / "runs" / cell).glob("r*/rank0.log")):
            for line in log.read_text(errors="replace").splitlines():
                parsed = logline.parse_line(line)
                if parsed and parsed[0] == logline.CONFIG and "cuda" in parsed[1]:
                    keys = ("gpu", "torch", "cuda", "cudnn", "nccl", "device", "amp_dtype")
                    return {k: parsed[1][k] for k in keys if k in parsed[1]} | {"from": str(log)}
    return {}


def _vs_reference(reference: dict[str, Any], cells: dict[str, Any]) -> dict[str, Any]:
    if reference.get("status") != Status.OK:
        return {"ratio": None, "detail": f"reference {reference.get('status')}"}
    for cell, row in cells.items():
        median = row.get("throughput_median")
        if median:
            ratio = median / reference["throughput_samples_per_s"]
            return {"cell": cell, "ratio": float(f"{ratio:.4g}")}  # 4 significant digits
    return {"ratio": None, "detail": "the built-in cell has no median"}


def device_clock_checks(
    paths: ResultPaths, cell: str, warmup: int, measure: int
) -> list[dict[str, Any]]:
    """Per run: the window's throughput on host timestamps and on the device's clock."""
    checks = []
    for log in sorted((paths.root / "runs" / cell).glob("r*/rank0.log")):
        steps = [
            fields
            for kind, fields in filter(
                None, map(logline.parse_line, log.read_text(errors="replace").splitlines())
            )
            if kind == logline.STEP
        ]
        if len(steps) < warmup + measure + 1 or "device_s" not in steps[-1] or warmup < 1:
            continue
        before, last = steps[warmup - 1], steps[warmup + measure - 1]
        samples = sum(float(s["samples"]) for s in steps[warmup : warmup + measure])
        host_s = float(last["end"]) - float(before["end"])
        device_s = float(last["device_s"]) - float(before["device_s"])
        difference = 100 * (host_s / device_s - 1)
        checks.append(
            {
                "run": log.parent.name,
                "cell": cell,
                "host_samples_per_s": round(samples / host_s, 3),
                "device_samples_per_s": round(samples / device_s, 3),
                "difference_pct": round(difference, 3),
                "within_tolerance": abs(difference) <= DEVICE_CLOCK_TOLERANCE_PCT,
            }
        )
    return checks


def cuda_graph_skips(paths: ResultPaths, cell: str) -> list[dict[str, Any]]:
    """The runs of a cell compiled for CUDA graphs (reduce-overhead) that ran some of the step
    without them: their figure is not the cell's (the workload's `cudagraph_skips=`)."""
    skipped = []
    for log in sorted((paths.root / "runs" / cell).glob("r*/rank0.log")):
        for line in log.read_text(errors="replace").splitlines():
            parsed = logline.parse_line(line)
            if (
                parsed
                and parsed[0] == logline.MEMORY
                and parsed[1].get("cudagraph_skips", "0") != "0"
            ):
                skipped.append(
                    {
                        "run": log.parent.name,
                        "cell": cell,
                        "skips": int(parsed[1]["cudagraph_skips"]),
                    }
                )
    return skipped


def _search(paths: ResultPaths, cell: str) -> dict[str, Any]:
    path = paths.max_batch(cell).result
    if not path.exists():
        return {"status": Status.MISSING}
    found = json.loads(path.read_text())
    return {
        "status": found["status"],
        "batch_size": found.get("batch_size"),
        "detail": found.get("detail", ""),
        "probes": [f"{p['batch_size']}:{p['status']}" for p in found.get("probes", [])],
    }


def targets(proof: dict[str, Any]) -> list[dict[str, Any]]:
    """The issues' bar, each with the figure measured against it (None: not measured) and the
    cell it came from. A flagged cell's figure (a nan loss, a stall) is not judged: met is None
    and its flags are said; a best-cell figure comes from the unflagged cells where there are."""
    rn50 = next(iter(_figures(proof, "throughput_median", model="resnet50", xla=False)), None)
    vs = next(
        (
            (case["vs_reference"]["cell"], case["cells"], case["vs_reference"].get("ratio"))
            for case in proof["cases"]
            if case.get("vs_reference", {}).get("cell")
            and _is(case["vs_reference"]["cell"], model="resnet50")
        ),
        None,
    )
    ratio = None if vs is None else (vs[0], vs[1].get(vs[0], {}), vs[2])
    checks = [  # what, its figure (throughput_median, ratio or mfu_pct), the figure, the bar
        ("ResNet-50 AMP img/s", "throughput_median", rn50, TARGETS["resnet50_amp_samples_per_s"]),
        ("ResNet-50 AMP / plain loop", "ratio", ratio, TARGETS["resnet50_amp_vs_reference"]),
        (
            "BERT-base AMP MFU % (best cell)",
            "mfu_pct",
            _best(_figures(proof, "mfu_pct", model="bert_base")),
            TARGETS["bert_base_amp_mfu_pct"],
        ),
        (
            "GPT (Llama) AMP MFU % (best cell; torchtitan on H100s: 33-39%)",
            "mfu_pct",
            _best(_figures(proof, "mfu_pct", model="gpt")),
            TARGETS["gpt_amp_mfu_pct"],
        ),
    ]
    found = []
    for what, column, figure, bar in checks:
        cell, row, value = (
            figure if figure is not None and figure[2] is not None else ("", {}, None)
        )
        flags = row.get("flags") or ""
        met = None if value is None or flags else value >= bar
        found.append(
            {"what": what, "figure": column, "measured": value, "target": bar, "met": met}
            | {"cell": cell}
            | ({"flags": flags} if flags else {})
        )
    return found


def _figures(
    proof: dict[str, Any], column: str, **wanted: Any
) -> list[tuple[str, dict[str, Any], float]]:
    """(cell, its row, its figure) of the target's cells that have the figure, in case order."""
    return [
        (cell, row, float(row[column]))
        for case in proof["cases"]
        for cell, row in case["cells"].items()
        if _is(cell, **wanted) and row.get(column) is not None
    ]


def _best(
    figures: list[tuple[str, dict[str, Any], float]],
) -> tuple[str, dict[str, Any], float] | None:
    unflagged = [f for f in figures if not f[1].get("flags")]
    return max(unflagged or figures, key=lambda f: f[2], default=None)


def _is(cell_id: str, **wanted: Any) -> bool:
    """A built-in PyTorch AMP cell with these fields (the cells the targets are about)."""
    cell = Cell.parse(cell_id)
    fields = {"framework": "pytorch", "precision": "amp"} | wanted
    return all(getattr(cell, k) == v for k, v in fields.items())
