"""What the report calls a framework and a column of its tables: the adapter's display name
with DLPerf's marks (w/XLA, the variant, bsz=, the baseline), each mark a catalog phrase."""

from __future__ import annotations

from typing import Any

from dlperf.adapters import REGISTRY
from dlperf.i18n import Phrase, Text
from dlperf.report.load import MEASURED


def framework_info(name: str) -> dict[str, Any] | None:
    """The adapter's describe() row, or None for a framework no adapter is registered for."""
    return REGISTRY[name]().describe() if name in REGISTRY else None


def framework_name(framework: str) -> Text:
    info = framework_info(framework)
    return info["display_name"] if info else framework


def column_label(
    key: tuple[Any, ...], table_batch: str, resolved: str, several_sources: bool
) -> Text:
    """A results table's column: key (source, framework, xla, variant, batch size); `resolved`:
    the batch per device behind `max` ('' when not known); the source is named when the report
    shows more than one."""
    source, framework, xla, variant, batch_size = key
    label: Text = framework_name(framework)
    if xla:
        label = Phrase.of("column.xla", label=label)
    if variant != "default":
        label = Phrase.of("column.variant", label=label, variant=variant)
    if batch_size != table_batch:
        label = Phrase.of("column.batch", label=label, batch=str(batch_size))
    elif resolved and resolved != batch_size:  # the batch behind `max`
        label = Phrase.of("column.batch", label=label, batch=resolved)
    if source != MEASURED and several_sources:
        label = Phrase.of("column.source", label=label, source=source)
    return label


def special_label(row: dict[str, Any]) -> Text:
    """A column of the special-case tables (dlperf.report.special): framework, XLA, source."""
    label: Text = framework_name(row["framework"])
    if row["xla"]:
        label = Phrase.of("column.xla", label=label)
    return (
        label
        if row["source"] == MEASURED
        else Phrase.of("column.source", label=label, source=row["source"])
    )
