"""Which table a cell is shown in (report.groups.table_keys): DLPerf's fallback shows a column's
step-down batch in the table of the batch that ran out of memory at 1n1g, and nothing else moves."""

from __future__ import annotations

import pandas as pd

from dlperf.report.groups import table_keys


def _cells(rows: list[tuple[int, int, str]]) -> pd.DataFrame:
    base = {"source": "measured", "framework": "ngc_tensorflow", "model": "resnet50"}
    base |= {"precision": "amp", "xla": False, "variant": "default"}
    return pd.DataFrame([base | {"batch_size": b, "devices": d, "status": s} for b, d, s in rows])


def _tables(rows: list[tuple[int, int, str]]) -> list[str]:
    return list(table_keys(_cells(rows))["table_batch"])


def test_a_scaled_step_down_is_shown_in_the_table_of_the_batch_that_ran_out_of_memory():
    rows = [(256, 1, "oom"), (224, 1, "ok"), (224, 8, "ok"), (96, 1, "ok"), (96, 8, "ok")]
    assert _tables(rows) == ["256", "256", "256", "96", "96"]  # 96 < 256 / 2


def test_a_one_device_batch_sweep_keeps_its_own_tables():
    """Review: a deliberate sweep of batch sizes at 1n1g whose largest ran out of memory showed
    bsz=192 in the bsz=256 table as if it were the fallback of a column."""
    rows = [(256, 1, "oom"), (192, 1, "ok"), (128, 1, "ok")]
    assert _tables(rows) == ["256", "192", "128"]


def test_a_published_tables_words_for_a_model_make_a_safe_plot_name():
    """Review: a baseline's model '../../escaped/x' wrote plots outside the report's folder, and
    'ResNet-50 v1.5 (ours)' gave a Markdown image link that does not render."""
    from dlperf.report.groups import _slug

    assert _slug("../../escaped/x", "fp32", "128") == "_.._escaped_x.fp32.b128"
    assert _slug("ResNet-50 v1.5 (ours)", "amp", "256") == "ResNet-50_v1.5_ours_.amp.b256"
    assert _slug("resnet50", "fp32", "128") == "resnet50.fp32.b128"
    assert len(_slug("m" * 300, "fp32", "128")) == 120


def test_two_tables_whose_model_words_make_one_slug_keep_their_own_plots(tmp_path):
    """Review: a table relabelling its model 'ResNet 50' and another 'ResNet_50' were two tables
    with one slug: both linked plots/ResNet_50.fp32.b8.*, the second's plot written over the
    first's, so PyTorch's table showed MXNet's bars."""
    import re

    from dlperf.matrix import Cell
    from dlperf.measure.tables import CELL_TABLE_COLUMNS, write_table
    from dlperf.report.render import report_from_tables

    rows = [
        Cell.parse(f"{framework}.resnet50.fp32.noxla.b8.{layout}").key()
        | {"model": model, "status": "ok", "throughput_median": median}
        for model, framework, median in (("ResNet 50", "pytorch", 100.0), ("ResNet_50", "mxnet", 300.0))
        for layout in ("1n1g", "1n2g")
    ]  # fmt: skip
    write_table(pd.DataFrame(rows).reindex(columns=CELL_TABLE_COLUMNS), tmp_path / "cells.tsv")
    report_from_tables([tmp_path / "cells.tsv"], tmp_path / "out")
    md = (tmp_path / "out" / "report.en.md").read_text()
    links = re.findall(r"!\[Throughput\]\((plots/[^)]*)\)", md)
    assert links == [
        "plots/ResNet_50.fp32.b8.throughput.en.png",
        "plots/ResNet_50.fp32.b8-2.throughput.en.png",
    ]
    first, second = ((tmp_path / "out" / link).read_bytes() for link in links)
    assert first != second
    html = (tmp_path / "out" / "report.en.html").read_text()
    assert re.findall(r'<h3 id="([^"]*)">ResNet', html) == [
        "ResNet_50.fp32.b8",
        "ResNet_50.fp32.b8-2",
    ]
