"""The special-case sections mark a figure whose cell has a caveat in "Read this first", as the
results tables and the summary do."""

from __future__ import annotations

import pandas as pd
from test_report_special import _cell, _cells, _largest, label

from dlperf.measure.tables import CELL_TABLE_COLUMNS, write_table
from dlperf.report.render import report_from_tables
from dlperf.report.special import special_tables


def test_a_special_figure_to_doubt_is_marked():
    """Review: a W&D latency from 3 of 5 runs (2 timed out), and the largest num_classes and GPT
    figures of cells with a caveat, read as plain figures in the special section while the
    results tables and the summary mark the same cells (†, as the summary does)."""
    wdl = _cell("oneflow_wdl", "wide_deep", 3200000, "ok", 16384 / 0.0205, 1000.0)
    face = _largest("oneflow_face", (1, 1), "ok", 2000000)
    gpt = _cell("pytorch", "gpt", None, "ok", 10.0, 3000.0, batch=8, achieved_tflops=1.234)
    clean = _cell("hugectr", "wide_deep", 3200000, "ok", 16384 / 0.0250, 1500.0)
    cells = pd.DataFrame([wdl, face, gpt, clean]).reindex(columns=CELL_TABLE_COLUMNS)
    doubted = {(r["cell_id"], "measured") for r in (wdl, face, gpt)}
    tables = {t.model: t for t in special_tables(cells, label, doubted)}
    assert [(v.first, v.second) for v in tables["wide_deep"].rows[0].values] == [
        ("20.5 †", "1000"),
        ("25.0", "1500"),
    ]
    assert tables["wide_deep"].rows[0].ratios == ("0.67",)
    assert tables["insightface"].rows[0].values[0].first == "2,000,000 †"
    (value,) = tables["gpt"].rows[0].values
    assert (value.third, value.first, value.second) == ("10.00 †", "1.23 †", "n/a")


def test_the_report_marks_the_special_figures_its_caveats_doubt(tmp_path):
    cells = _cells()
    cells["unstable"] = cells["framework"] == "hugectr"  # its runs disagree
    table = tmp_path / "cells.tsv"
    write_table(cells[cells["model"] == "wide_deep"], table)
    report_from_tables([table], tmp_path / "out", generated_at="2026-11-24T00:00:00+00:00")
    for lang in ("en", "zh"):
        md = (tmp_path / "out" / f"report.{lang}.md").read_text()
        assert "| vocab_size=3,200,000 | 20.5 | 1000 | 25.0 † | 1500 | 0.67 |" in md
