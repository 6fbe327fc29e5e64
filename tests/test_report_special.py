"""DLPerf's special-case sections: the W&D latency and memory table per vocabulary size, and the
GPT achieved TFLOP/s and MFU table, rendered from a cells table in both languages."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest

from dlperf.i18n import english
from dlperf.matrix import Cell, Layout, sweep_slug
from dlperf.measure.tables import CELL_TABLE_COLUMNS, write_table
from dlperf.report.render import report_from_tables
from dlperf.report.special import special_tables


def _cell(framework, model, vocab, status, throughput, memory, batch=16384, layout=(1, 1), **more):
    swept = {"vocab_size": vocab} if vocab else {}
    variant = f"vocab_size_{vocab}" if vocab else "default"
    cell = Cell(framework, model, "fp32", False, batch, Layout(*layout), variant)
    return cell.key() | {
        "setting": json.dumps(swept) if swept else "",
        "batch_size_resolved": batch,
        "status": status,
        "throughput_median": throughput,
        "peak_mem_mib": memory,
        "source": "measured",
        **more,
    }


def _largest(framework, layout, status, found):
    cell = Cell(framework, "insightface", "amp", False, 64, Layout(*layout), "num_classes_max")
    return cell.key() | {
        "setting": json.dumps({"num_classes": found if status == "ok" else "max"}),
        "batch_size_resolved": 64,
        "status": status,
        "throughput_median": 100.0 if status == "ok" else float("nan"),
        "source": "measured",
    }


def _cells():
    rows = [
        _largest("oneflow_face", (1, 1), "ok", 2000000),
        _largest("insightface", (1, 1), "ok", 1800000),
        _largest("oneflow_face", (1, 8), "ok", 13500000),
        _largest("insightface", (1, 8), "oom", None),
        _cell("oneflow_wdl", "wide_deep", 3200000, "ok", 16384 / 0.0205, 1000.0),
        _cell("hugectr", "wide_deep", 3200000, "ok", 16384 / 0.0250, 1500.0),
        _cell("oneflow_wdl", "wide_deep", 6400000, "ok", 16384 / 0.0210, 1200.0),
        _cell("hugectr", "wide_deep", 6400000, "oom", float("nan"), float("nan")),
        _cell(
            "pytorch",
            "gpt",
            None,
            "ok",
            10.0,
            3000.0,
            batch=8,
            achieved_tflops=1.234,
            mfu_pct=41.26,
            tokens_per_sample=1024,
            flops_method="counted_FlopCounterMode",
        ),
        _cell(
            "pytorch",
            "gpt",
            None,
            "ok",
            18.0,
            3000.0,
            batch=8,
            layout=(1, 2),
            achieved_tflops=1.1,
            mfu_pct=37.0,
        ),
    ]
    return pd.DataFrame(rows).reindex(columns=CELL_TABLE_COLUMNS)


def label(row):
    return row["framework"]


def test_special_tables_wide_deep_largest_num_classes_and_gpt():
    wdl, face, gpt = special_tables(_cells(), label)
    assert (wdl.model, wdl.layout, wdl.batch_size, wdl.columns) == (
        "wide_deep",
        "1n1g",
        "16384",
        ("oneflow_wdl", "hugectr"),
    )
    assert [r.label for r in wdl.rows] == ["vocab_size=3,200,000", "vocab_size=6,400,000"]
    first = wdl.rows[0]
    assert [(v.first, v.second) for v in first.values] == [("20.5", "1000"), ("25.0", "1500")]
    assert first.ratios == ("0.67",)  # OneFlow's memory over HugeCTR's, as DLPerf prints it
    assert [v.status for v in wdl.rows[1].values] == ["ok", "oom"]
    assert wdl.rows[1].ratios == ("n/a",)  # one side ran out of memory: no ratio
    assert (face.option, face.batch_size, face.columns) == (
        "num_classes",
        "64",
        ("oneflow_face", "insightface"),
    )
    assert [(r.label, [(v.status, v.first) for v in r.values]) for r in face.rows] == [
        ("1n1g", [("ok", "2,000,000"), ("ok", "1,800,000")]),
        ("1n8g", [("ok", "13,500,000"), ("oom", "")]),
    ]
    assert [r.label for r in gpt.rows] == ["1n1g, b8", "1n2g, b8"]
    assert [(v.first, v.second, v.fourth) for r in gpt.rows for v in r.values] == [
        ("1.23", "41.3", "10240"),
        ("1.10", "37.0", "n/a"),
    ]


def test_wide_deep_at_a_max_batch_names_each_frameworks_batch_and_no_ratio_across_two():
    """Review: with `batch_size: max` each framework's search found its own batch, yet the
    table set their latencies side by side under "max" and divided their memories (0.33: OneFlow
    at 8192 against HugeCTR at 16384) as if they had trained the same batch."""
    rows = [
        _cell("oneflow_wdl", "wide_deep", 3200000, "ok", 8192 / 0.0205, 500.0, batch="max"),
        _cell("hugectr", "wide_deep", 3200000, "ok", 16384 / 0.0250, 1500.0, batch="max"),
        _cell("oneflow_wdl", "wide_deep", 6400000, "ok", 16384 / 0.0210, 1200.0, batch="max"),
        _cell("hugectr", "wide_deep", 6400000, "ok", 16384 / 0.0250, 1600.0, batch="max"),
    ]
    for row, found in zip(rows, [8192, 16384, 16384, 16384], strict=True):
        row["batch_size_resolved"] = found
    (wdl,) = special_tables(pd.DataFrame(rows), label)
    assert wdl.batch_size == "max"
    assert [v.first for v in wdl.rows[0].values] == ["20.5 (b8192)", "25.0 (b16384)"]
    assert wdl.rows[0].ratios == ("n/a",)
    assert wdl.rows[1].ratios == ("0.75",)  # the same batch found: a ratio


def test_no_special_case_cells_no_section(tmp_path):
    cells = _cells()
    table = tmp_path / "cells.tsv"
    write_table(cells[cells["model"] == "gpt"].assign(model="resnet50"), table)
    report_from_tables([table], tmp_path / "out", generated_at="2026-11-24T00:00:00+00:00")
    assert "Special cases" not in (tmp_path / "out" / "report.en.md").read_text()


def test_the_special_sections_render_in_english_and_chinese(tmp_path):
    table = tmp_path / "cells.tsv"
    write_table(_cells(), table)
    report_from_tables([table], tmp_path / "out", generated_at="2026-11-24T00:00:00+00:00")
    en = (tmp_path / "out" / "report.en.md").read_text()
    section = en[en.index("## Special cases") :]
    lines = [line for line in section.splitlines() if line.startswith("| vocab_size=")]
    assert lines == [
        "| vocab_size=3,200,000 | 20.5 | 1000 | 25.0 | 1500 | 0.67 |",
        "| vocab_size=6,400,000 | 21.0 | 1200 | OOM | OOM | n/a |",
    ]
    header = section[section.index("| Vocabulary") :].splitlines()[:2]
    assert header[1].count("---") == 6  # one table: no blank line between its header and rows
    assert "| 1n1g, b8 | 10.00 | 10240 | 1.23 | 41.3 |" in section  # tokens/s: 10 x 1,024
    assert "| 1n2g, b8 | 18.00 | n/a | 1.10 | 37.0 |" in section  # no tokens per sample stated
    assert "| 1n8g | 13,500,000 | OOM |" in section
    zh = (tmp_path / "out" / "report.zh.md").read_text()
    assert "## 特殊场景测试" in zh and "| 词表大小 |" in zh
    html = (tmp_path / "out" / "report.en.html").read_text()
    assert '<section id="special">' in html and '<td class="num">20.5</td>' in html


def test_a_published_latency_is_shown_as_printed_not_recomputed():
    cells = _cells()
    published = (
        cells["cell_id"] == "oneflow_wdl.wide_deep.fp32.noxla.b16384-vocab_size_3200000.1n1g"
    )
    cells.loc[published, "latency_ms"] = 56.601
    cells.loc[published, "throughput_median"] = float("nan")
    (wdl, *_) = special_tables(cells, label)
    assert wdl.rows[0].values[0].first == "56.601"  # review: it read 56.6, the note says as printed


def test_the_searched_option_is_found_beside_a_variant_of_the_case():
    row = _largest("oneflow_face", (1, 1), "ok", 2000000)
    row["variant"] = "noclip_num_classes_max"
    row["cell_id"] = row["cell_id"].replace("-num_classes_max", "-noclip_num_classes_max")
    (face,) = special_tables(pd.DataFrame([row]).reindex(columns=CELL_TABLE_COLUMNS), label)
    assert face.option == "num_classes" and face.rows[0].values[0].first == "2,000,000"


def test_the_special_plots_carry_the_tables_numbers_and_are_linked(tmp_path):
    """W&D: latency and memory against the swept vocabulary (an OOM is no point); GPT: TFLOP/s
    per configuration with its MFU; each plot written per language and linked under its table;
    InsightFace's largest-value table has none."""
    wdl, face, gpt = special_tables(_cells(), label)
    assert [r.x for r in wdl.rows] == [3200000.0, 6400000.0]
    assert wdl.rows[0].values[0].plotted == (20.5, 1000.0)
    nan = wdl.rows[1].values[1].plotted
    assert nan[0] != nan[0] and nan[1] != nan[1]  # the OOM cell
    assert [v.plotted for r in gpt.rows for v in r.values] == [(1.234, 41.26), (1.1, 37.0)]
    table = tmp_path / "cells.tsv"
    write_table(_cells(), table)
    report_from_tables([table], tmp_path / "out", generated_at="2026-11-24T00:00:00+00:00")
    plots = tmp_path / "out" / "plots"
    for lang in ("en", "zh"):
        assert (plots / f"special0.{lang}.png").stat().st_size > 1000  # W&D
        assert not (plots / f"special1.{lang}.png").exists()  # InsightFace: a table only
        assert (plots / f"special2.{lang}.png").stat().st_size > 1000  # GPT
    en = (tmp_path / "out" / "report.en.md").read_text()
    assert "![The table above, plotted](plots/special0.en.png)" in en
    assert "![The table above, plotted](plots/special2.en.png)" in en
    html = (tmp_path / "out" / "report.zh.html").read_text()
    assert html.count('<img alt="上表的图示" src="data:image/png;base64,') == 2


