"""The W&D table's memory ratio: DLPerf's OneFlow over HugeCTR, for each source of the figures."""

from __future__ import annotations

import pandas as pd
from test_report_special import _cell, label

from dlperf.i18n import english
from dlperf.measure.tables import CELL_TABLE_COLUMNS, write_table
from dlperf.report.render import report_from_tables
from dlperf.report.special import special_tables


def _published(framework: str, vocab: int, memory: float) -> dict:
    row = _cell(framework, "wide_deep", vocab, "ok", float("nan"), memory)
    return row | {"source": "DLPerf"}  # a memory, no latency


def _measured_beside_published() -> pd.DataFrame:
    rows = [
        _cell("oneflow_wdl", "wide_deep", 3200000, "ok", 16384 / 0.0566, 2600.0),
        _cell("hugectr", "wide_deep", 3200000, "ok", 16384 / 0.0650, 4000.0),
        _published("oneflow_wdl", 3200000, 2557.0),
        _published("hugectr", 3200000, 4427.0),
        _published("oneflow_wdl", 6400000, 3179.0),  # not measured
        _published("hugectr", 6400000, 5177.0),
    ]
    return pd.DataFrame(rows).reindex(columns=CELL_TABLE_COLUMNS)


def source_label(row):
    return row["framework"] if row["source"] == "measured" else f"{row['framework']} [DLPerf]"


def test_a_baseline_beside_the_measured_keeps_its_own_memory_ratio():
    """Review: the ratio compared the table's first two columns only: beside a measured OneFlow
    and HugeCTR, DLPerf's own ratio was gone, and a vocabulary only the baseline has read n/a
    with both its memories in the row (3179 and 5177 MiB)."""
    (table,) = special_tables(_measured_beside_published(), source_label)
    assert [english(c) for c in table.columns] == [
        "oneflow_wdl",
        "hugectr",
        "oneflow_wdl [DLPerf]",
        "hugectr [DLPerf]",
    ]
    assert table.ratios == ((0, 1), (2, 3))
    assert [r.ratios for r in table.rows] == [("0.65", "0.58"), ("n/a", "0.61")]


def test_one_framework_per_source_compares_the_first_two_columns():
    rows = [_published("oneflow_wdl", 3200000, 2557.0), _published("hugectr", 3200000, 4427.0)]
    rows[1]["source"] = "hugectr_table"  # `dlperf report oneflow.tsv hugectr.tsv`
    (table,) = special_tables(pd.DataFrame(rows).reindex(columns=CELL_TABLE_COLUMNS), label)
    assert table.ratios == ((0, 1),) and table.rows[0].ratios == ("0.58",)


def test_the_report_shows_a_ratio_column_per_source(tmp_path):
    table = tmp_path / "cells.tsv"
    cells = _measured_beside_published()
    write_table(cells[cells["source"] == "measured"], table)
    published = tmp_path / "DLPerf.tsv"
    write_table(cells[cells["source"] == "DLPerf"].drop(columns=["source"]), published)
    report_from_tables([table, published], tmp_path / "out", generated_at="2026-11-24")
    md = (tmp_path / "out" / "report.en.md").read_text()
    assert (
        "| Memory OneFlow W&D [cells] / HugeCTR [cells] | "
        "Memory OneFlow W&D [DLPerf] / HugeCTR [DLPerf] |"
    ) in md
    assert "| vocab_size=6,400,000 | - | - | - | - | n/a | 3179 | n/a | 5177 | n/a | 0.61 |" in md
