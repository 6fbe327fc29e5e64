"""Throughput and speedup plots of one results table, and the special cases' plots (W&D latency
and memory against the vocabulary, GPT's achieved TFLOP/s per configuration); seaborn, PNG,
labelled in one language."""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib as mpl
import pandas as pd
import seaborn as sns
from matplotlib import font_manager
from matplotlib.figure import Figure

from dlperf.i18n import Text
from dlperf.matrix import Layout
from dlperf.report.model import Group
from dlperf.report.order import layout_key
from dlperf.report.special import Table
from dlperf.util import atomic_path

log = logging.getLogger(__name__)

# Fonts with Chinese glyphs, the preferred first: Debian's fonts-noto-cjk, then what other
# systems ship (Adobe's and Google's Noto/Source Han, WenQuanYi, Android's fallback, Windows',
# macOS'), then serif ones. Any of them beats boxes.
CJK_FAMILIES = (
    "Noto Sans CJK SC",
    "Noto Sans CJK JP",
    "Source Han Sans SC",
    "Source Han Sans CN",
    "Noto Sans SC",
    "WenQuanYi Zen Hei",
    "WenQuanYi Micro Hei",
    "Droid Sans Fallback",
    "Microsoft YaHei",
    "SimHei",
    "PingFang SC",
    "Hiragino Sans GB",
    "Heiti SC",
    "Arial Unicode MS",
    "Noto Serif CJK SC",
    "Noto Serif CJK JP",
    "Source Han Serif SC",
    "AR PL UMing CN",
    "AR PL UKai CN",
)
# Their files' names, for a font cache built before the font was installed
CJK_FILE_HINTS = ("notosanscjk", "notoserifcjk", "sourcehan", "wqy", "droidsansfallback", "ukai",
                  "uming", "notosanssc")  # fmt: skip
LATIN_FAMILY = "DejaVu Sans"  # matplotlib's own font, always present
# Languages whose labels need CJK glyphs.
CJK_LANGUAGES = ("zh",)


@dataclass(frozen=True)
class PlotLabels:
    """The words of a plot in one language."""

    title: str
    x: str
    y: str
    legend: str
    ideal: str = ""
    ceiling: str = "{column}"  # the communication ceiling's legend entry, per column
    note: str = ""  # what the error bars or lines are, printed under the axes
    doubted: str = ""  # how a figure with a caveat is marked, added to the note where one is
    y2: str = ""  # a second panel's y axis (W&D: memory beside latency)


def _known_family(families: tuple[str, ...]) -> tuple[str, str] | None:
    for family in families:
        try:
            path = font_manager.findfont(
                font_manager.FontProperties(family=family), fallback_to_default=False
            )
        except ValueError:
            continue
        return family, path
    return None


@functools.cache
def cjk_font_family() -> str | None:
    """The CJK font family matplotlib can use (CJK_FAMILIES: Noto Sans CJK from fonts-noto-cjk,
    else another font with Chinese glyphs), or None.

    Looks in matplotlib's font cache, then (a cache built before the font was installed) among the
    system's font files. Without one, Chinese labels would show as boxes: a warning says so.
    """
    found = _known_family(CJK_FAMILIES)
    if found is None:
        for path in font_manager.findSystemFonts():
            if any(hint in Path(path).name.lower() for hint in CJK_FILE_HINTS):
                try:
                    font_manager.fontManager.addfont(path)
                except (OSError, RuntimeError, ValueError) as err:
                    log.debug("font %s not loadable: %s", path, err)
        found = _known_family(CJK_FAMILIES)
    if found is None:
        log.warning(
            "no CJK font found (looked for %s); Chinese plot labels will not render. "
            "Install Debian's fonts-noto-cjk (apt-get install fonts-noto-cjk).",
            ", ".join(CJK_FAMILIES),
        )
        return None
    family, path = found
    log.info("CJK plot font: %s (%s)", family, path)
    return family


def _rc(lang: str) -> Any:  # matplotlib types rc keys as Literals
    cjk = cjk_font_family()
    families = [LATIN_FAMILY] + ([cjk] if cjk else [])
    if lang in CJK_LANGUAGES:
        families.reverse()  # CJK first; matplotlib falls back per glyph to the next family
    return {
        "font.family": "sans-serif",
        "font.sans-serif": families,
        "axes.unicode_minus": False,
        # Labels are data (a baseline's name, a published table's words): "$1 vs $2" is text,
        # never TeX (set in italics, or an error that stops the report)
        "text.parse_math": False,
    }


def _name(label: Text) -> str:
    """A column's label, already in words (dlperf.report.render.in_words)."""
    if not isinstance(label, str):
        raise TypeError(f"plot labels must be words, not {label!r}: see render.in_words")
    return label


def _names(group: Group) -> list[str]:
    return [_name(c.label) for c in group.columns]