def test_the_special_sections_match_their_golden_files(tmp_path):
    """The whole special-case section (W&D, InsightFace and GPT tables, notes and plot links) in
    both languages, as tests/golden/special.<lang>.md holds it (DLPERF_UPDATE_GOLDEN=1 rewrites)."""
    golden_dir = Path(__file__).parent / "golden"
    table = tmp_path / "cells.tsv"
    write_table(_cells(), table)
    report_from_tables([table], tmp_path / "out", generated_at="2026-11-24T00:00:00+00:00")
    for lang, heading in (("en", "## Special cases"), ("zh", "## 特殊场景测试")):
        text = (tmp_path / "out" / f"report.{lang}.md").read_text(encoding="utf-8")
        start = text.index(heading)
        end = text.index("\n## ", start + 1)
        section = text[start:end] + "\n"
        golden = golden_dir / f"special.{lang}.md"
        if os.environ.get("DLPERF_UPDATE_GOLDEN") == "1":
            golden.write_text(section, encoding="utf-8")
        assert section == golden.read_text(encoding="utf-8"), f"{golden} differs"


def _shown(table):
    return sorted(v.first for r in table.rows for v in r.values if v.first)


def test_two_cases_of_one_framework_are_two_wide_deep_columns():
    """A second case told apart by `variant` (README: "give the second case a variant") is a
    column of its own, never written over the first's; a vocabulary that begins like another
    (200,000 and 2,000,000) names no variant."""
    rows = [
        _cell("pytorch", "wide_deep", v, "ok", 16384 / 0.0386, 530.0) for v in (200000, 2000000)
    ]
    deep8 = _cell("pytorch", "wide_deep", 200000, "ok", 16384 / 0.0991, 608.0)
    deep8["variant"] = "deep8_vocab_size_200000"
    (table,) = special_tables(
        pd.DataFrame([*rows, deep8]).reindex(columns=CELL_TABLE_COLUMNS), label
    )
    assert [english(c) for c in table.columns] == ["pytorch", "pytorch deep8"]
    assert [[v.first for v in r.values] for r in table.rows] == [["38.6", "99.1"], ["38.6", ""]]


