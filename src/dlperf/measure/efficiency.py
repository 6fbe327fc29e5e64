"""The figures that explain a throughput, per run and per cell: compute efficiency (achieved
TFLOP/s, MFU), memory, energy, and the communication ceiling of the speedup.

Each comes from the workload's own lines (dlperf.parse.facts) and the run's measured window;
`explain_trace` names the lines. A figure without its lines is NaN with the reason where there is
one (energy_detail), never 0. Definitions: dlperf.flops (FLOPs), dlperf.peaks (peaks, MFU) and dlperf.measure.ceiling.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from dlperf import logline, peaks
from dlperf.flops import FlopsFormula
from dlperf.matrix import Cell
from dlperf.measure import ceiling
from dlperf.measure.stats import RunThroughput, Window, window_records
from dlperf.parse.facts import Fact, RunFacts
from dlperf.parse.records import StepRecord
from dlperf.status import Status
from dlperf.util import is_number

NAN = math.nan
RUN_FIGURE_COLUMNS = [
    "flops_per_sample",
    "flops_method",
    "achieved_tflops",  # per device
    "reported_tflops_per_device",  # what the source printed over the window (Megatron-LM), if any
    "peak_tflops",  # per device, the one mfu_pct is against
    "peak_source",
    "peak_measured_tflops",  # the run's own GEMM calibration
    "mfu_pct",
    "peak_mem_mib",  # the largest rank's: allocator peak on a GPU, peak RSS on a CPU
    "peak_rss_mib",
    "device_mem_used_mib",  # NVML, the largest device's
    "energy_j_per_sample",
    "power_w_per_device",
    "energy_detail",
    "busbw_gb_s",
    "comm_bytes",
    "explain_s",  # what the count, calibration and probe cost the run (their lines' `seconds`)
    "explain_trace",
    "tokens_per_sample",  # a language model's sequence (its adapter's): tokens/s = samples/s x it
]
CELL_FIGURE_COLUMNS = [
    "tokens_per_sample",
    "flops_method",  # how its runs got their FLOPs per sample (counted, or which formula)
    "achieved_tflops",
    "mfu_pct",
    "peak_tflops",
    "peak_source",
    "peak_mem_mib",
    "device_mem_used_mib",
    "energy_j_per_sample",
    "power_w_per_device",
    "energy_detail",
    "busbw_gb_s",
    "speedup_ceiling",
    "speedup_ceiling_overlap",
    "ceiling_model",
]
CEILING_MODEL = "no overlap: n t1 / (t1 + 2 (n-1)/n S / busbw), t1 = the 1n1g step time"


def run_figures(
    facts: RunFacts, result: RunThroughput, records: Sequence[StepRecord], window: Window,
    devices: int, formula: FlopsFormula | None = None, hardware: str = "",
) -> dict[str, Any]:  # fmt: skip
    """A run's explaining figures from its facts and its measured window. `formula`: the FLOPs
    per sample by the adapter's formula, for a run whose logs state none (an upstream source);
    `hardware`: the record's (its GPU model gives the nameplate where no log line names one)."""
    row: dict[str, Any] = dict.fromkeys(RUN_FIGURE_COLUMNS, NAN)
    used: list[Fact] = []
    row |= _compute(facts, result, devices, used, formula, hardware)
    row |= _memory(facts, used)
    row |= _energy(facts, records, window, result.window_samples, used)
    comm = facts.first(logline.COMM)
    if comm is not None:
        used.append(comm)
        row["busbw_gb_s"] = comm.number("busbw_gb_s")
        row["comm_bytes"] = comm.number("bytes")
    timed = [f.number("seconds") for f in used if f.kind != logline.POWER]
    if any(t is not None for t in timed):
        row["explain_s"] = sum(t for t in timed if t is not None)
    row["explain_trace"] = ",".join(f.where for f in used if f.kind != logline.POWER) + (
        f",{sum(f.kind == logline.POWER for f in used)} power samples"
        if any(f.kind == logline.POWER for f in used)
        else ""
    )
    return {k: (NAN if v is None else v) for k, v in row.items()}


# How far a calibration GEMM may exceed its GPU's nameplate at the stated precision (boost clocks)
# before the stated precision is taken to be wrong (TF32 products of an "fp32" cell: 7x).
NAMEPLATE_SLACK = 1.2


