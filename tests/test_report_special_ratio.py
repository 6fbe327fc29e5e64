"""The W&D table's memory ratio: DLPerf's OneFlow over HugeCTR, for each source of the figures."""

from __future__ import annotations

import json

import pandas as pd
from test_report_special import _cell, label

from dlperf.i18n import english
from dlperf.matrix import Cell, Layout
from dlperf.measure.runs import RUN_COLUMNS
from dlperf.measure.tables import CELL_TABLE_COLUMNS, write_table
from dlperf.report.load import load_baseline
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


def test_a_runs_table_places_each_vocabulary_in_its_row_and_its_search_in_its_table(tmp_path):
    """Review: a runs table read as a table of cells (`dlperf report runs.tsv`, or a baseline)
    lost the swept values: every vocabulary became a column of its own in one unnamed row, the
    memory ratio read HugeCTR at 3,200,000 over HugeCTR at 6,400,000 (0.80), and the
    InsightFace search's largest num_classes had no table. The runs table now carries each
    cell's planned setting, and its `max` is resolved from the runs' options_resolved."""
    rows = []
    memory = {("oneflow_wdl", 3200000): 2557, ("hugectr", 3200000): 4427}
    memory |= {("oneflow_wdl", 6400000): 3179, ("hugectr", 6400000): 5177}
    for (framework, vocab), mib in memory.items():
        cell = Cell(
            framework, "wide_deep", "fp32", False, 16384, Layout(1, 1), f"vocab_size_{vocab}"
        )
        for repeat in (1, 2):
            rows.append(
                cell.key()
                | {"setting": json.dumps({"vocab_size": vocab}), "options_resolved": ""}
                | {"repeat": repeat, "status": "ok", "throughput_samples_per_s": 16384 / 0.06}
                | {"batch_size_resolved": 16384, "peak_mem_mib": mib}
            )
    face = Cell("pytorch", "insightface", "fp32", False, 16, Layout(1, 2), "num_classes_max")
    rows.append(
        face.key()
        | {"setting": '{"num_classes": "max"}', "options_resolved": '{"num_classes": 1300000}'}
        | {"repeat": 1, "status": "ok", "throughput_samples_per_s": 50.0}
        | {"batch_size_resolved": 16}
    )
    runs = tmp_path / "runs.tsv"
    write_table(pd.DataFrame(rows).reindex(columns=RUN_COLUMNS), runs)
    wdl, largest = special_tables(load_baseline("runs", runs), label)
    assert [english(c) for c in wdl.columns] == ["hugectr", "oneflow_wdl"]  # the table's order
    assert [r.label for r in wdl.rows] == ["vocab_size=3,200,000", "vocab_size=6,400,000"]
    assert [[v.second for v in r.values] for r in wdl.rows] == [["4427", "2557"], ["5177", "3179"]]
    assert [r.ratios for r in wdl.rows] == [("1.73",), ("1.63",)]  # HugeCTR's over OneFlow's
    assert [(r.label, [v.first for v in r.values]) for r in largest.rows] == [
        ("1n2g", ["1,300,000"])
    ]
