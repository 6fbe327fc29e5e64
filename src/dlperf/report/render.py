"""Render the report: one data model, one Jinja2 template per format, one catalog per language."""

from __future__ import annotations

import base64
import dataclasses
import json
import logging
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd

from dlperf.errors import ConfigError
from dlperf.i18n import Translator, catalog
from dlperf.i18n.mdtext import Md, escape, fenced, one_line
from dlperf.i18n.mdtext import code as code_span
from dlperf.measure.stats import Window
from dlperf.report.build import build_report
from dlperf.report.caveats import KINDS as CAVEAT_KINDS
from dlperf.report.latency import PERCENTILES, latency_tables
from dlperf.report.load import load_cells, load_tables, read_table
from dlperf.report.model import Group, ReportData
from dlperf.report.names import framework_name
from dlperf.report.planinfo import plan_info
from dlperf.report.provenance import read_manifests
from dlperf.report.special import Table as SpecialTable
from dlperf.report.words import (
    cell_text,
    footnote_text,
    group_title,
    join_list,
    latency_title,
    method_word,
    status_word,
    summary_text,
)
from dlperf.status import Status
from dlperf.util import atomic_write_text
from dlperf.vocabulary import display_name as model_name

log = logging.getLogger(__name__)

FORMATS = {"md": "report.md.j2", "html": "report.html.j2"}
OUTPUT_NAME = re.compile(r"^report\.(?P<lang>[A-Za-z_]+)\.(?P<fmt>md|html)$")
PLOT_KINDS = ("throughput", "speedup")


@dataclass(frozen=True)
class Target:
    path: Path
    lang: str
    fmt: str


def parse_target(path: Path) -> Target:
    """`report.{lang}.{md,html}`: the language and format an output path asks for."""
    match = OUTPUT_NAME.match(path.name)
    if not match:
        raise ValueError(f"report output {path} is not named report.<lang>.<md|html>")
    catalog(match["lang"])  # raises CatalogError naming the missing locale file
    return Target(path, match["lang"], match["fmt"])


def render_reports(
    config: Mapping[str, Any],
    cells_path: Path,
    runs_path: Path,
    outputs: Sequence[Path],
    generated_at: datetime | str | None = None,
    plots_dir: Path | None = None,
    steps_path: Path | None = None,
    plan_path: Path | None = None,
    workers: int = 1,
) -> list[Path]:
    """Write every output (report.<lang>.<md|html>) and the plots; return the files written.

    Plots go to `plots_dir` (default: results/plots beside the report folder); the Markdown links to
    them by relative path, the HTML embeds them, so it stands alone. With `workers` above 1, each
    language is rendered in its own process.
    """
    languages = {parse_target(Path(p)).lang for p in outputs}
    with _language_processes(workers, len(languages)) as pool:
        data = load_report_data(
            config, Path(cells_path), Path(runs_path), generated_at, steps_path, plan_path
        )
        return write_reports(data, outputs, plots_dir, pool)


@contextmanager
def _language_processes(workers: int, languages: int) -> Iterator[Executor | None]:
    """A process per language (at most `workers`), started at once: each imports the plotting
    libraries (a second, most of it seaborn's scipy) while the caller reads the tables. None: one
    process renders every language."""
    if min(workers, languages) < 2:
        yield None
        return
    with ProcessPoolExecutor(min(workers, languages), initializer=_import_plots) as pool:
        pool.submit(int)  # starts the processes now
        yield pool


def _import_plots() -> None:
    from dlperf.report import plots  # noqa: F401


def write_reports(
    data: ReportData,
    outputs: Sequence[Path],
    plots_dir: Path | None = None,
    pool: Executor | None = None,
) -> list[Path]:
    """Render one data model to every output named report.<lang>.<md|html>, with its plots; with
    a `pool`, each language as one of its tasks."""
    targets = [parse_target(Path(p)) for p in outputs]
    if not targets:
        return []
    plots_dir = plots_dir or targets[0].path.parent.parent / "plots"
    langs = list(dict.fromkeys(t.lang for t in targets))
    render = partial(_write_language, data, targets, plots_dir)
    done = list(pool.map(render, langs)) if pool else [render(lang) for lang in langs]
    plot_paths = [p for plots, _ in done for p in plots]
    return plot_paths + [t.path for t in targets]


