"""A repeat decision's record (dlperf.measure.repeats decides): written by the repeat_decision
checkpoint, read by the workflow to walk a cell's decisions. Kept apart from the deciding, which
reads runs with pandas: every dry run imports this module."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
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


def decision_record(decision: Decision, config: dict[str, Any]) -> dict[str, Any]:
    """What the checkpoint writes: the decision, the digest of the settings it was made with, and
    the digest of both (`digest`): a decision edited by hand (`more` flipped) no longer matches
    it, and is made again from its runs (made_otherwise)."""
    recorded = asdict(decision) | {"settings_digest": settings_digest(config)}
    return recorded | {"digest": json_digest(recorded)}


def made_otherwise(path: Path, config: dict[str, Any]) -> bool:
    """Whether a decision on disk is not what the checkpoint made with the suite's settings now:
    made with others, edited since (its content not its digest), or unreadable."""
    try:
        data = json.loads(path.read_text())
        made = {k: v for k, v in data.items() if k != "digest"}
        edited = data["digest"] != json_digest(made)
        return edited or data["settings_digest"] != settings_digest(config)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return True


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