def _compute(
    facts: RunFacts,
    result: RunThroughput,
    devices: int,
    used: list[Fact],
    formula: FlopsFormula | None,
    hardware: str,
) -> dict:
    stated, peak_line = facts.first(logline.FLOPS), facts.first(logline.PEAK)
    if stated is not None:
        used.append(stated)
        per_sample = stated.number("per_sample") or NAN
        method, math_dtype = stated.fields.get("method", ""), stated.fields.get("math", "fp32")
    elif formula is not None:
        per_sample, method, math_dtype = (
            formula.per_sample,
            f"formula: {formula.method}",
            formula.math,
        )
    else:
        return {}
    achieved = peaks.achieved_tflops(per_sample, result.throughput_samples_per_s) / devices
    row = {"flops_per_sample": per_sample, "flops_method": method, "achieved_tflops": achieved}
    measured = NAN
    gpu = hardware if hardware and ";" not in hardware else "none"  # one model: the nodes'
    if peak_line is not None:
        used.append(peak_line)
        measured = peak_line.number("measured_tflops") or NAN
        named = peak_line.fields.get("gpu", "none").replace("_", " ")
        gpu = gpu if named == logline.UNNAMED_GPU else named
    row["peak_measured_tflops"] = measured
    nameplate = peaks.device_peak(gpu) if gpu != "none" else None
    listed = nameplate.tflops(math_dtype) if nameplate is not None else None
    if nameplate is not None and listed:
        peak, source = listed, f"{nameplate.name} {math_dtype} nameplate"
    elif math.isfinite(measured):
        peak, source = measured, f"measured {math_dtype} GEMM on this device"
    else:
        return row | {"peak_source": "no peak: neither a known GPU nor a calibration"}
    if achieved > peak and not listed:  # the calibration ran slower than training did
        source += " below the achieved rate (the device was busy while it was measured): no MFU"
        return row | {"peak_tflops": peak, "peak_source": source}
    if listed and max(achieved, measured if math.isfinite(measured) else 0) > (
        NAMEPLATE_SLACK * peak
    ):  # a product faster than the nameplate allows ran at another precision than stated
        source += (
            f" below what ran (achieved {achieved:.3g}, calibration {measured:.3g} TFLOP/s): the "
            f"products ran faster than {math_dtype}: no MFU"
        )
        return row | {"peak_tflops": peak, "peak_source": source}
    return row | {"peak_tflops": peak, "peak_source": source, "mfu_pct": 100 * achieved / peak}


def _memory(facts: RunFacts, used: list[Fact]) -> dict:
    lines = facts.of(logline.MEMORY)
    used += lines
    rss = [f.number("peak_rss_mb") for f in lines]
    allocated = [f.number("peak_allocated_mb") for f in lines]
    nvml = [f.number("used_mb") for f in facts.of(logline.POWER)]
    rss_max = max((v for v in rss if v is not None), default=NAN)
    allocated_max = max((v for v in allocated if v is not None), default=NAN)
    return {
        "peak_rss_mib": rss_max,
        "peak_mem_mib": allocated_max if math.isfinite(allocated_max) else rss_max,
        "device_mem_used_mib": max((v for v in nvml if v is not None), default=NAN),
    }


def _energy(
    facts: RunFacts, records: Sequence[StepRecord], window: Window, samples: float,
    used: list[Fact],
) -> dict:  # fmt: skip
    lines = facts.of(logline.POWER)
    no_counter = [f for f in lines if f.fields.get("gpu") == "none"]
    if not lines or no_counter:
        reason = (
            no_counter[0].fields.get("reason", "no power samples")
            if no_counter
            else "no power samples in the logs (the workload does not sample NVML)"
        )
        return {"energy_detail": reason}
    by_rank: dict[int, list[Fact]] = {}
    for f in lines:
        by_rank.setdefault(int(f.fields["rank"]), []).append(f)
    steps: dict[int, list[StepRecord]] = {}
    for r in records:
        steps.setdefault(r.rank, []).append(r)
    joules, watts = 0.0, []
    for rank, rank_records in steps.items():
        span = _window_span(rank_records, window)
        samples_of_rank = by_rank.get(rank, [])
        energy = _energy_in(samples_of_rank, *span) if span else None
        if span is None or energy is None:
            return {"energy_detail": f"rank {rank}: its power samples do not cover the window"}
        used += samples_of_rank
        joules += energy
        watts.append(energy / (span[1] - span[0]))
    method = "NVML energy counter" if all("energy_mj" in f.fields for f in lines) else "NVML power"
    return {
        "energy_j_per_sample": joules / samples,
        "power_w_per_device": float(np.mean(watts)),
        "energy_detail": f"{method} over the measured window, {len(watts)} GPUs",
    }


def _window_span(records: list[StepRecord], window: Window) -> tuple[float, float] | None:
    selected, before = window_records(records, window)
    if not selected or selected[-1].time_s is None:
        return None
    start = records[before].time_s if before >= 0 else selected[0].start_s
    return (start, selected[-1].time_s) if start is not None else None