def test_insightface_with_and_without_partial_fc_are_two_columns():
    """DLPerf compared MXNet with and without partial FC: a sample_rate swept beside the
    num_classes search is in the column's name, each search's value in its own column."""
    rows = []
    for rate, found in ((1.0, 800000), (0.1, 1200000)):
        row = _largest("pytorch", (1, 1), "ok", found)
        row["variant"] = f"num_classes_max_{sweep_slug('sample_rate', rate)}"
        row["setting"] = json.dumps({"num_classes": found, "sample_rate": rate})
        rows.append(row)
    (face,) = special_tables(pd.DataFrame(rows).reindex(columns=CELL_TABLE_COLUMNS), label)
    assert [english(c) for c in face.columns] == [
        "pytorch sample_rate_1p0",
        "pytorch sample_rate_0p1",
    ]
    assert _shown(face) == ["1,200,000", "800,000"]


def test_a_vocabulary_sweep_with_an_unresolved_max_is_a_row_of_its_status():
    """A `max` whose search found nothing (its start ran out of memory) keeps its setting
    `max`: a row reading oom after the numbers, not a crash of the report rule."""
    ok = _cell("pytorch", "wide_deep", 200000, "ok", 16384 / 0.0386, 530.0)
    oom = _cell("pytorch", "wide_deep", "max", "oom", float("nan"), float("nan"))
    (table,) = special_tables(pd.DataFrame([oom, ok]).reindex(columns=CELL_TABLE_COLUMNS), label)
    assert [r.label for r in table.rows] == ["vocab_size=200,000", "vocab_size=max"]
    assert [v.status for r in table.rows for v in r.values] == ["ok", "oom"]