def _frame(group: Group) -> pd.DataFrame:
    return pd.DataFrame(
        [
            (_name(p.column), p.layout, p.devices, p.throughput, p.speedup, p.low, p.high)
            + (p.ceiling, p.doubted)
            for p in group.points
        ],
        columns=["column", "layout", "devices", "throughput", "speedup", "low", "high"]
        + ["ceiling", "doubted"],
    )


def _notes(labels: PlotLabels, frame: pd.DataFrame) -> str:
    """The note under the axes, and how a doubted figure is marked where the plot has one."""
    doubted = labels.doubted if frame["doubted"].any() else ""
    return "\n".join(filter(None, [labels.note, doubted]))


def x_axis(layouts: Iterable[str], numeric: bool) -> tuple[dict[str, float], list[str]]:
    """Where each layout stands on a plot's x axis, and the ticks' labels in that order: its
    device count (as a number where `numeric` and no two layouts share one, else one place per
    layout in order); layouts of the same device count (1n2g, 2n1g) each their own place, the
    tick naming the layout, never drawn over each other."""
    ordered = sorted(set(layouts), key=layout_key)
    devices = [Layout.parse(layout).devices for layout in ordered]
    shared = len(set(devices)) < len(devices)
    ticks = [
        f"{d} ({layout})" if shared else str(d) for d, layout in zip(devices, ordered, strict=True)
    ]
    if numeric and not shared:
        return {layout: float(d) for layout, d in zip(ordered, devices, strict=True)}, ticks
    return {layout: float(i) for i, layout in enumerate(ordered)}, ticks


def _palette(group: Group) -> dict[str, tuple[float, float, float]]:
    """One colour per column of the table, the same in both plots of a group."""
    labels = _names(group)
    return dict(zip(labels, sns.color_palette(n_colors=len(labels)), strict=True))


def _figure() -> Figure:
    # Fixed margins: a layout engine measures every text box and costs most of a plot's time.
    fig = Figure(figsize=(7.5, 4.4))
    fig.subplots_adjust(left=0.1, right=0.98, bottom=0.17, top=0.9)
    return fig


def _note(fig: Figure, text: str) -> None:
    if text:
        fig.text(0.01, 0.01, text, fontsize="x-small", color="dimgray", ha="left", va="bottom")


def _save(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110, metadata={"Software": None})
    return path


def throughput_plot(group: Group, labels: PlotLabels, lang: str, path: Path) -> Path | None:
    """Bars: x = device count, one bar per column, y = median samples/s; error bars = min-max."""
    frame = _frame(group)
    if frame.empty:
        return None
    hue_order = [name for name in _names(group) if name in set(frame["column"])]
    place, ticks = x_axis(frame["layout"], numeric=False)
    palette = _palette(group)
    width = 0.8 / len(hue_order)
    with mpl.rc_context(_rc(lang)):
        sns.set_style("whitegrid", rc=_rc(lang))
        fig = _figure()
        ax = fig.subplots()
        for i, label in enumerate(hue_order):
            mine = frame[frame["column"] == label].set_index("layout")
            xs = [place[layout] - 0.4 + width * (i + 0.5) for layout in mine.index]
            bars = ax.bar(xs, mine["throughput"], width=width, color=palette[label], label=label)
            for bar, doubted in zip(bars, mine["doubted"], strict=True):
                if doubted:  # a figure with a caveat, as its table's footnote says
                    bar.set_hatch("//")
                    bar.set_edgecolor("black")
            spread = mine.dropna(subset=["low", "high"])
            if len(spread):
                ax.errorbar(
                    [place[layout] - 0.4 + width * (i + 0.5) for layout in spread.index],
                    spread["throughput"],
                    yerr=[
                        spread["throughput"] - spread["low"],
                        spread["high"] - spread["throughput"],
                    ],
                    fmt="none",
                    ecolor="black",
                    elinewidth=1,
                    capsize=3,
                )
        ax.set_xticks(list(place.values()), ticks)
        ax.set(title=labels.title, xlabel=labels.x, ylabel=labels.y)
        ax.legend(title=labels.legend, fontsize="small")
        _note(fig, _notes(labels, frame))
        return _save(fig, path)


