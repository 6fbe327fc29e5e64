"""Entry points for the workflow's script rules: each reads the rule's inputs and calls the package."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pandas as pd

from dlperf.config import Suite
from dlperf.launch.measured import measure_digests
from dlperf.measure.repeats import adaptive_manifests
from dlperf.measure.runs import runs_table
from dlperf.measure.stats import CI_LEVEL, Window
from dlperf.measure.tables import (
    cells_table,
    planned_cells,
    with_planned_setting,
    write_table,
    writing_aside,
)
from dlperf.measure.variance import VarianceSettings
from dlperf.paths import ResultPaths, RunPaths
from dlperf.util import processes_for, remove_reports, rule_logging


def make_tables(smk: Any) -> None:
    """The tables rule. If it fails, Snakemake deletes its outputs: the reports, which show
    their figures, go with them (the next invocation remakes both)."""
    rule_logging(smk)
    results = ResultPaths.of_cells(Path(smk.output.cells))
    try:
        _make_tables(smk)
    except BaseException:
        remove_reports(results)
        raise


def _make_tables(smk: Any) -> None:
    config = smk.config
    manifests = [Path(p) for p in smk.input.manifests]
    planned: int | dict[str, int] = int(config["repeats"])
    if config.get("adaptive_repeats"):  # every run each cell got, beyond `repeats` too
        extra, planned = adaptive_manifests(Path(p) for p in smk.input.adaptive)
        manifests = sorted(
            set(manifests) | set(extra),
            key=lambda m: (RunPaths.of_manifest(m).cell_id, RunPaths.of_manifest(m).repeat),
        )
    out = smk.output
    runs, cells = write_tables(
        config, manifests, planned, Path(out.steps), Path(out.runs), Path(out.cells),
        Path(out.json), workers=processes_for(smk.threads),
    )  # fmt: skip
    counts = runs["status"].value_counts().to_dict()
    logging.info("%d runs (%s), %d cells", len(runs), counts, len(cells))


def write_tables(
    config: dict[str, Any],
    manifests: list[Path],
    planned: int | dict[str, int],
    steps_path: Path,
    runs_path: Path,
    cells_path: Path,
    json_dir: Path,
    workers: int = 1,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The steps, runs and cells tables of a validated suite's runs, and one JSON per run;
    `planned`: the runs planned per cell (or per cell id, with adaptive repeats). Returns (runs,
    cells)."""
    window = Window(**config["window"])
    variance = VarianceSettings.from_config(config.get("variance"))
    suite = Suite(config)
    expected = measure_digests(suite.cell_specs(), config)  # another measure's run is stale
    runs, steps = runs_table(manifests, window, json_dir, variance, expected, workers)
    planned_table = planned_cells(suite.cell_specs())
    runs = with_planned_setting(runs, planned_table)
    json_dir.mkdir(parents=True, exist_ok=True)
    with writing_aside(steps, steps_path):
        level = (config.get("adaptive_repeats") or {}).get("level", CI_LEVEL)
        cells = cells_table(runs, planned_table, window, planned, variance, level)
        write_table(runs, runs_path)
        write_table(cells, cells_path)
    return runs, cells