def test_a_largest_value_at_its_searchs_ceiling_reads_as_a_lower_bound():
    row = _largest("pytorch", (1, 1), "ok", 600000) | {"search_ceiling": 600000.0}
    (face,) = special_tables(pd.DataFrame([row]).reindex(columns=CELL_TABLE_COLUMNS), label)
    assert face.rows[0].values[0].first == "≥ 600,000"


def test_a_zero_in_a_wide_deep_table_is_no_figure_and_no_crash(tmp_path):
    """Review: a memory of 0 MiB (which the table checks accept) or a measured 0 samples/s
    raised ZeroDivisionError in the W&D table: the report rule crashed."""
    cells = _cells()
    cells["peak_mem_mib"] = 0.0
    cells["throughput_median"] = 0.0
    (wdl, *_) = special_tables(cells, label)
    assert wdl.rows[0].ratios == ("n/a",) and wdl.rows[0].values[0].first == "n/a"


@pytest.mark.parametrize(
    "found, status, first",
    [(600000.0, "ok", "600,000"), (600000.5, "parse_error", ""), (True, "parse_error", "")],
)
def test_an_ok_largest_value_is_a_whole_number_or_no_figure(found, status, first):
    """Review: a largest value written as a JSON float (600000.0) gave an ok cell with no figure."""
    row = _largest("pytorch", (1, 1), "ok", found)
    (face,) = special_tables(pd.DataFrame([row]).reindex(columns=CELL_TABLE_COLUMNS), label)
    assert (face.rows[0].values[0].status, face.rows[0].values[0].first) == (status, first)