def _write_language(
    data: ReportData, targets: Sequence[Target], plots_dir: Path, lang: str
) -> tuple[list[Path], list[Path]]:
    """One language's plots and reports: (plots, reports) written."""
    plot_files = make_plots(data, lang, plots_dir)
    reports = []
    for target in (t for t in targets if t.lang == lang):
        text = render_text(data, lang, target.fmt, plot_files, target.path.parent)
        atomic_write_text(target.path, text)
        reports.append(target.path)
        log.info("wrote %s", target.path)
    return [p for kinds in plot_files.values() for p in kinds.values()], reports


def load_report_data(
    config: Mapping[str, Any],
    cells_path: Path,
    runs_path: Path,
    generated_at: datetime | str | None = None,
    steps_path: Path | None = None,
    plan_path: Path | None = None,
) -> ReportData:
    """Read the tables, baselines and manifests and build the report's one data model."""
    cells = load_cells(cells_path, config["baselines"])
    runs = (
        read_table(runs_path)
        if runs_path.is_file() and runs_path.stat().st_size
        else pd.DataFrame(columns=["cell_id", "repeat", "status", "status_detail", "manifest"])
    )
    manifests = read_manifests(runs["manifest"]) if "manifest" in runs.columns else {}
    latency = []
    if steps_path is not None and steps_path.is_file():
        window = Window(int(config["window"]["warmup"]), int(config["window"]["measure"]))
        latency = latency_tables(cells, runs, pd.read_csv(steps_path, sep="\t"), window)
    plan = None
    if plan_path is not None and plan_path.is_file():
        found = json.loads(plan_path.read_text())
        plan = plan_info(found) if found else None
    return build_report(
        config, cells, runs, manifests, timestamp(generated_at), latency=latency, plan=plan
    )


def report_from_tables(
    tables: Sequence[Path], out: Path, name: str | None = None, generated_at: str | None = None
) -> list[Path]:
    """`dlperf report`: the en/zh md/html report of cells tables alone, nothing run."""
    if not tables:
        raise ConfigError("dlperf report: give at least one cells table")
    for path in tables:
        if not Path(path).is_file():
            raise ConfigError(f"dlperf report: {path}: no such cells table")
    cells = load_tables([Path(p) for p in tables])
    title = name or ", ".join(Path(p).name for p in tables)
    config: dict[str, Any] = {
        "name": title,
        "report": {"title": title, "footnotes": {}},
        "baselines": [],
        "cases": [],
    }
    runs = pd.DataFrame(columns=["cell_id", "repeat", "status", "status_detail", "manifest"])
    data = build_report(config, cells, runs, {}, timestamp(generated_at))
    outputs = [out / f"report.{lang}.{ext}" for lang in ("en", "zh") for ext in FORMATS]
    return write_reports(data, outputs, out / "plots")


def timestamp(value: datetime | str | None) -> str:
    if isinstance(value, str):
        return value
    moment = (value or datetime.now(UTC)).astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def make_plots(data: ReportData, lang: str, plots_dir: Path) -> dict[str, dict[str, Path]]:
    """group slug -> plot kind -> PNG file, for the groups that have something to plot."""
    from dlperf.report import plots  # matplotlib and seaborn: see _language_processes

    t = Translator(lang)
    out: dict[str, dict[str, Path]] = {}
    for group in (in_words(g, t) for g in data.groups):
        title = group_title(group, t)
        files = {}
        for kind, draw in (("throughput", plots.throughput_plot), ("speedup", plots.speedup_plot)):
            labels = plots.PlotLabels(
                title=t(f"plot.{kind}_title", group=title),
                x=t("plot.devices"),
                y=t(f"plot.{kind}"),
                legend=t("plot.legend"),
                ideal=t("plot.ideal"),
                ceiling=t("plot.ceiling"),
                note=t(f"plot.{kind}_note"),
                doubted=t(f"plot.{kind}_doubted"),
            )
            path = draw(group, labels, lang, plots_dir / f"{group.slug}.{kind}.{lang}.png")
            if path is not None:
                files[kind] = path
        out[group.slug] = files
    for index, table in enumerate(data.special):
        path = _special_plot(table, t, lang, plots_dir / f"special{index}.{lang}.png")
        if path is not None:
            out[special_slug(index)] = {"special": path}
    return out


def special_slug(index: int) -> str:
    """The plots' key of the special-case table at `index` of data.special."""
    return f"special{index}"


