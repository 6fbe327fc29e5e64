"""The report's frameworks table: per framework, each release its runs ran at, with the version,
model sources and environment its runs recorded (RunRecord.release, adapter_version, ran_in),
never the suite's or the adapter's default pins. A framework with no run recorded yet shows its
adapter's own description and the releases its suite's cases ask for."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import pandas as pd

from dlperf.adapters import get_adapter
from dlperf.adapters.releases import DEFAULT_RELEASE
from dlperf.environments import is_site_interpreter
from dlperf.i18n import Phrase, Series, Text
from dlperf.launch.ranin import RanIn
from dlperf.launch.record import RunRecord
from dlperf.report import names
from dlperf.report.load import MEASURED
from dlperf.report.model import FrameworkRow
from dlperf.report.order import Order
from dlperf.status import Status
from dlperf.vocabulary import display_name

log = logging.getLogger(__name__)


def ran_in_text(ran: RanIn) -> Text:
    """What a run ran in, in words: the release's image only where that is its container."""
    if ran.container:
        key = "frameworks.ran_release_image" if ran.in_intended else "frameworks.ran_container"
        said: Text = Phrase.of(key, image=ran.container)
    elif is_site_interpreter(ran.environment):
        said = Phrase.of("frameworks.ran_site_python", python=ran.python)
    elif ran.environment:
        said = Phrase.of("frameworks.ran_own_environment", requirements=ran.requirements)
    elif ran.python:
        said = Phrase.of("frameworks.ran_python", python=ran.python)
    else:
        said = Phrase.of("frameworks.ran_dlperf_python")
    if not ran.container and ran.packages:
        packages = Series(tuple(f"{name} {version}" for name, version in ran.packages))
        said = Phrase.of("frameworks.node_saw", ran=said, packages=packages)
    if ran.intended and not ran.in_intended:
        said = Phrase.of("frameworks.not_intended", ran=said, intended=ran.intended)
    return said


def framework_rows(
    cells: pd.DataFrame,
    config: Mapping[str, Any],
    order: Order,
    manifests: Mapping[str, RunRecord],
) -> list[FrameworkRow]:
    models: dict[str, set[str]] = {}
    suite_releases: dict[str, set[str]] = {}
    for case in config["cases"]:
        models.setdefault(case["framework"], set()).add(case["model"])
        release = (case.get("options") or {}).get("release", DEFAULT_RELEASE)
        suite_releases.setdefault(case["framework"], set()).add(str(release))
    measured = cells[cells["source"] == MEASURED] if config["cases"] else cells
    for framework, model in (
        measured[["framework", "model"]].drop_duplicates().itertuples(index=False)
    ):
        models.setdefault(framework, set()).add(model)
    ran: dict[str, dict[str, list[RunRecord]]] = {}
    for record in manifests.values():
        if record.status != Status.SKIPPED:  # a skipped run launched nothing
            framework = record.planned_cell.framework
            ran.setdefault(framework, {}).setdefault(record.release, []).append(record)
            models.setdefault(framework, set())
    suite_models = sorted(set().union(*models.values()), key=order.model) if models else []
    rows = []
    for framework in sorted(models, key=order.framework):
        info = names.framework_info(framework)  # looked up here: tests replace the adapters
        if info is None:
            log.warning(
                "framework %r has no registered adapter; left out of the frameworks table",
                framework,
            )
            continue
        common = {
            "framework": framework,
            "display_name": info["display_name"],
            "launcher": info["launcher"],
            "features": tuple(info["features"]),
        }
        notes = {
            "lacking": tuple(
                (display_name(m), info.get("lacks", {})[m])
                for m in suite_models
                if m not in info["models"] and m in info.get("lacks", {})
            ),
            "unsharded": tuple(
                (display_name(m), info["fsdp_lacks"][m])
                for m in sorted(models[framework], key=order.model)
                if m in info.get("fsdp_lacks", {})
            ),
        }
        releases = ran.get(framework)
        if not releases:
            rows.append(_described(info, common, notes, models[framework], suite_releases, order))
            continue
        for i, (release, records) in enumerate(sorted(releases.items())):
            rows.append(
                _ran(info, common, notes if i == 0 else {}, release, records, len(releases), order)
            )
    return rows


def _ran(
    info: dict[str, Any],
    common: dict[str, Any],
    notes: dict[str, Any],
    release: str,
    records: list[RunRecord],
    releases: int,
    order: Order,
) -> FrameworkRow:
    """The row of one release's runs: what they recorded, the sources of their models at it."""
    adapter = get_adapter(common["framework"])
    by_model = {r.planned_cell.model: r for r in sorted(records, key=lambda r: r.cell_id)}
    return FrameworkRow(
        **common,
        **notes,
        release="" if release == DEFAULT_RELEASE else release,
        version="; ".join(sorted({str(r.adapter_version) for r in records})),
        environment=_joined(ran_in_text(r.ran_in) for r in records),
        models=tuple(
            (display_name(m), _source(info, adapter, m, release, by_model[m]))
            for m in sorted(by_model, key=order.model)
        ),
        ran=((release, info["evidence"][release]),) if release in info.get("evidence", {}) else (),
        cells_release=release if releases > 1 else "",
        cells=tuple(sorted({r.cell_id for r in records})) if releases > 1 else (),
    )


def _source(info: dict[str, Any], adapter: Any, model: str, release: str, record: RunRecord) -> str:
    """A model's source at the release that ran (DLPerf v1.0's: the adapter's description)."""
    if release == DEFAULT_RELEASE:
        return str(info["models"].get(model, ""))
    return str(adapter.source_text(model, record.options))


def _described(
    info: dict[str, Any],
    common: dict[str, Any],
    notes: dict[str, Any],
    models: set[str],
    suite_releases: Mapping[str, set[str]],
    order: Order,
) -> FrameworkRow:
    """A framework none of whose runs recorded anything: its adapter's own description."""
    return FrameworkRow(
        **common,
        **notes,
        version=info["version"],
        environment=info["environment"],
        models=tuple(
            (display_name(m), info["models"].get(m, "")) for m in sorted(models, key=order.model)
        ),
        ran=tuple(
            (r, info["evidence"][r])
            for r in sorted(suite_releases.get(common["framework"], ()))
            if r in info.get("evidence", {})
        ),
    )


def _joined(texts: Any) -> Text:
    distinct = tuple(dict.fromkeys(texts))
    return distinct[0] if len(distinct) == 1 else Series(distinct, "clause_sep")
