"""Throughput over the measured window, per-run percentiles, cell medians, spread and speedup."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dlperf.parse.records import Method, ParseError, ParseResult, StepRecord


@dataclass(frozen=True)
class Window:
    """Logged steps skipped (warmup) and measured after them; the config's `window`."""

    warmup: int
    measure: int


@dataclass(frozen=True)
class RunThroughput:
    """A run's figure and everything needed to trace it back to log lines."""

    throughput_samples_per_s: float
    method: str
    window_first_step: int  # first iteration measured (1-based count of iterations)
    window_last_step: int
    window_samples: float
    window_time_s: float
    ranks: int
    trace: str  # "path:first_line-last_line" of the measured records, per rank
    step_time_ms: list[float]  # per-record times in the window (rank with the slowest window)
    # every rank's per-record times in the window, pooled: the PyTorch DDP benchmark's definition
    pooled_step_time_ms: list[float] = field(default_factory=list)
    # iterations each of those records covers (a log interval's time is the mean of its own)
    iterations_per_record: tuple[int, ...] = (1,)

    def figures(self) -> dict[str, Any]:
        """The one-number fields, for a table row (the per-record lists stay out)."""
        return {
            k: v
            for k, v in self.__dict__.items()
            if k not in ("step_time_ms", "pooled_step_time_ms", "iterations_per_record")
        }

    def percentiles_of(self) -> str:
        """What step_time_ms's percentiles are of, in words (per-run JSON)."""
        if self.iterations_per_record == (1,):
            return "the steps of the rank with the slowest window"
        counts = "/".join(map(str, self.iterations_per_record))
        return (
            "the log intervals of the rank with the slowest window, each the mean time per "
            f"iteration of its {counts} iterations (not single iterations)"
        )


def window_records(records: Sequence[StepRecord], window: Window) -> tuple[list[StepRecord], int]:
    """The records whose covered iterations start after the warm-up and inside the window.

    Returns them and the index of the record just before the window (or -1).
    """
    selected: list[StepRecord] = []
    before = -1
    covered = 0
    for i, record in enumerate(records):
        start = covered
        covered += record.steps
        if start < window.warmup:
            before = i
            continue
        if start >= window.warmup + window.measure:
            break
        selected.append(record)
    return selected, before


def rank_window(
    records: list[StepRecord], window: Window, method: Method
) -> tuple[float, float, list[float], list[StepRecord]]:
    """(samples, seconds, per-record ms, records) of one rank's (or the global) window."""
    selected, before = window_records(records, window)
    needed = window.warmup + window.measure
    covered = sum(r.steps for r in records)
    if covered < needed:
        last = records[-1] if records else None
        where = f" (last record {last.path}:{last.line})" if last else ""
        raise ParseError(f"log ends after {covered} iterations; the window needs {needed}{where}")
    if not selected:
        first = records[before + 1]
        raise ParseError(
            f"no record starts inside the window (iterations {window.warmup + 1} to {needed}): "
            f"this log's records cover {first.steps} iterations each; measure at least that many "
            "after a warm-up that ends on a record's boundary",
            first.path,
            first.line,
        )
    samples = sum(r.samples for r in selected)
    if method is Method.TIMESTAMPS:
        durations = _durations_from_timestamps(records, selected, before)
    elif method is Method.STEP_TIMES:
        durations = [_need(r.duration_s, r, "a step time") for r in selected]
    else:
        durations = [r.samples / _need(r.rate, r, "a rate") for r in selected]
    for duration, record in zip(durations, selected, strict=True):
        if duration <= 0:
            raise ParseError("a measured step has no positive duration", record.path, record.line)
    seconds = sum(durations)
    return (
        samples,
        seconds,
        [d * 1000 / r.steps for d, r in zip(durations, selected, strict=True)],
        selected,
    )


def _durations_from_timestamps(
    records: list[StepRecord], selected: list[StepRecord], before: int
) -> list[float]:
    durations = []
    previous_end = records[before].time_s if before >= 0 else selected[0].start_s
    if before >= 1:  # the window starts at that end: it must not go back in time either
        earlier, last = records[before - 1], records[before]
        if earlier.time_s is not None and last.time_s is not None and last.time_s < earlier.time_s:
            raise ParseError(
                f"step {last.step} ends before step {earlier.step}: the window's start cannot be "
                "told",
                last.path,
                last.line,
            )
    for record in selected:
        end = _need(record.time_s, record, "a timestamp")
        start = record.start_s if previous_end is None else previous_end
        if start is None:
            raise ParseError(
                "the first measured step has no start time (set warmup >= 1)",
                record.path,
                record.line,
            )
        durations.append(end - start)
        previous_end = end
    return durations


def _need(value: float | None, record: StepRecord, what: str) -> float:
    if value is None:
        raise ParseError(f"record has no {what}", record.path, record.line)
    return value


