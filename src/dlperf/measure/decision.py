"""A repeat decision's record (dlperf.measure.repeats decides): written by the repeat_decision
checkpoint, read by the workflow to walk a cell's decisions. Kept apart from the deciding, which
reads runs with pandas: every dry run imports this module."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Decision:
    cell_id: str
    runs: int  # runs read (1..runs)
    ok_runs: int
    more: bool  # one more run
    reason: str
    rel_ci_width: float | None  # (ci_high - ci_low) / median of the ok runs; None without a CI
    ci_level: float | None


def wants_more(path: Path) -> bool:
    """Whether a recorded decision asks for another run; ValueError naming the file when it
    cannot be read (a truncated or hand-edited decision is remade once deleted)."""
    try:
        more = json.loads(path.read_text())["more"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ValueError(
            f"{path}: unreadable repeat decision ({err!r}); delete it to decide again"
        ) from None
    if not isinstance(more, bool):
        raise ValueError(f"{path}: the decision's more is {more!r}, not true or false; delete it")
    return more
