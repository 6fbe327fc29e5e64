"""The report's sentences in one language, built from its data model: group and latency titles,
a results cell, status and method words, footnotes and the summary paragraph. The templates get
them through dlperf.report.render.render_text."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dlperf.i18n import Phrase, Series, Translator
from dlperf.i18n.mdtext import Md
from dlperf.i18n.mdtext import code as code_span
from dlperf.report.latency import LatencyTable
from dlperf.report.model import ABSENT, Group, ReportData
from dlperf.report.names import framework_name
from dlperf.status import Status
from dlperf.vocabulary import PRECISION_NAMES
from dlperf.vocabulary import display_name as model_name


def group_title(group: Group, t: Translator) -> str:
    return t(
        "group.title",
        model=group.model_name,
        precision=group.precision_name,
        batch_size=group.batch_size,
    )


def latency_title(table: LatencyTable, t: Translator) -> str:
    title = t(
        "latency.title",
        framework=t.say(framework_name(table.framework)),
        model=model_name(table.model),
        precision=PRECISION_NAMES.get(table.precision, table.precision),
        batch_size=table.batch_size,
    )
    if table.xla:
        title = t("latency.xla", title=title)
    if table.variant != "default":
        title += t("group.variant", variant=table.variant)
    return Md(title)


def cell_text(cell: Any, t: Translator) -> str:
    """A results-table cell without its footnote marks: "123.4 (1.85)", "-", or its status in words
    ("OOM")."""
    if cell.status == Status.OK:
        return f"{cell.throughput} ({cell.speedup})"
    if cell.status in (ABSENT, Status.MISSING):
        return "-"
    return t(f"status.{cell.status}")


def status_word(status: str, t: Translator) -> str:
    """A status in words; "-" for a cell that does not exist (no such column and row)."""
    if status == ABSENT:
        return "-"
    return t(f"status.{status}") if t.has(f"status.{status}") else t.say(status)


def method_word(method: str, t: Translator) -> str:
    """A timing method's short name (the spread tables' Method column), else its id."""
    return t(f"method_short.{method}") if t.has(f"method_short.{method}") else t.say(method)


def footnote_text(note: Any, t: Translator, code: bool) -> str:
    """A footnote in words; `code` marks ids as Markdown code."""

    def ids(items: Sequence[str]) -> str:
        return Md(", ".join(code_span(i) if code else t.say(i) for i in items))

    if note.kind == "status":
        return t(
            "results.footnote_status",
            cell=ids(note.cell_ids[:1]),
            status=status_word(note.status, t),
            reason=t.say(note.text) or t("results.no_reason"),
        )
    if note.kind == "fallback":
        return t(
            "results.footnote_fallback",
            oom_batch=note.oom_batch,
            layouts=join_list(note.layouts, t),
            shown_batch=note.shown_batch,
            cells=ids(note.cell_ids),
        )
    if note.kind == "note":
        return t("results.footnote_note", text=t.say(note.text))
    if note.kind == "doubt":
        return t("results.footnote_doubt", cells=ids(note.cell_ids))
    return t("results.footnote_config", text=t.say(note.text), cells=ids(note.cell_ids))


def summary_text(data: ReportData, t: Translator) -> str:
    s = data.summary
    if not s.cells:
        return t("summary.no_cells")
    statuses = [t("summary.status_item", status=status_word(k, t), count=n) for k, n in s.statuses]
    if not s.runs and data.options is None:
        return t(
            "summary.text_tables",
            cells=s.cells,
            frameworks=join_list(s.frameworks, t),
            models=join_list(s.models, t),
            statuses=join_list(statuses, t),
        )
    text = t(
        "summary.text",
        cells=s.cells,
        frameworks=join_list(s.frameworks, t),
        models=join_list(s.models, t),
        runs=s.runs,
        runs_ok=s.runs_ok,
        statuses=join_list(statuses, t),
    )
    if s.runs and s.runs_ok == 0:
        reasons = [
            t(
                "summary.failure_item",
                status=status_word(st, t),
                runs=n,
                detail=Md(" ".join(t.say(detail).split())) or "-",
            )
            for st, detail, n in s.failures
        ]
        text += " " + t("summary.nothing_succeeded", reasons=join_list(reasons, t) or t("none"))
    return Md(text)


def _word(item: Any, t: Translator) -> str:
    return t.say(item if isinstance(item, Phrase | Series | str) else str(item))


def join_list(items: Sequence[Any], t: Translator) -> str:
    """Items in words, joined by the language's list separator (Markdown: each escaped)."""
    return Md(t("list_sep").join(_word(i, t) for i in items))
