"""A repeat decision's record (dlperf.measure.repeats decides): written by the repeat_decision
checkpoint, read by the workflow to walk a cell's decisions. Kept apart from the deciding, which
reads runs with pandas: every dry run imports this module."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlperf.util import json_digest

# What a decision is made with besides its runs: recorded in it (settings_digest), so one made
# with others is made again also when Snakemake's records (.snakemake/) are lost
DECISION_KEYS = ("window", "repeats", "adaptive_repeats")


@dataclass(frozen=True)
class Decision:
    cell_id: str
    runs: int  # runs read (1..runs)
    ok_runs: int
    more: bool  # one more run
    reason: str
    rel_ci_width: float | None  # (ci_high - ci_low) / median of the ok runs; None without a CI
    ci_level: float | None
    settings_digest: str = ""  # of the suite's DECISION_KEYS it was made with


def settings_digest(config: dict[str, Any]) -> str:
    """The digest of the settings a decision is made with."""
    return json_digest({key: config.get(key) for key in DECISION_KEYS})


def recorded_settings_digest(path: Path) -> str | None:
    """The settings digest a decision on disk records (None: unreadable, or made before)."""
    try:
        return str(json.loads(path.read_text())["settings_digest"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


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
