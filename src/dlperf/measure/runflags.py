"""What a cell's ok runs say about its figure beyond their spread, one list of phrases that the
cells table writes in English (its `flags`) and the report says in its language:

- **Stalled run**: one of its window steps took more than ``STALL_FACTOR`` times its median step
  and more than ``STALL_SHARE`` of its window's time (the job suspended by Slurm or gang
  scheduling, a frozen cgroup, a debugger): its figure is far below what the framework does (one
  15 s step among 400 of 6 ms made a run 12x slow). Flagged and kept, as outliers are.
- **Non-finite loss**: window steps whose logged loss was nan or inf (a diverged run, or fp16
  steps a grad scaler skipped): steps that may not have trained.
- **Other hardware**: ok runs on other GPUs or another CPU model, or with other cores per rank
  (a campaign resumed elsewhere, a partition changed): pooled in one median, so said.
- **Other timing methods**: ok runs timed by per-step timestamps and others by a sum of printed
  step times (an upstream log with and without its timestamp prefix): the second leaves out the
  time between steps, so their figures are not of one kind.
- **Its 1n1g cell on other hardware**: a speedup divides figures of two machines (the cells
  table's `baseline_hardware`).
- **A speedup above the device count** (by more than ``SUPERLINEAR_SLACK``): no data-parallel run
  does more than its devices' share of work faster; its 1n1g cell ran slower than it does alone
  (a busy machine, throttling) or the two cells did other work, so the speedup is no scaling
  figure (seen on a loaded 2-core machine: 8.86 at 1n2g).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from dlperf.i18n import Phrase, Series
from dlperf.status import Status
from dlperf.util import is_number

STALL_FACTOR = 20.0  # a step this many times the run's median step ...
STALL_SHARE = 0.10  # ... that also took this share of the window: a stall
SUPERLINEAR_SLACK = 1.10  # a speedup above devices x this is flagged (cache effects stay below)


def run_flags(ok_runs: pd.DataFrame) -> list[Phrase]:
    """The phrases that flag a cell's ok runs (the module's rules), in this order."""
    flags = [_stall(run) for _, run in ok_runs.iterrows() if stalled(run)]
    flags += _nonfinite_losses(ok_runs)
    flags += _mixed(ok_runs, "hardware", "flags.mixed_hardware", str)
    flags += _mixed(ok_runs, "cores_per_rank", "flags.mixed_cores", lambda v: f"{float(v):g}")
    flags += _mixed(ok_runs, "method", "flags.mixed_method", str)
    return flags


def cell_flags(record: Any, runs: pd.DataFrame) -> list[Phrase]:
    """A cell's flags from its runs (run_flags of its ok ones) and from its row (record_flags)."""
    flags = run_flags(runs[runs["status"] == Status.OK]) if len(runs) else []
    return flags + record_flags(record)


def record_flags(record: Any) -> list[Phrase]:
    """What a cell's row flags about its speedup: its 1n1g cell on other hardware (the cells
    table's `baseline_hardware`), a speedup above its device count (the module's rules)."""
    flags = []
    other = record.get("baseline_hardware")
    if isinstance(other, str) and other:
        flags.append(Phrase.of("flags.baseline_hardware", hardware=other))
    speedup, devices = record.get("speedup"), record.get("devices")
    if is_number(speedup) and is_number(devices):
        if float(speedup) > SUPERLINEAR_SLACK * float(devices):
            flags.append(
                Phrase.of(
                    "flags.superlinear",
                    speedup=f"{float(speedup):.2f}",
                    devices=f"{float(devices):g}",
                )
            )
    return flags


def stalled(run: dict[str, Any] | pd.Series) -> bool:
    """Whether an ok run's window held a stall (its longest_step_ms, p50_ms, window_time_s)."""
    try:
        longest, median = float(run["longest_step_ms"]), float(run["p50_ms"])
        window_s = float(run["window_time_s"])
    except (KeyError, TypeError, ValueError):
        return False
    if not (math.isfinite(longest) and median > 0 and window_s > 0):
        return False
    return longest > STALL_FACTOR * median and longest / 1000 > STALL_SHARE * window_s


def _stall(run: pd.Series) -> Phrase:
    longest, window_s = float(run["longest_step_ms"]), float(run["window_time_s"])
    return Phrase.of(
        "flags.stalled",
        repeat=f"r{run['repeat']}",
        longest=f"{longest / 1000:.1f}",
        median=f"{float(run['p50_ms']):.1f}",
        share=f"{100 * longest / 1000 / window_s:.0f}",
    )


def _nonfinite_losses(ok_runs: pd.DataFrame) -> list[Phrase]:
    steps = pd.to_numeric(ok_runs.get("nonfinite_loss_steps", pd.Series(dtype=float)), "coerce")
    hit = steps[steps > 0]
    if hit.empty:
        return []
    runs = Series(tuple(f"r{r}" for r in sorted(pd.to_numeric(ok_runs.loc[hit.index, "repeat"]))))
    return [Phrase.of("flags.nonfinite_loss", steps=f"{int(hit.sum())}", runs=runs)]


def _mixed(ok_runs: pd.DataFrame, column: str, key: str, show: Any) -> list[Phrase]:
    """One phrase naming each value of `column` and its runs, where the ok runs differ in it."""
    if column not in ok_runs.columns:
        return []
    given = ok_runs[column].map(lambda v: bool(v) if isinstance(v, str) else is_number(v))
    known = ok_runs.loc[given.astype(bool)]
    values = {show(v) for v in known[column]}
    if len(values) < 2:
        return []
    said = [
        f"{value} ({', '.join(f'r{r}' for r in sorted(known.loc[known[column].map(show) == value, 'repeat']))})"
        for value in sorted(values)
    ]
    return [Phrase.of(key, values=Series(tuple(said)))]
