"""The workflow's report rule: read the rule's files, call the report package."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dlperf.paths import ResultPaths
from dlperf.util import processes_for, rule_logging


def report_rule(smk: Any) -> None:
    rule_logging(smk)
    from dlperf.report.render import render_reports

    plots_dir = Path(smk.output.plots)
    plots_dir.mkdir(parents=True, exist_ok=True)  # a suite with nothing to plot still has it
    outputs = [Path(p) for p in smk.output.reports]
    # a language or format no longer asked for: its report would stand with the old figures
    results = ResultPaths.of_report(outputs[0])
    for old in {p.resolve() for p in results.reports()} - {p.resolve() for p in outputs}:
        old.unlink(missing_ok=True)
    render_reports(
        config=smk.config,
        cells_path=Path(smk.input.cells),
        runs_path=Path(smk.input.runs),
        outputs=outputs,
        plots_dir=plots_dir,
        steps_path=Path(smk.input.steps),
        plan_path=Path(smk.input.plan),
        workers=processes_for(smk.threads),
    )