def test_a_special_value_most_of_whose_runs_ran_out_of_memory_says_so():
    """Review: a largest num_classes (and a W&D vocabulary) with 1 ok run and 4 out of memory
    read as a plain ok figure: 'the largest value that trains' that 4 of 5 runs could not."""
    face = _largest("pytorch", (1, 1), "ok", 1300000) | {"statuses": "ok:1,oom:4"}
    wdl = _cell("pytorch", "wide_deep", 3200000, "ok", 16384 / 0.0205, 1000.0)
    wdl["statuses"] = "oom:4,ok:1"
    clean = _cell("oneflow_wdl", "wide_deep", 3200000, "ok", 16384 / 0.0205, 1000.0)
    frame = pd.DataFrame([face, wdl, clean | {"statuses": "ok:5"}])
    tables = special_tables(frame.reindex(columns=CELL_TABLE_COLUMNS), label)
    values = {t.model: [v.first for r in t.rows for v in r.values] for t in tables}
    assert values["insightface"] == ["1,300,000 (4/5 OOM)"]
    assert sorted(values["wide_deep"]) == ["20.5", "20.5 (4/5 OOM)"]


def test_a_swept_value_beginning_with_max_is_no_search():
    """Review: compile_mode max-autotune swept beside a num_classes search put its cell in a
    'largest compile_mode' table as parse_error (its variant's compile_mode_maxmautotune begins
    with compile_mode_max), and its largest num_classes was shown nowhere."""
    rows = []
    for mode, found in (("default", 800000), ("max-autotune", 900000)):
        row = _largest("pytorch", (1, 1), "ok", found)
        row["variant"] = f"{sweep_slug('compile_mode', mode)}_num_classes_max"
        row["setting"] = json.dumps({"compile_mode": mode, "num_classes": found}, sort_keys=True)
        rows.append(row)
    (face,) = special_tables(pd.DataFrame(rows).reindex(columns=CELL_TABLE_COLUMNS), label)
    assert face.option == "num_classes"
    assert [english(c) for c in face.columns] == [
        "pytorch compile_mode_default",
        "pytorch compile_mode_maxmautotune",
    ]
    assert [(v.status, v.first) for v in face.rows[0].values] == [
        ("ok", "800,000"),
        ("ok", "900,000"),
    ]


def test_a_published_gpt_table_whose_devices_read_as_floats_renders(tmp_path):
    """Review: a hand-written table's devices column with an empty field (filled from the cell
    id) or written 8.0 reads as floats, which the checks accept; the GPT table then keyed its rows
    on '8.0' and its sort's int('8.0') stopped the report with a ValueError."""
    table = tmp_path / "published.tsv"
    table.write_text(
        "cell_id\tdevices\tstatus\tthroughput_median\n"
        "megatron.gpt.amp.noxla.b2.1n8g\t8\tok\t33.27\n"
        "megatron.gpt.amp.noxla.b2.1n1g\t\tok\t4.31\n"
    )
    report_from_tables([table], tmp_path / "out", generated_at="2026-11-24T00:00:00+00:00")
    en = (tmp_path / "out" / "report.en.md").read_text()
    section = en[en.index("### GPT") :]
    assert section.index("| 1n1g, b2 | 4.31 |") < section.index("| 1n8g, b2 | 33.27 |")


def test_wide_deep_tables_come_in_layout_order():
    """Review: the W&D tables of one suite sorted their layouts as text (1n16g before 1n8g)."""
    layouts = [(1, 8), (1, 16), (1, 1), (4, 8)]
    rows = [_cell("oneflow_wdl", "wide_deep", 3200000, "ok", 800.0, 1000.0, layout=lay)
            for lay in layouts]  # fmt: skip
    cells = pd.DataFrame(rows).reindex(columns=CELL_TABLE_COLUMNS)
    assert [t.layout for t in special_tables(cells, label)] == ["1n1g", "1n8g", "1n16g", "4n8g"]


