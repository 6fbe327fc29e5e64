"""The GPT special table as the H100 proof of 2026-11-27 gave it: the built-in column's FLOPs
counted by FlopCounterMode, Megatron-LM's by dlperf's formula."""

from __future__ import annotations

import pandas as pd
from test_report_special import _cell, label

from dlperf.i18n import english
from dlperf.measure.tables import CELL_TABLE_COLUMNS
from dlperf.report.special import special_tables

FORMULA = "formula: 6 N + 12 L s h per token (model FLOPs), V=50304"


def _gpt(framework: str, batch: int, throughput: float, tflops: float, mfu: float, **more):
    figures = {"achieved_tflops": tflops, "mfu_pct": mfu, "tokens_per_sample": 2048.0}
    return _cell(framework, "gpt", None, "ok", throughput, 34661.6, batch=batch, **figures, **more)


def test_the_gpt_table_writes_figures_as_the_report_does_and_says_each_columns_flops() -> None:
    """The H100's table read 49556.96 tokens/s and 407.35 TFLOP/s (407 in the summary), under a
    note giving 6 N + 12 L s h as every column's FLOPs though the built-in's were counted."""
    rows = [
        _gpt("pytorch", 4, 24.197734701771626, 407.34708574309377, 41.16696167186395,
             flops_method="counted_FlopCounterMode"),
        _gpt("megatron", 8, 38.797, 67.90818199216294, 6.862878422654163, flops_method=FORMULA),
    ]  # fmt: skip
    (table,) = special_tables(pd.DataFrame(rows).reindex(columns=CELL_TABLE_COLUMNS), label)
    built_in = table.rows[0].values[0]
    assert (built_in.third, built_in.fourth, built_in.first, built_in.second) == (
        "24.20", "49557", "407", "41.2",
    )  # fmt: skip
    megatron = table.rows[1].values[1]
    assert (megatron.fourth, megatron.first, megatron.second) == ("79456", "67.9", "6.9")
    methods = [(english(c), m) for c, m in table.flops_methods]
    assert methods == [("pytorch", "counted_FlopCounterMode"), ("megatron", FORMULA)]


def test_a_column_without_a_stated_method_is_left_out_of_the_note() -> None:
    rows = [_gpt("pytorch", 4, 24.2, 407.3, 41.2), _gpt("megatron", 8, 77.6, 67.9, 6.9)]
    rows[1]["flops_method"] = FORMULA
    (table,) = special_tables(pd.DataFrame(rows).reindex(columns=CELL_TABLE_COLUMNS), label)
    assert [(english(c), m) for c, m in table.flops_methods] == [("megatron", FORMULA)]
