"""Per-step records: what every parser yields, whatever the source printed."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path


class Method(StrEnum):
    """How a source's lines give time, recorded beside every throughput."""

    TIMESTAMPS = "timestamps"  # wall-clock time at the end of each logged step
    STEP_TIMES = "step_times"  # seconds spent in each logged step (or interval)
    PRINTED_RATES = "printed_rates"  # only a samples/s rate; time = samples / rate


class ParseError(ValueError):
    """A line the parser claims but cannot read, or a log that cannot give a window."""

    def __init__(self, message: str, path: Path | str | None = None, line: int | None = None):
        where = f"{path}:{line}: " if path and line else (f"{path}: " if path else "")
        super().__init__(f"{where}{message}")
        self.path, self.line = path, line


@dataclass(frozen=True)
class StepRecord:
    """One logged step (or interval of `steps` iterations) of one rank.

    `samples` are the samples the record covers: the rank's own for per-rank sources, the whole
    job's for global sources (rank -1). Exactly the fields the method needs are set.
    """

    rank: int  # -1: a global line that speaks for the whole job
    step: int  # the source's own step/iteration number, for tracing
    steps: int  # iterations this record covers (1 for per-step lines)
    samples: float
    path: str
    line: int
    time_s: float | None = None  # end of the record, seconds since the epoch
    start_s: float | None = None  # start of the record, where the source prints it
    duration_s: float | None = None
    rate: float | None = None  # samples per second as printed

    def __post_init__(self) -> None:
        """Every parser's records are checked here, once: a value no real step can have
        (non-finite, no samples, a non-positive time or rate, an end before its start) is a
        ParseError naming the line."""
        if not (math.isfinite(self.samples) and self.samples > 0) or self.steps < 1:
            raise ParseError(
                f"impossible step record: samples={self.samples}, steps={self.steps}",
                self.path,
                self.line,
            )
        for name in ("time_s", "start_s", "duration_s", "rate"):
            value = getattr(self, name)
            if value is None:
                continue
            if not math.isfinite(value) or (name in ("duration_s", "rate") and value <= 0):
                raise ParseError(f"impossible step record: {name}={value}", self.path, self.line)
        if self.start_s is not None and self.time_s is not None and self.time_s < self.start_s:
            raise ParseError(
                f"impossible step record: it ends ({self.time_s}) before it starts "
                f"({self.start_s})",
                self.path,
                self.line,
            )


@dataclass
class ParseResult:
    records: list[StepRecord]
    method: Method
    notes: list[str] = field(default_factory=list)
    # figures a source printed about its own records, kept beside dlperf's own and never used for
    # them: name -> {(record path, record line): value}, e.g. Megatron-LM's "tflops_per_device"
    reported: dict[str, dict[tuple[str, int], float]] = field(default_factory=dict)

    def reported_over(self, name: str, records: Sequence[StepRecord]) -> float | None:
        """A printed rate over `records` (a run's window), each record's value weighted by its
        duration (the source's rate over the same time as dlperf's); None where a record lacks
        the value or a duration."""
        values = self.reported.get(name, {})
        seconds = weighted = 0.0
        for record in records:
            value = values.get((record.path, record.line))
            if value is None or record.duration_s is None:
                return None
            seconds += record.duration_s
            weighted += value * record.duration_s
        return weighted / seconds if seconds > 0 else None

    def nonfinite_at(self, name: str, records: Sequence[StepRecord]) -> set[int] | None:
        """The positions in `records` whose printed `name` is non-finite (a loss of nan or inf);
        None where the source printed none for them."""
        values = [self.reported.get(name, {}).get((r.path, r.line)) for r in records]
        if all(v is None for v in values):
            return None
        return {i for i, v in enumerate(values) if v is not None and not math.isfinite(v)}

    def by_rank(self) -> dict[int, list[StepRecord]]:
        ranks: dict[int, list[StepRecord]] = {}
        for record in self.records:
            ranks.setdefault(record.rank, []).append(record)
        return ranks