def _special_plot(table: SpecialTable, t: Translator, lang: str, path: Path) -> Path | None:
    """W&D: latency and memory against the vocabulary; GPT: TFLOP/s per configuration; the
    largest-value tables have no plot."""
    from dlperf.report import plots

    columns = [t.say(c) for c in table.columns]
    if table.model == "wide_deep":
        labels = plots.PlotLabels(
            title=t("special.wide_deep_title", precision=table.precision, layout=table.layout,
                    batch_size=table.batch_size),
            x=t("special.vocab"),
            y=t("plot.latency_ms"),
            y2=t("plot.memory_mib"),
            legend=t("plot.legend"),
        )  # fmt: skip
        return plots.wide_deep_plot(table, columns, labels, lang, path)
    if table.model == "gpt":
        labels = plots.PlotLabels(
            title=t("special.gpt_title", precision=table.precision),
            x=t("special.configuration"),
            y=t("plot.tflops"),
            legend=t("plot.legend"),
            note=t("plot.gpt_note"),
        )
        return plots.gpt_plot(table, columns, labels, lang, path)
    return None


def in_words(group: Group, t: Translator) -> Group:
    """The group with its column labels written in one language (the plots' legends)."""
    return dataclasses.replace(
        group,
        columns=tuple(dataclasses.replace(c, label=t.say(c.label)) for c in group.columns),
        points=tuple(dataclasses.replace(p, column=t.say(p.column)) for p in group.points),
    )


def _data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _plot_refs(
    plot_files: dict[str, dict[str, Path]], fmt: str, base: Path
) -> dict[str, dict[str, str]]:
    if fmt == "html":
        return {g: {k: _data_uri(p) for k, p in kinds.items()} for g, kinds in plot_files.items()}
    return {
        g: {k: Path(os.path.relpath(p, base)).as_posix() for k, p in kinds.items()}
        for g, kinds in plot_files.items()
    }


def md_cell(value: Any) -> str:
    """Text safe inside a Markdown table cell (mdtext.one_line): one line, Markdown's marks
    escaped, HTML tags neutralised."""
    return one_line(value)


def _finalize(value: Any) -> Any:
    """Every `{{ ... }}` of the Markdown template: written as is when the report composed it
    (mdtext.Md), else escaped, so that no user's text is written unescaped by an oversight."""
    return value if isinstance(value, jinja2.Undefined) else escape(value)


def _environment(fmt: str = "html") -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("dlperf.report", "templates"),
        autoescape=jinja2.select_autoescape(enabled_extensions=("html.j2",), default=False),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        finalize=_finalize if fmt == "md" else None,
    )
    env.filters["md"] = md_cell
    env.filters["code"] = code_span
    env.filters["fenced"] = fenced
    env.globals["Status"] = Status  # templates compare with Status.OK, never a spelled word
    return env


def render_text(
    data: ReportData, lang: str, fmt: str, plot_files: dict[str, dict[str, Path]], base: Path
) -> str:
    """One report as text; `base` is the folder the report is written to (for relative links)."""
    t = Translator(lang, markdown=fmt == "md")
    template = _environment(fmt).get_template(FORMATS[fmt])
    methods = [
        t(f"method_name.{m}") if t.has(f"method_name.{m}") else m for m in data.summary.methods
    ]
    return template.render(
        data=data,
        lang=lang,
        t=t,
        plots=_plot_refs(plot_files, fmt, base),
        summary_text=summary_text(data, t),
        method_names=methods or [t("none")],
        cell_text=lambda cell: cell_text(cell, t),
        group_title=lambda group: group_title(group, t),
        latency_title=lambda table: latency_title(table, t),
        percentiles=PERCENTILES,
        figure_header=lambda key: t(f"figure.{key}"),
        footnote_text=lambda note, code: footnote_text(note, t, code),
        caveat_kinds=[k for k in CAVEAT_KINDS if any(c.kind == k for c in data.caveats)],
        status_word=lambda status: status_word(status, t),
        say=t.say,
        model_name=model_name,
        framework_name=framework_name,
        join=lambda items: join_list(items, t),
        method_list=lambda methods: (
            Md(t("list_sep").join(method_word(m, t) for m in methods)) or "-"
        ),
        code_list=lambda items: Md(", ".join(code_span(i) for i in items)),
        notes=lambda numbers: Md("".join(f" [{n}]" for n in numbers)),
        special_slug=special_slug,
        gpt_methods=lambda table: (
            "; ".join(f"{t.say(c)}: {m}" for c, m in table.flops_methods)
            or t("special.gpt_methods_none")
        ),
    )
