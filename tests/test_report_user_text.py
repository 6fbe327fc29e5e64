"""What a user writes (a title, footnotes, a baseline's name and notes, a variant, a run's log)
reaches the Markdown report as text, never as Markdown or HTML; and what the report's tables show
of a baseline's cells (its footnotes, a failed cell)."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from dlperf.config import validate
from dlperf.i18n.mdtext import code, escape, fenced
from dlperf.matrix import Cell
from dlperf.measure.runs import RUN_COLUMNS
from dlperf.measure.tables import CELL_TABLE_COLUMNS, write_table
from dlperf.report.render import render_reports

ONE = "pytorch.resnet50.fp32.noxla.b8.1n1g"
TWO = "pytorch.resnet50.fp32.noxla.b8.1n2g"

CONFIG: dict[str, Any] = {
    "name": "user_text",
    "repeats": 1,
    "window": {"warmup": 1, "measure": 2},
    "report": {"title": "dlperf report", "footnotes": {}},
    "baselines": [{"name": "old", "path": "baseline.tsv"}],
    "cases": [
        {
            "framework": "pytorch",
            "model": "resnet50",
            "precision": ["fp32"],
            "batch_size": [8],
            "layouts": ["1n1g", "1n2g"],
        }
    ],
}


def _measured(cells: dict[str, tuple[str, float]]) -> pd.DataFrame:
    rows = []
    for cell_id, (status, median) in cells.items():
        rows.append(
            Cell.parse(cell_id).key()
            | {
                "status": status,
                "throughput_median": median,
                "throughput_min": median,
                "throughput_max": median,
                "runs_ok": 1 if status == "ok" else 0,
                "runs_done": 1,
                "runs_planned": 1,
            }
        )
    return pd.DataFrame(rows).reindex(columns=CELL_TABLE_COLUMNS)


def render(
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
    baseline: list[dict[str, Any]],
    measured: dict[str, tuple[str, float]] | None = None,
    runs: list[dict[str, Any]] | None = None,
    **config: Any,
) -> dict[str, str]:
    """The en and zh Markdown reports of a measured table, a baseline and runs, with `config`'s
    keys replacing the suite's."""
    monkeypatch.chdir(root)
    suite = validate(copy.deepcopy(CONFIG) | config)
    measured = measured if measured is not None else {ONE: ("ok", 100.0), TWO: ("ok", 190.0)}
    write_table(_measured(measured), Path("cells.tsv"))
    write_table(pd.DataFrame(runs or [], columns=RUN_COLUMNS), Path("runs.tsv"))
    pd.DataFrame(baseline).to_csv("baseline.tsv", sep="\t", index=False)
    outputs = [root / f"report/report.{lang}.md" for lang in ("en", "zh")]
    render_reports(suite, Path("cells.tsv"), Path("runs.tsv"), outputs, "2024-01-02 03:04 UTC")
    return {lang: (root / f"report/report.{lang}.md").read_text() for lang in ("en", "zh")}


def _spread_rows(md: str) -> list[list[str]]:
    lines = md.split("#### ", 1)[1].split("\n\n", 2)[1].splitlines()
    return [[c.strip() for c in line.strip("|").split(" | ")] for line in lines[2:]]


def test_footnote_names_each_cell_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A configured footnote on cells a baseline also has (same ids) listed each id twice."""
    baseline = [
        {"cell_id": ONE, "status": "ok", "throughput_median": 120.0},
        {"cell_id": TWO, "status": "ok", "throughput_median": 228.0},
    ]
    footnotes = {"pytorch.resnet50.*": "ran on a shared node"}
    md = render(tmp_path, monkeypatch, baseline, report={"title": "t", "footnotes": footnotes})
    for text in md.values():
        cells = [line for line in text.splitlines() if "ran on a shared node" in line]
        assert len(cells) == 1, cells
        assert cells[0].count(f"`{ONE}`") == 1 and cells[0].count(f"`{TWO}`") == 1, cells[0]


def test_a_failed_baseline_cell_shows_no_figure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A baseline row with status failed showed its median (500.50) in the spread table."""
    baseline = [
        {"cell_id": ONE, "status": "ok", "throughput_median": 120.0},
        {"cell_id": TWO, "status": "failed", "throughput_median": 500.5},
    ]
    md = render(tmp_path, monkeypatch, baseline)
    for lang, text in md.items():
        assert "500.50" not in text and "500.5" not in text, lang
        rows = _spread_rows(text)
        failed = [r for r in rows if "old" in r[0] and r[1] == "1n2g"]
        assert len(failed) == 1, rows
        status = "failed" if lang == "en" else "失败"
        assert failed[0][2] == status and failed[0][4] == "n/a", failed[0]
        measured = [r for r in rows if "old" not in r[0] and r[1] == "1n2g"]
        assert measured[0][4] == "190.00"


