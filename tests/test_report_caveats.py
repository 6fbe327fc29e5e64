""" "Read this first": each caveat's row says the status of the cell it names."""

from __future__ import annotations

import pandas as pd

from dlperf.i18n import Translator
from dlperf.report.caveats import caveats

BASE = "pytorch.resnet50.fp32.noxla.b128"


def _no_baseline(status_1n1g: str | None) -> list[tuple[str, str, str, str]]:
    rows = [{"cell_id": f"{BASE}.1n8g", "status": "ok", "throughput_median": 2620.0}]
    if status_1n1g:
        rows.append({"cell_id": f"{BASE}.1n1g", "status": status_1n1g, "throughput_median": None})
    cells = pd.DataFrame(rows).assign(
        source="measured", devices=[8, 1][: len(rows)], speedup=float("nan")
    )
    return [
        (c.cell_id, c.status, Translator("en").say(c.detail), Translator("zh").say(c.detail))
        for c in caveats(cells, pd.DataFrame())
        if c.kind == "no_speedup_baseline"
    ]


def test_a_speedup_without_its_baseline_is_an_ok_cell_beside_its_1n1g_cells_status():
    """Review: the row of an ok cell (2,620 samples/s at 1n8g) read "OOM" in the Status column,
    the status of its 1n1g cell: a figure shown in the results table read as out of memory here."""
    assert _no_baseline("oom") == [
        (f"{BASE}.1n8g", "ok", f"{BASE}.1n1g (OOM)", f"{BASE}.1n1g（OOM）")
    ]
    assert _no_baseline(None) == [
        (f"{BASE}.1n8g", "ok", f"{BASE}.1n1g (missing)", f"{BASE}.1n1g（缺失）")
    ]


def test_cells_flagged_by_their_runs_render_in_both_languages(tmp_path):
    """Review: a "flagged" caveat (a stalled step, a loss of nan or inf, the 1n1g cell on other
    hardware) had its heading but no about_flagged or detail_flagged text, so rendering any report
    with one stopped (CatalogError: "locales/en.yaml has no key 'caveats.about_flagged'"):
    `make run-special` on a busy 2-core machine, a Llama run's stalled step, ended there."""
    from dlperf.matrix import Cell
    from dlperf.measure.tables import CELL_TABLE_COLUMNS, write_table
    from dlperf.report.render import report_from_tables

    rows = []
    for layout, throughput, hardware in (
        ("1n1g", 100.0, "AMD EPYC 9654"),
        ("1n2g", 180.0, "Intel Xeon Platinum 8480+"),
    ):
        cell = Cell.parse(f"{BASE}.{layout}")
        rows.append(
            cell.key()
            | {"status": "ok", "throughput_median": throughput, "hardware": hardware}
            | {"source": "measured"}
        )
    table = tmp_path / "cells.tsv"
    write_table(pd.DataFrame(rows).reindex(columns=CELL_TABLE_COLUMNS), table)
    report_from_tables([table], tmp_path / "out", generated_at="2026-11-24")
    en = (tmp_path / "out" / "report.en.md").read_text()
    assert "### Cells flagged by their runs (a stall, a non-finite loss, other hardware)" in en
    assert "| Cell | Status | Runs | Why (flags) |" in en
    assert (
        f"| `{BASE}.1n2g` [cells] | ok | - | its 1n1g cell ran on other hardware (AMD EPYC 9654)"
        in en
    )
    zh = (tmp_path / "out" / "report.zh.md").read_text()
    assert "### 被其运行标记的用例（停顿、非有限的 loss、不同的硬件）" in zh
    assert "| 用例 | 状态 | 运行 | 原因（标记） |" in zh


def test_every_key_a_template_composes_is_in_every_catalog():
    """Review: the caveat kind 'flagged' had its heading but no about_/detail_ text, so every
    report with a flagged cell stopped with a CatalogError, and no test rendered one. The keys a
    template composes from a value (a caveat kind, a launcher, a site's device kind) exist for
    every value, in every language."""
    from dlperf.adapters.base import Launcher
    from dlperf.i18n import catalog, languages
    from dlperf.report.caveats import KINDS

    composed = [f"caveats.{part}_{kind}" for kind in KINDS for part in ("kind", "about", "detail")]
    composed += [f"frameworks.launcher_{launcher}" for launcher in Launcher]
    composed += [
        f"plan.{part}_{kind}" for kind in ("GPUs", "CPUs") for part in ("devices", "hours")
    ]
    for lang in languages():
        missing = [key for key in composed if key not in catalog(lang)]
        assert not missing, f"{lang}: {missing}"
