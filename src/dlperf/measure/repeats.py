"""Adaptive repeats: a cell gets one more run at a time until its median is known well enough.

The rule (dlperf.measure.variance.repeats_needed decides; this module wires it to the workflow):

- Every cell first gets the suite's `repeats` runs, as without adaptive repeats.
- After its k-th run (k >= repeats) a decision reads the cell's runs 1..k: another run is needed
  while the distribution-free CI of the median of its ok runs cannot reach the level, or is wider
  than `ci_width_pct` of the median; never once the cell has `max` runs (ok or not).
- A cell with no ok run gets no more: repeating an OOM or a crash gives no figure.
- The tables take every run a cell got, and its `runs_planned` is that count.

The decisions are Snakemake checkpoints (rules/adaptive.smk); a suite without
`adaptive_repeats` has none, and its jobs are exactly those of a plain `repeats: N` suite.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dlperf.measure.decision import Decision, decision_record
from dlperf.measure.runs import read_run
from dlperf.measure.stats import Window
from dlperf.measure.variance import repeats_needed
from dlperf.paths import RunPaths
from dlperf.status import Status
from dlperf.util import atomic_write_json, rule_logging

log = logging.getLogger(__name__)


def decide(
    cell_id: str, manifests: list[Path], window: Window, adaptive: dict[str, Any]
) -> Decision:
    """Whether the cell whose runs these are needs another (see the module's rule)."""
    rows = [read_run(path, window).row for path in manifests]
    ok = [float(r["throughput_samples_per_s"]) for r in rows if r["status"] == Status.OK]
    runs, top = len(rows), int(adaptive["max"])
    if not ok:
        return Decision(
            cell_id, runs, 0, False, "no ok run: more repeats give no figure", None, None
        )
    advice = repeats_needed(ok, adaptive["ci_width_pct"] / 100, adaptive["level"], top)
    width = advice.rel_ci_width if math.isfinite(advice.rel_ci_width) else None
    level = advice.ci_level if math.isfinite(advice.ci_level) else None
    if runs >= top:
        reason = f"{runs} runs: the most adaptive_repeats.max allows ({advice.reason})"
        return Decision(cell_id, runs, len(ok), False, reason, width, level)
    return Decision(cell_id, runs, len(ok), advice.more_needed, advice.reason, width, level)


def decision_rule(smk: Any) -> None:
    """The repeat_decision checkpoint: read runs 1..k of a cell, write whether it needs k+1."""
    rule_logging(smk)
    config = smk.config
    manifests = [Path(p) for p in smk.input.manifests]
    decision = decide(
        smk.wildcards.cell, manifests, Window(**config["window"]), config["adaptive_repeats"]
    )
    log.info("%s after %d runs: more=%s (%s)", decision.cell_id, decision.runs, decision.more,
             decision.reason)  # fmt: skip
    atomic_write_json(Path(smk.output[0]), decision_record(decision, config))


def cell_runs_rule(smk: Any) -> None:
    """The adaptive_runs rule: every run manifest of the cell, once its decisions said no more."""
    manifests = sorted(smk.input.manifests, key=lambda p: RunPaths.of_manifest(Path(p)).repeat)
    decisions = [json.loads(Path(p).read_text()) for p in smk.input.decisions]
    top = smk.config["adaptive_repeats"]["max"]
    if len(manifests) >= top:
        stopped = f"{len(manifests)} runs: the most adaptive_repeats.max allows"
    else:
        stopped = decisions[-1]["reason"]
    atomic_write_json(
        Path(smk.output[0]),
        {
            "cell_id": smk.wildcards.cell,
            "runs": len(manifests),
            "stopped": stopped,
            "manifests": manifests,
            "decisions": decisions,
        },
    )


def adaptive_manifests(lists: Iterable[Path]) -> tuple[list[Path], dict[str, int]]:
    """The run manifests named by the cells' adaptive_runs files, and each cell's run count.
    A list is every run of its cell, r1 to its count: ValueError naming the file for one that is
    not (edited by hand: a run left out would leave the median to whoever picked the runs)."""
    manifests: list[Path] = []
    planned: dict[str, int] = {}
    for path in map(Path, lists):
        try:
            data = json.loads(path.read_text())
            cell_id, listed = path.parent.name, [Path(p) for p in data["manifests"]]
            runs = [RunPaths.of_manifest(m) for m in listed]
        except (OSError, ValueError, KeyError, TypeError) as err:  # truncated, or edited by hand
            raise ValueError(
                f"{path}: unreadable list of the cell's runs ({err!r}); delete it and the "
                "workflow lists them again"
            ) from None
        every_run = [(cell_id, k) for k in range(1, len(listed) + 1)]
        if [(r.cell_id, r.repeat) for r in runs] != every_run or data["runs"] != len(listed):
            raise ValueError(
                f"{path}: not every run of {cell_id} from r1 (edited by hand?); delete it and "
                "the workflow lists them again"
            )
        manifests += listed
        planned[cell_id] = len(listed)
    return manifests, planned
