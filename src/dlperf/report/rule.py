"""The workflow's plan and report rules: read the rule's files, call the report package."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from dlperf.util import atomic_write_text, processes_for

log = logging.getLogger(__name__)


def _logging(smk: Any) -> None:
    logging.basicConfig(
        filename=str(smk.log[0]) if smk.log else None,
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(message)s",
        force=True,
    )


def _plain(value: Any) -> Any:
    """numpy scalars to Python numbers, for json.dumps."""
    return value.item() if hasattr(value, "item") else str(value)


def write_plan(
    config: dict[str, Any], results: Path, site: dict[str, Any], path: Path, time_limit_s: float
) -> None:
    """The campaign plan (as rules/common.smk logs it) as JSON; `{}` where it has no schedule."""
    from dlperf.plan.jobs import PlanError
    from dlperf.plan.plan import make_plan, plan_dict

    try:
        data = plan_dict(make_plan(config, results, time_limit_s=time_limit_s, **site))
    except PlanError as err:
        log.warning("no plan: %s", err)
        data = {}
    atomic_write_text(path, json.dumps(data, indent=1, sort_keys=True, default=_plain) + "\n")


def plan_rule(smk: Any) -> None:
    _logging(smk)
    settings = json.loads(smk.params.settings)
    write_plan(
        dict(smk.config),
        Path(settings["results"]),
        settings["plan_site"],
        Path(smk.output.plan),
        float(settings["time_limit_s"]),
    )


def report_rule(smk: Any) -> None:
    _logging(smk)
    from dlperf.report.render import render_reports

    plots_dir = Path(smk.output.plots)
    plots_dir.mkdir(parents=True, exist_ok=True)  # a suite with nothing to plot still has it
    render_reports(
        config=smk.config,
        cells_path=Path(smk.input.cells),
        runs_path=Path(smk.input.runs),
        outputs=[Path(p) for p in smk.output.reports],
        plots_dir=plots_dir,
        steps_path=Path(smk.input.steps),
        plan_path=Path(smk.input.plan),
        workers=processes_for(smk.threads),
    )
