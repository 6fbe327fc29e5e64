"""Entry points for the workflow's script rules: each reads the rule's inputs and calls the package."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from dlperf.config import Suite
from dlperf.launch.record import measure_digests
from dlperf.measure.repeats import adaptive_manifests
from dlperf.measure.runs import runs_table
from dlperf.measure.stats import Window
from dlperf.measure.tables import cells_table, planned_cells, write_table, writing_aside
from dlperf.measure.variance import VarianceSettings
from dlperf.paths import RunPaths


def _logging(smk: Any) -> None:
    logging.basicConfig(
        filename=str(smk.log[0]) if smk.log else None,
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(message)s",
        force=True,
    )


def make_tables(smk: Any) -> None:
    _logging(smk)
    config = smk.config
    window = Window(**config["window"])
    variance = VarianceSettings.from_config(config.get("variance"))
    manifests = [Path(p) for p in smk.input.manifests]
    suite = Suite(config)
    planned: int | dict[str, int] = suite.repeats
    if config.get("adaptive_repeats"):  # every run each cell got, beyond `repeats` too
        extra, planned = adaptive_manifests(Path(p) for p in smk.input.adaptive)
        manifests = sorted(
            set(manifests) | set(extra),
            key=lambda m: (RunPaths.of_manifest(m).cell_id, RunPaths.of_manifest(m).repeat),
        )
    expected = measure_digests(suite.cell_specs(), config)  # another measure's run is stale
    workers = min(smk.threads, len(os.sched_getaffinity(0)))
    runs, steps = runs_table(manifests, window, Path(smk.output.json), variance, expected, workers)
    Path(smk.output.json).mkdir(parents=True, exist_ok=True)
    with writing_aside(steps, Path(smk.output.steps)):
        cells = cells_table(runs, planned_cells(suite.cell_specs()), window, planned, variance)
        write_table(runs, Path(smk.output.runs))
        write_table(cells, Path(smk.output.cells))
    counts = runs["status"].value_counts().to_dict()
    logging.info("%d runs (%s), %d cells", len(runs), counts, len(cells))
