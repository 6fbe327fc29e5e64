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