def speedup_plot(group: Group, labels: PlotLabels, lang: str, path: Path) -> Path | None:
    """Speedup against device count per column, the ideal line (speedup = devices) and, where
    measured, each column's communication ceiling (dotted, in the column's colour). None where
    no cell beyond one device has a speedup: the 1n1g baseline's 1.0 alone is no scaling."""
    frame = _frame(group).dropna(subset=["speedup"])
    if not (frame["devices"] > 1).any():
        return None
    hue_order = [name for name in _names(group) if name in set(frame["column"])]
    place, ticks = x_axis({"1n1g", *frame["layout"]}, numeric=True)
    frame["x"] = frame["layout"].map(place)
    palette = _palette(group)
    with mpl.rc_context(_rc(lang)):
        sns.set_style("whitegrid", rc=_rc(lang))
        fig = _figure()
        ax = fig.subplots()
        ideal = [Layout.parse(layout).devices for layout in place]
        ax.plot(list(place.values()), ideal, linestyle="--", color="gray", label=labels.ideal)
        for label in hue_order:
            mine = frame[frame["column"] == label].sort_values("x")
            ax.plot(mine["x"], mine["speedup"], marker="o", color=palette[label], label=label)
            doubted = mine[mine["doubted"]]
            if len(doubted):  # hollow: a figure with a caveat, as its table's footnote says
                ax.plot(doubted["x"], doubted["speedup"], linestyle="none", marker="o",
                        markerfacecolor="white", markeredgecolor=palette[label])  # fmt: skip
            ceiling = mine.dropna(subset=["ceiling"])
            if len(ceiling):
                ax.plot(
                    ceiling["x"],
                    ceiling["ceiling"],
                    linestyle=":",
                    marker="_",
                    color=palette[label],
                    label=labels.ceiling.format(column=label),
                )
        ax.set_xticks(list(place.values()), ticks)
        ax.set(title=labels.title, xlabel=labels.x, ylabel=labels.y)
        ax.legend(title=labels.legend, fontsize="small")
        _note(fig, _notes(labels, frame))
        return _save(fig, path)


def wide_deep_plot(
    table: Table, columns: list[str], labels: PlotLabels, lang: str, path: Path
) -> Path | None:
    """Two panels against the swept vocabulary size (log scale): latency per iteration and
    memory, a line per column (`columns`: its labels in words); an OOM or missing cell is no
    point, and a figure the table shows as n/a (a memory without a latency) none in its panel."""
    points = [
        (columns[i], row.x, *value.plotted)
        for row in table.rows
        for i, value in enumerate(row.values)
        if row.x == row.x and any(v == v for v in value.plotted)
    ]
    if not points:
        return None
    frame = pd.DataFrame(points, columns=["column", "x", "latency", "memory"])
    palette = dict(zip(columns, sns.color_palette(n_colors=len(columns)), strict=True))
    with mpl.rc_context(_rc(lang)):
        sns.set_style("whitegrid", rc=_rc(lang))
        fig = Figure(figsize=(10, 4.4))
        fig.subplots_adjust(left=0.08, right=0.98, bottom=0.17, top=0.88, wspace=0.25)
        panels = fig.subplots(1, 2)
        for ax, y, ylabel in zip(panels, ("latency", "memory"), (labels.y, labels.y2), strict=True):
            for label in columns:  # in the table's order, each with its colour
                mine = frame[frame["column"] == label].sort_values("x")
                if len(mine):
                    ax.plot(mine["x"], mine[y], marker="o", color=palette[label], label=label)
            ax.set_xscale("log", base=2)
            ticks = sorted(set(frame["x"]))
            ax.set_xticks(ticks, [f"{x / 1e6:g}M" for x in ticks], fontsize="small")
            ax.minorticks_off()
            ax.set(xlabel=labels.x, ylabel=ylabel)
        panels[0].legend(title=labels.legend, fontsize="small")
        fig.suptitle(labels.title)
        _note(fig, labels.note)
        return _save(fig, path)


def gpt_plot(
    table: Table, columns: list[str], labels: PlotLabels, lang: str, path: Path
) -> Path | None:
    """Bars: one group per configuration, one bar per column, y = achieved TFLOP/s per device,
    each bar labelled with its MFU %."""
    rows = [row for row in table.rows if any(v.plotted[0] == v.plotted[0] for v in row.values)]
    if not rows:
        return None
    width = 0.8 / len(columns)
    palette = dict(zip(columns, sns.color_palette(n_colors=len(columns)), strict=True))
    with mpl.rc_context(_rc(lang)):
        sns.set_style("whitegrid", rc=_rc(lang))
        fig = _figure()
        ax = fig.subplots()
        top = 0.0
        for i, label in enumerate(columns):
            xs, heights, mfus = [], [], []
            for position, row in enumerate(rows):
                tflops, mfu = row.values[i].plotted
                if tflops == tflops:
                    xs.append(position - 0.4 + width * (i + 0.5))
                    heights.append(tflops)
                    mfus.append("" if mfu != mfu else f"{mfu:.1f}%")
            bars = ax.bar(xs, heights, width=width, color=palette[label], label=label)
            ax.bar_label(bars, mfus, fontsize="x-small")
            top = max([top, *heights])
        ax.set_ylim(0, 1.3 * top)  # room above the bars for their labels and the legend
        ax.set_xticks(range(len(rows)), [row.label for row in rows], fontsize="small")
        ax.set(title=labels.title, xlabel=labels.x, ylabel=labels.y)
        ax.legend(title=labels.legend, fontsize="small")
        _note(fig, labels.note)
        return _save(fig, path)