def _energy_in(samples: list[Fact], start: float, end: float) -> float | None:
    """Joules between start and end: the energy counter interpolated at both ends, else the
    power samples integrated (trapezoid). None unless the samples cover [start, end]."""
    t = np.array([f.number("t") for f in samples], dtype=float)
    if len(t) < 2 or t[0] > start or t[-1] < end:
        return None
    if all("energy_mj" in f.fields for f in samples):
        counter = np.array([f.number("energy_mj") for f in samples], dtype=float) / 1000
        return float(np.interp(end, t, counter) - np.interp(start, t, counter))
    w = np.array([f.number("watts") for f in samples], dtype=float)
    grid = np.concatenate([[start], t[(t > start) & (t < end)], [end]])
    return float(np.trapezoid(np.interp(grid, t, w), grid))


# --- cells ---------------------------------------------------------------------------------------


def cell_figures(ok_runs: pd.DataFrame) -> dict[str, Any]:
    """Medians over a cell's ok runs; the peak's source and energy's detail as the runs say; the
    MFU the median achieved TFLOP/s over the median peak of the runs that have an MFU (with a
    peak each run calibrated, the median of the runs' MFUs would be neither figure's ratio; a run
    whose calibration was slower than its training refused one)."""
    row: dict[str, Any] = {}
    for column in CELL_FIGURE_COLUMNS:
        if column in ("speedup_ceiling", "speedup_ceiling_overlap", "ceiling_model"):
            continue
        values = ok_runs[column] if column in ok_runs else pd.Series(dtype=float)
        if column in ("flops_method", "peak_source", "energy_detail"):
            row[column] = "; ".join(sorted({str(v) for v in values.dropna() if str(v)}))
        else:
            numbers = pd.to_numeric(values, errors="coerce").dropna()
            row[column] = float(numbers.median()) if len(numbers) else NAN
    with_mfu = ok_runs[_numbers(ok_runs, "mfu_pct").notna()]
    if len(with_mfu):  # the cell's MFU is its figures' ratio, as the report states it
        achieved = _numbers(with_mfu, "achieved_tflops").median()
        peak = _numbers(with_mfu, "peak_tflops").median()
        if peak > 0 and math.isfinite(achieved):  # else the runs' own MFUs' median
            row |= {"achieved_tflops": achieved, "peak_tflops": peak}  # of the same runs
            row["mfu_pct"] = 100 * achieved / peak
    return row


def _numbers(frame: pd.DataFrame, column: str) -> pd.Series:
    return pd.to_numeric(frame.get(column, pd.Series(NAN, frame.index)), errors="coerce")


def add_ceiling(cells: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Each multi-device cell's speedup ceiling: its all-reduce (bytes over its own measured
    busbw) added to the 1n1g cell's step time (dlperf.measure.ceiling, both models); none where
    the cell has no speedup (add_speedup: no 1n1g figure, or other work than the 1n1g cell's)."""
    cells = cells.copy()
    by_id = cells.set_index("cell_id")
    bytes_of = (
        runs[runs["status"] == Status.OK].groupby("cell_id")["comm_bytes"].median()
        if "comm_bytes" in runs and len(runs)
        else pd.Series(dtype=float)
    )
    no_overlap, overlap, model = [], [], []
    for row in cells.to_dict("records"):
        values = _ceiling(row, by_id, bytes_of)
        no_overlap.append(values[0])
        overlap.append(values[1])
        model.append(CEILING_MODEL if math.isfinite(values[0]) else "")
    cells["speedup_ceiling"] = no_overlap
    cells["speedup_ceiling_overlap"] = overlap
    cells["ceiling_model"] = model
    return cells


def _ceiling(row: dict[str, Any], by_id: pd.DataFrame, bytes_of: pd.Series) -> tuple[float, float]:
    n, busbw = int(row["devices"]), row.get("busbw_gb_s", NAN)
    base = Cell.parse(row["cell_id"]).baseline.id
    if n < 2 or not is_number(busbw) or base not in by_id.index or row["cell_id"] not in bytes_of:
        return NAN, NAN
    if not is_number(row.get("speedup")):  # no ceiling of a speedup it has not (other work)
        return NAN, NAN
    base_row = by_id.loc[base]
    base_throughput, batch = base_row["throughput_median"], base_row["batch_size_resolved"]
    if not is_number(base_throughput) or not is_number(batch):
        return NAN, NAN
    t1 = float(batch) / float(base_throughput)
    comm = ceiling.allreduce_time_s(float(bytes_of[row["cell_id"]]), float(busbw) * 1e9, n)
    return (
        ceiling.speedup_ceiling(t1, comm, n, overlap=False),
        ceiling.speedup_ceiling(t1, comm, n, overlap=True),
    )
