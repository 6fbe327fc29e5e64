"""Entry points for the workflow's script rules: each reads the rule's inputs and calls the package."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from dlperf.config import Suite
from dlperf.stats import Window
from dlperf.tables import cells_table, planned_cells, runs_table, write_table


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
    runs, steps = runs_table([Path(p) for p in smk.input.manifests], window, Path(smk.output.json))
    Path(smk.output.json).mkdir(parents=True, exist_ok=True)
    suite = Suite(config)
    cells = cells_table(runs, planned_cells(suite.cell_specs()), window, suite.repeats)
    write_table(steps, Path(smk.output.steps))
    write_table(runs, Path(smk.output.runs))
    write_table(cells, Path(smk.output.cells))
    counts = runs["status"].value_counts().to_dict()
    logging.info("%d runs (%s), %d cells", len(runs), counts, len(cells))


def make_report(smk: Any) -> None:
    _logging(smk)
    from dlperf.report.render import render_reports

    plots_dir = Path(smk.output.plots)
    plots_dir.mkdir(
        parents=True, exist_ok=True
    )  # a suite with nothing to plot still has the folder
    render_reports(
        config=smk.config,
        cells_path=Path(smk.input.cells),
        runs_path=Path(smk.input.runs),
        outputs=[Path(p) for p in smk.output.reports],
        plots_dir=plots_dir,
    )
