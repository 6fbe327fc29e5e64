"""Per-iteration latency as the PyTorch DDP benchmark prints it (pytorch/benchmarks
distributed/ddp/benchmark.py): sec/iter and samples/s at p50/p75/p90/p95, one row per layout,
with a "no DDP" row at 1 device from the cells of variant `noddp`.

Computed from the steps table: the window steps of each ok run; per step, the slowest rank's
time (the step is done when every rank is); the percentiles pool the steps of all ok runs of the
cell (as the benchmark pools its measurements). samples/s = the samples of all ranks in a step /
that percentile's time: the whole job's rate (the benchmark prints one rank's: divide by devices).

A source that logs one line per interval of iterations (Megatron-LM's --log-interval) gives one
time per interval: its mean per iteration. Its percentiles are of those means, and its row says
so (`iterations_per_record`), never passing them off as single iterations'.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

import pandas as pd

from dlperf.i18n import Phrase, Text
from dlperf.matrix import Layout
from dlperf.measure.stats import (
    Window,
    percentiles,
    rank_window,  # the window's own durations, one owner
)
from dlperf.parse.records import Method, ParseError, StepRecord
from dlperf.report import fmt
from dlperf.status import Status

PERCENTILES = (50, 75, 90, 95)
NO_DDP = "noddp"


@dataclass(frozen=True)
class LatencyRow:
    layout: str
    devices: int
    no_ddp: bool
    runs: int  # ok runs pooled
    steps: int  # window records pooled: single iterations, or intervals of several
    sec_per_iter: tuple[str, ...]  # one per PERCENTILES
    samples_per_s: tuple[str, ...]
    # iterations each pooled record covers where more than one ("10", or "5-10"); "": single
    iterations_per_record: str = ""

    @property
    def pooled(self) -> Text:
        """What the percentiles pool: runs and steps, or runs and intervals of iterations."""
        if self.iterations_per_record:
            return Phrase.of(
                "latency.pooled_intervals",
                runs=str(self.runs),
                intervals=str(self.steps),
                iterations=self.iterations_per_record,
            )
        return f"{self.runs}/{self.steps}"


@dataclass(frozen=True)
class LatencyTable:
    framework: str
    model: str
    precision: str
    xla: bool
    batch_size: str
    variant: str  # "default" (with its noddp row) or another variant's own table
    rows: tuple[LatencyRow, ...]


_RECORD_FIELDS = [f.name for f in fields(StepRecord)]


def step_times(steps: pd.DataFrame, method: str, window: Window) -> list[tuple[float, float, int]]:
    """(seconds per iteration, samples of all ranks per iteration, iterations the record covers)
    per window record of one run: the slowest rank's time."""
    per_rank: list[tuple[list[float], list[float], list[int]]] = []
    for _, rank_steps in steps.sort_values(["rank", "line"]).groupby("rank"):
        records = [
            StepRecord(**{k: _none(r[k]) for k in _RECORD_FIELDS})
            for r in rank_steps.to_dict("records")
        ]
        _, _, ms, selected = rank_window(records, window, Method(method))
        per_rank.append(
            (
                [m / 1000 for m in ms],
                [r.samples / r.steps for r in selected],
                [r.steps for r in selected],
            )
        )
    if not per_rank:
        return []
    length = min(len(seconds) for seconds, _, _ in per_rank)
    return [
        (
            max(s[i] for s, _, _ in per_rank),
            sum(n[i] for _, n, _ in per_rank),
            max(k[i] for _, _, k in per_rank),
        )
        for i in range(length)
    ]


def _none(value: Any) -> Any:
    return None if isinstance(value, float) and math.isnan(value) else value


def _row(
    cell: dict[str, Any], runs: pd.DataFrame, steps: pd.DataFrame, window: Window
) -> LatencyRow | None:
    ok = runs[(runs["cell_id"] == cell["cell_id"]) & (runs["status"] == Status.OK)]
    pooled: list[tuple[float, float, int]] = []
    used = 0
    for run in ok.to_dict("records"):
        mine = steps[(steps["cell_id"] == cell["cell_id"]) & (steps["repeat"] == run["repeat"])]
        try:
            times = step_times(mine, str(run["method"]), window)
        except (ParseError, ValueError):
            continue  # its figure came from the same records: a mismatch means another window
        if times:
            pooled += times
            used += 1
    if not pooled:
        return None
    seconds = percentiles([s for s, _, _ in pooled], PERCENTILES)
    samples = sorted(n for _, n, _ in pooled)[len(pooled) // 2]  # per step; constant in practice
    covered = sorted({k for _, _, k in pooled})
    values = [seconds[f"p{q}_ms"] for q in PERCENTILES]  # percentiles() is unit-free
    return LatencyRow(
        layout=cell["layout"],
        devices=int(cell["devices"]),
        no_ddp=cell["variant"] == NO_DDP,
        runs=used,
        steps=len(pooled),
        sec_per_iter=tuple(f"{v:.3f}" for v in values),
        samples_per_s=tuple(fmt.throughput(samples / v) for v in values),
        iterations_per_record=_iterations(covered),
    )


def _iterations(covered: list[int]) -> str:
    """The iterations per pooled record as a row states them: "" where each is one iteration."""
    if covered == [1]:
        return ""
    return str(covered[0]) if len(covered) == 1 else f"{covered[0]}-{covered[-1]}"


def latency_tables(
    cells: pd.DataFrame, runs: pd.DataFrame, steps: pd.DataFrame, window: Window
) -> list[LatencyTable]:
    """One table per framework, model, precision, xla, batch size (and variant other than noddp)."""
    if not len(steps) or not len(runs):
        return []
    measured = cells[(cells["source"] == "measured") & (cells["status"] == Status.OK)].copy()
    measured["table_variant"] = measured["variant"].replace(NO_DDP, "default")
    keys = ["framework", "model", "precision", "xla", "batch_size", "table_variant"]
    tables = []
    for key, frame in measured.groupby(keys, sort=False):
        ordered = sorted(
            frame.to_dict("records"),
            key=lambda c: (Layout.parse(c["layout"]).devices, c["variant"] != NO_DDP, c["layout"]),
        )
        rows = [r for c in ordered if (r := _row(c, runs, steps, window)) is not None]
        if rows:
            framework, model, precision, xla, batch_size, variant = key
            tables.append(
                LatencyTable(
                    framework, model, precision, bool(xla), str(batch_size), variant, tuple(rows)
                )
            )
    return tables