def test_special_tables_come_in_layout_and_precision_order():
    """Review: DLPerf's W&D tables (16384 samples per iteration in total: b16384 at 1n1g, b2048 at
    1n8g, b512 at 4n8g) came 4n8g, 1n8g, 1n1g, sorted by batch size before layout; GPT and
    InsightFace tables sorted precision and batch size as text (AMP before FP32, b128 before
    b64), unlike every other table of the report."""
    wdl = [_cell("oneflow_wdl", "wide_deep", 3200000, "ok", 800.0, 1000.0, batch=b, layout=lay)
           for b, lay in ((512, (4, 8)), (16384, (1, 1)), (2048, (1, 8)))]  # fmt: skip
    gpt = [_cell("pytorch", "gpt", None, "ok", 10.0, 3000.0, batch=8) | {"precision": p}
           for p in ("amp", "fp32")]  # fmt: skip
    face = [_largest("oneflow_face", (1, 1), "ok", 2000000) | {"batch_size": b} for b in (128, 64)]
    cells = pd.DataFrame([*wdl, *gpt, *face]).reindex(columns=CELL_TABLE_COLUMNS)
    tables = special_tables(cells, label)
    assert [(t.model, t.layout, t.batch_size, t.precision) for t in tables] == [
        ("wide_deep", "1n1g", "16384", "FP32"),
        ("wide_deep", "1n8g", "2048", "FP32"),
        ("wide_deep", "4n8g", "512", "FP32"),
        ("insightface", "", "64", "AMP"),
        ("insightface", "", "128", "AMP"),
        ("gpt", "", "", "FP32"),
        ("gpt", "", "", "AMP"),
    ]


def test_the_wide_deep_plot_lists_its_columns_in_the_tables_order(tmp_path, monkeypatch):
    """Review: a column with no point at the smallest vocabulary (not run there) came second in
    the legend, after the table's second column: lines were listed as they were first met."""
    from matplotlib.figure import Figure

    from dlperf.report import plots
    from dlperf.report.special import Row, Table, Value

    legends = []
    original = Figure.savefig

    def keep(fig, *args, **kwargs):
        legends.append([t.get_text() for t in fig.axes[0].get_legend().get_texts()])
        lines = {line.get_label(): list(line.get_ydata()) for line in fig.axes[1].get_lines()}
        legends.append(lines)
        original(fig, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep)
    absent = Value("absent", "", "")
    rows = (
        Row("3.2M", (absent, Value("ok", "13", "800", plotted=(13.0, 800.0))), ("n/a",), 3.2e6),
        Row("6.4M", (Value("ok", "12", "2000", plotted=(12.0, 2000.0)),
                     Value("ok", "15", "1600", plotted=(15.0, 1600.0))), ("1.25",), 6.4e6),
    )  # fmt: skip
    table = Table("wide_deep", "FP32", "1n1g", "16384", ("OneFlow", "HugeCTR"), rows)
    labels = plots.PlotLabels("W&D", "vocabulary", "ms", "framework", y2="MiB")
    assert plots.wide_deep_plot(table, ["OneFlow", "HugeCTR"], labels, "en", tmp_path / "w.png")
    assert legends == [["OneFlow", "HugeCTR"], {"OneFlow": [2000.0], "HugeCTR": [800.0, 1600.0]}]


def test_a_wide_deep_memory_without_a_latency_is_still_plotted(tmp_path, monkeypatch):
    """Review: a cell whose table row reads latency n/a (a measured 0 samples/s) and memory
    1,000 MiB had no point in the memory panel either: the plot dropped every cell without a
    latency."""
    from matplotlib.figure import Figure

    from dlperf.report import plots

    drawn = {}
    original = Figure.savefig

    def keep(fig, *args, **kwargs):
        for name, ax in zip(("latency", "memory"), fig.axes, strict=False):
            drawn[name] = {line.get_label(): list(line.get_ydata()) for line in ax.get_lines()}
        original(fig, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep)
    cells = _cells()
    cells.loc[cells["framework"] == "oneflow_wdl", "throughput_median"] = 0.0
    (wdl, *_) = special_tables(cells, label)
    assert [v.first for v in wdl.rows[0].values] == ["n/a", "25.0"]
    assert [v.second for v in wdl.rows[0].values] == ["1000", "1500"]
    labels = plots.PlotLabels("W&D", "vocabulary", "ms", "framework", y2="MiB")
    assert plots.wide_deep_plot(wdl, ["OneFlow", "HugeCTR"], labels, "en", tmp_path / "w.png")
    assert drawn["memory"] == {"OneFlow": [1000.0, 1200.0], "HugeCTR": [1500.0]}
    assert drawn["latency"]["HugeCTR"] == [25.0]
    assert all(v != v for v in drawn["latency"]["OneFlow"])  # n/a in the table: no point