def run_throughput(result: ParseResult, window: Window) -> RunThroughput:
    """Samples in the window over the window's wall time (never the mean of per-step rates).

    Per-rank sources: the ranks' window samples are added and divided by the slowest rank's window
    time (each rank timed on its own clock, so clock skew between nodes cannot enter). Global
    sources (rank -1) are used as printed and never multiplied by the number of ranks.
    """
    ranks = result.by_rank()
    if not ranks:
        raise ParseError("no step records in the logs")
    if -1 in ranks:  # a global source: only its global lines count
        ranks = {-1: ranks[-1]}
    total_samples, slowest_s, slowest_ms, traces = 0.0, 0.0, [], []
    pooled_ms: list[float] = []
    slowest_records: list[StepRecord] = []
    first_step = last_step = 0
    for _rank, records in sorted(ranks.items()):
        samples, seconds, step_ms, selected = rank_window(records, window, result.method)
        total_samples += samples
        pooled_ms += step_ms
        if seconds > slowest_s:
            slowest_s, slowest_ms, slowest_records = seconds, step_ms, selected
        traces.append(f"{selected[0].path}:{selected[0].line}-{selected[-1].line}")
        # iterations actually measured: interval records may start past the warm-up
        skipped = sum(r.steps for r in records[: records.index(selected[0])])
        first_step, last_step = skipped + 1, skipped + sum(r.steps for r in selected)
    return RunThroughput(
        throughput_samples_per_s=total_samples / slowest_s,
        method=str(result.method),
        window_first_step=first_step,
        window_last_step=last_step,
        window_samples=total_samples,
        window_time_s=slowest_s,
        ranks=len(ranks),
        trace=" ".join(traces),
        step_time_ms=slowest_ms,
        pooled_step_time_ms=pooled_ms,
        iterations_per_record=tuple(sorted({r.steps for r in slowest_records})) or (1,),
    )


def percentiles(
    values_ms: Sequence[float], qs: Sequence[int] = (50, 75, 90, 95)
) -> dict[str, float]:
    """Latency percentiles as the PyTorch DDP benchmark reports them (linear interpolation)."""
    if not values_ms:
        return {f"p{q}_ms": math.nan for q in qs}
    ordered = sorted(values_ms)
    return {f"p{q}_ms": _linear_quantile(ordered, q / 100) for q in qs}


def _linear_quantile(ordered: Sequence[float], q: float) -> float:
    """numpy.percentile's default (method "linear"), to the bit, without numpy's per-call cost
    (two calls per run, 10,000 runs per aggregation): between the order statistics around
    q (n - 1), interpolated from whichever end is nearer."""
    position = q * (len(ordered) - 1)
    below = math.floor(position)
    a, b = ordered[below], ordered[min(below + 1, len(ordered) - 1)]
    t = position - below
    return float(a + (b - a) * t if t < 0.5 else b - (b - a) * (1 - t))


@dataclass(frozen=True)
class Spread:
    median: float
    minimum: float
    maximum: float
    cv: float  # coefficient of variation (sample stdev / mean); nan with one run
    ci_low: float  # distribution-free confidence interval of the median (order statistics)
    ci_high: float
    ci_level: float


CI_LEVEL = (
    0.95  # the median's confidence interval in the cells table, unless adaptive repeats' level
)


def spread(values: Sequence[float], level: float = CI_LEVEL) -> Spread:
    """Median and spread of a cell's successful runs."""
    if not values:
        nan = math.nan
        return Spread(nan, nan, nan, nan, nan, nan, nan)
    ordered = sorted(values)
    mean = statistics.fmean(ordered)
    cv = statistics.stdev(ordered) / mean if len(ordered) > 1 and mean else math.nan
    lo, hi, achieved = median_ci_ranks(len(ordered), level)
    ci = (ordered[lo], ordered[hi]) if lo is not None and hi is not None else (math.nan, math.nan)
    return Spread(statistics.median(ordered), ordered[0], ordered[-1], cv, ci[0], ci[1], achieved)


def median_ci_ranks(n: int, level: float) -> tuple[int | None, int | None, float]:
    """0-based order statistics (j, k) with P(x_j <= median <= x_k) >= level, and that coverage.

    Binomial(n, 1/2) construction; with too few runs for the level, the widest interval (min, max)
    and its actual coverage are returned.
    """
    if n < 2:
        return None, None, math.nan
    # (x_j, x_{n-1-j}) misses the median when at most j runs lie below it, or at most j above
    # the binomial CDF as scipy.special has it: scipy.stats would cost the tables 1 to 2 s to import
    from scipy.special import bdtr

    j = np.arange(n // 2)
    coverage = 1 - 2 * bdtr(j, n, 0.5)
    reaching = np.flatnonzero(coverage >= level)  # coverage falls as j grows
    best = int(reaching[-1]) if len(reaching) else 0
    return best, n - 1 - best, float(coverage[best])


def speedup(throughput: float, baseline: float | None) -> float:
    """Cell throughput over its 1n1g baseline; nan (shown as n/a) when there is no baseline."""
    if baseline is None or not math.isfinite(baseline) or baseline <= 0:
        return math.nan
    return throughput / baseline
