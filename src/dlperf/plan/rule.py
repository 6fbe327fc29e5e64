"""The workflow's plan rule: the campaign plan the runs follow, as JSON for the report."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from dlperf.plan.jobs import PlanError
from dlperf.plan.plan import make_plan, plan_dict
from dlperf.util import atomic_write_text, rule_logging

log = logging.getLogger(__name__)


def _plain(value: Any) -> Any:
    """numpy scalars to Python numbers, for json.dumps."""
    return value.item() if hasattr(value, "item") else str(value)


def write_plan(
    config: dict[str, Any], results: Path, site: dict[str, Any], path: Path, time_limit_s: float
) -> None:
    """The campaign plan (as rules/common.smk logs it) as JSON; `{}` where it has no schedule."""
    try:
        data = plan_dict(make_plan(config, results, time_limit_s=time_limit_s, **site))
    except PlanError as err:
        log.warning("no plan: %s", err)
        data = {}
    atomic_write_text(path, json.dumps(data, indent=1, sort_keys=True, default=_plain) + "\n")


def plan_rule(smk: Any) -> None:
    """The plan rule (rules/report.smk)."""
    rule_logging(smk)
    settings = json.loads(smk.params.settings)
    write_plan(
        dict(smk.config),
        Path(settings["results"]),
        settings["plan_site"],
        Path(smk.output.plan),
        float(settings["time_limit_s"]),
    )