EVIL = '<script>alert(1)</script><img src=x onerror="alert(2)"> [x](javascript:alert(3))\n# *b* _i_'
# EVIL in the Markdown: one line, its marks escaped, no tag
SAFE = (
    '&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror="alert(2)"&gt; '
    "\\[x\\](javascript:alert(3)) \\# \\*b\\* \\_i\\_"
)


def test_user_text_is_escaped_in_markdown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The title, a configured footnote, a baseline's name and note and a run's status detail
    reached the .md unchanged (a <script>, an <img onerror>, a javascript: link, a heading)."""
    baseline = [
        {"cell_id": ONE, "status": "ok", "throughput_median": 120.0, "note": "note " + EVIL},
        {"cell_id": TWO, "status": "failed", "throughput_median": 230.0},
    ]
    run = Cell.parse(ONE).key() | {
        "repeat": 1,
        "status": "failed",
        "status_detail": "log " + EVIL,
        "manifest": "",
    }
    md = render(
        tmp_path,
        monkeypatch,
        baseline,
        measured={ONE: ("failed", float("nan")), TWO: ("ok", 190.0)},
        runs=[run],
        report={"title": "title " + EVIL, "footnotes": {ONE: "foot " + EVIL}},
        baselines=[{"name": "base " + EVIL, "path": "baseline.tsv"}],
    )
    for lang, text in md.items():
        assert text.startswith(f"# title {SAFE}\n"), text[:300]
        for marker in ("note", "foot", "log", "base"):
            assert f"{marker} {SAFE}" in text, (lang, marker)
        for raw in ("<script", "<img", "\n# *b*", "*b*", " _i_"):
            assert raw not in text, (lang, raw)
        assert not re.search(r"(?<!\\)\]\(javascript", text), lang  # no link
        assert "alert(3))\n" not in text  # the newline folded


def test_code_spans_and_blocks_hold_any_text() -> None:
    """An id or path with a backtick cannot close its code span and let the rest be Markdown."""
    assert code("a`<b>|c") == "``a`<b>\\|c``"
    assert code("plain_id.1n1g") == "`plain_id.1n1g`"
    assert fenced("x\n```\n<b>", "json") == "````json\nx\n```\n<b>\n````"
    assert escape("bert_base _i_ a|b") == "bert_base \\_i\\_ a\\|b"


def test_an_html_entity_in_text_reads_as_itself_in_markdown() -> None:
    """Review: `&lt;` in a log line or file name rendered as `<` in the Markdown report; a plain
    ampersand (Wide & Deep) stays as it is."""
    from dlperf.i18n.mdtext import escape

    assert escape("x &lt;b&gt; y") == "x &amp;lt;b&amp;gt; y"
    assert escape("Wide & Deep") == "Wide & Deep"


@pytest.mark.parametrize("name", ["old [$1 vs $2]", "old [$\\x$]", "p_1 $_$"])
def test_a_dollar_in_a_plot_label_is_text_not_tex(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """Review: a baseline named 'old [$1 vs $2]' was drawn as TeX ('1 vs 2' in italics, its
    dollars gone) in the plots' legends, and 'old [$\\x$]' stopped the whole report (matplotlib's
    ValueError: Unknown symbol: \\x)."""
    from matplotlib.figure import Figure

    from dlperf.report import plots
    from dlperf.report.model import Column, Group, PlotPoint

    legends: list[list[str]] = []
    original = Figure.savefig

    def keep(fig: Figure, *args: Any, **kwargs: Any) -> None:
        original(fig, *args, **kwargs)  # draws every text: a TeX error is raised here
        legend = fig.axes[0].get_legend()
        legends.append([text.get_text() for text in legend.get_texts()])
        assert not any(text.get_parse_math() for text in legend.get_texts())

    monkeypatch.setattr(Figure, "savefig", keep)
    points = (PlotPoint(name, "1n1g", 10.0, 1.0), PlotPoint(name, "1n2g", 19.0, 1.9))
    group = Group(
        "g", "resnet50", "ResNet-50", "fp32", "FP32", False, "8", "default",
        (Column("pytorch", "old", name),), (), (), (), points,
    )  # fmt: skip
    labels = plots.PlotLabels(f"title {name}", "x", "y", "legend", "ideal")
    for draw in (plots.throughput_plot, plots.speedup_plot):
        assert draw(group, labels, "en", tmp_path / f"{draw.__name__}.png") is not None
    assert legends == [[name], ["ideal", name]]
