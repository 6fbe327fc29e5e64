"""The answer first: per model and precision, each column's figure at its largest layout (the
largest with a figure; where none has one, the largest planned and its status)."""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import Any

import pandas as pd

from dlperf.report import fmt
from dlperf.report.figures import HEADLINE_FIGURES, figure_keys, format_figure
from dlperf.report.model import Group, Headline, HeadlineRow
from dlperf.status import Status


def headline(
    groups: Sequence[Group],
    cells: pd.DataFrame,
    doubted: AbstractSet[tuple[str, str]] = frozenset(),
) -> Headline:
    """`doubted`: (cell id, source) of the figures to doubt (caveats.doubted), marked."""
    by_id = {(r["cell_id"], r["source"]): r for r in cells.to_dict("records")}
    picked: list[tuple[Group, int, dict[str, Any]]] = []
    for group in groups:
        for j, column in enumerate(group.columns):
            # rows are sorted by devices: the largest with a figure, else the largest there is
            present = [row for row in group.rows if row.cells[j].cell_id]
            ok = [row for row in present if row.cells[j].status == Status.OK]
            if present:
                largest = (ok or present)[-1]
                picked.append((group, j, by_id[(largest.cells[j].cell_id, column.source)]))
    keys = figure_keys(pd.DataFrame([p[2] for p in picked]), HEADLINE_FIGURES) if picked else ()
    rows = []
    for group, j, record in picked:
        ok = record["status"] == Status.OK
        rows.append(
            HeadlineRow(
                group_slug=group.slug,
                model_name=group.model_name,
                precision_name=group.precision_name,
                batch_size=group.batch_size,
                column=group.columns[j].label,
                layout=record["layout"],
                devices=int(record["devices"]),
                status=record["status"] or Status.MISSING,
                throughput=fmt.throughput(record["throughput_median"]) if ok else "",
                speedup=fmt.speedup(record["speedup"]) if ok else "",
                efficiency=fmt.percent(record["efficiency"]) if ok else "",
                figures=tuple(format_figure(k, record) if ok else "" for k in keys),
                doubted=ok and (record["cell_id"], record["source"]) in doubted,
            )
        )
    return Headline(tuple(rows), keys)
