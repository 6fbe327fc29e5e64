"""DLPerf's special cases in the form its README published them, from the cells table:

- Wide & Deep: per vocabulary size (the swept option), each framework's latency per iteration
  and memory per device, "OOM" where it ran out, and the memory ratio of the first two (DLPerf's
  OneFlow over HugeCTR);
- InsightFace: per layout, the largest num_classes each framework trains (the value a
  `sweep: {num_classes: [max]}` search found), "OOM" where even the search's start ran out;
- GPT: per configuration (layout, batch size, variant), each framework's sequences/s, tokens/s,
  achieved TFLOP/s per device and MFU.

Latency per iteration is a published table's own figure (column latency_ms), or the measured
window's mean: the job's samples per iteration (batch per device x devices) over the cell's median
samples/s. Memory is the cell's median peak of its largest rank
(the allocator's peak on a GPU, peak RSS on a CPU)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

import pandas as pd

from dlperf.i18n import Phrase, Text
from dlperf.matrix import Layout, names_slug, sweep_slug, without_slug
from dlperf.report import fmt
from dlperf.report.figures import format_figure
from dlperf.report.order import batch_size_key, layout_key, natural_key, precision_key
from dlperf.status import Status, status_counts
from dlperf.vocabulary import MODELS, PRECISION_NAMES

ABSENT = "absent"  # no such cell: not planned for this column and row (shown as -)
DOUBT_MARK = " †"  # after a figure with a caveat in "Read this first", as the summary marks it

NAN = float("nan")


@dataclass(frozen=True)
class Value:
    status: str  # the cell's status, or "absent"
    first: str  # W&D: latency ms; InsightFace: the largest value; GPT: achieved TFLOP/s
    second: str  # W&D: memory MiB; InsightFace: ""; GPT: MFU %
    third: str = ""  # GPT: sequences/s (what a published table without TFLOP/s prints)
    fourth: str = ""  # GPT: tokens/s (sequences/s x tokens per sequence)
    plotted: tuple[float, float] = (NAN, NAN)  # first and second as numbers (nan: none), plotted


@dataclass(frozen=True)
class Row:
    label: str  # W&D: the swept values (vocab_size=3200000); GPT: layout, batch, variant
    values: tuple[Value, ...]  # one per column
    ratios: tuple[str, ...] = ()  # W&D: per Table.ratios pair, its memory ratio (n/a: not both)
    x: float = NAN  # W&D: the swept value, where it is one number (the plot's x)


@dataclass(frozen=True)
class Table:
    model: str  # wide_deep, insightface or gpt
    precision: str  # its display name
    layout: str  # W&D: the layout of the whole table; else ""
    batch_size: str  # W&D and InsightFace: per device; GPT: ""
    columns: tuple[Text, ...]  # framework labels (dlperf.report.names)
    rows: tuple[Row, ...]
    option: str = ""  # InsightFace: the option searched
    ratios: tuple[tuple[int, int], ...] = ()  # W&D: (column, column) whose memory is compared
    flops_methods: tuple[tuple[Text, str], ...] = ()  # GPT: (column, how its FLOPs were had)


def special_tables(
    cells: pd.DataFrame,
    label: Callable[[dict[str, Any]], Text],
    doubted: AbstractSet[tuple[str, str]] = frozenset(),
) -> list[Table]:
    """The W&D and GPT tables of the cells (measured and baselines); `label(row)` names a cell's
    column (framework, and the baseline it comes from); `doubted`: (cell id, source) of the
    figures to doubt (caveats.doubted), marked."""
    if not len(cells):
        return []
    rows = [
        dict(r)
        | {
            "_column": _column(dict(r), label),
            "_mark": DOUBT_MARK if (r["cell_id"], r["source"]) in doubted else "",
        }
        for r in cells.to_dict("records")
    ]
    of = {model: [r for r in rows if r["model"] == model] for model in MODELS}
    return _wide_deep(of["wide_deep"]) + _largest(of["insightface"]) + _gpt(of["gpt"])


def _column(row: dict[str, Any], label: Callable[[dict[str, Any]], Text]) -> Text:
    """A cell's column: its label, and what of its variant its table's row does not name (two
    cases of one framework told apart by `variant`, InsightFace with and without partial FC), so
    no two cells share one column. GPT's rows name the whole variant."""
    setting = json.loads(_setting(row)) if _setting(row) else {}
    named = {"wide_deep": list(setting), "insightface": [_searched(row)]}.get(row["model"])
    rest = "" if named is None else _variant_less(str(row["variant"]), named, setting)
    return Phrase.of("column.variant", label=label(row), variant=rest) if rest else label(row)


def _variant_less(variant: str, options: list[str], setting: dict[str, Any]) -> str:
    """The variant without the sweep slugs of `options` (their value, or `max` for a search);
    '' where nothing else is left."""
    for option in filter(None, options):
        for value in (setting.get(option), "max"):
            variant = without_slug(variant, sweep_slug(option, value))
    return "" if variant in ("", "default") else variant


def _wide_deep(rows: list[dict[str, Any]]) -> list[Table]:
    tables = []
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["precision"], str(r["batch_size"]), r["layout"]), []).append(r)
    ordered = sorted(  # by layout, as DLPerf's tables (its batch per device falls as it grows)
        groups.items(),
        key=lambda kv: (precision_key(kv[0][0]), layout_key(kv[0][2]), batch_size_key(kv[0][1])),
    )
    for (precision, batch_size, layout), members in ordered:
        columns = tuple(dict.fromkeys(r["_column"] for r in members))
        pairs = _ratio_pairs(members, columns)
        settings = sorted({_setting(r) for r in members}, key=_setting_order)
        table_rows = []
        for setting in settings:
            by_column = {r["_column"]: r for r in members if _setting(r) == setting}
            values = tuple(_wide_deep_value(by_column.get(c), batch_size) for c in columns)
            ratios = tuple(
                _memory_ratio(by_column, columns[i], columns[j], batch_size) for i, j in pairs
            )
            table_rows.append(Row(_setting_label(setting), values, ratios, _swept_number(setting)))
        name = PRECISION_NAMES.get(precision, precision)
        table = Table("wide_deep", name, layout, batch_size, columns, tuple(table_rows))
        tables.append(dataclasses.replace(table, ratios=pairs))
    return tables


def _wide_deep_value(row: dict[str, Any] | None, batch_size: str) -> Value:
    """Latency and memory; under a `max` batch, with the batch each framework found ("20.5 (b
    8192)"): frameworks side by side then trained different batches."""
    if row is None:
        return Value(ABSENT, "", "")
    if row["status"] != Status.OK:
        return Value(str(row["status"]), "", "")
    latency_ms = _number(row.get("latency_ms"))  # as a published table prints it
    shown = fmt.as_printed(latency_ms)
    if latency_ms != latency_ms:  # nan: measured, from the window's throughput
        samples_per_iteration = _number(row.get("batch_size_resolved")) * _number(row["devices"])
        latency_ms = _ratio(1000 * samples_per_iteration, _number(row["throughput_median"]))
        shown = fmt.milliseconds(latency_ms)
    memory_mib = _number(row.get("peak_mem_mib"))
    if batch_size == "max":
        shown += f" (b{fmt.integer(_number(row.get('batch_size_resolved')))})"
    shown = _marked(shown + _out_of_memory(row), row.get("_mark", ""))
    return Value(Status.OK, shown, fmt.integer(memory_mib), plotted=(latency_ms, memory_mib))


def _out_of_memory(row: dict[str, Any]) -> str:
    """' (4/5 OOM)' for an ok cell some of whose runs ran out of memory: a vocabulary or a largest
    value its runs could not all train is no plain figure ('' for none)."""
    counts = status_counts(row.get("statuses"))
    oom = counts.get(Status.OOM, 0)
    return f" ({oom}/{sum(counts.values())} OOM)" if oom else ""


def _ratio_pairs(
    members: list[dict[str, Any]], columns: tuple[Text, ...]
) -> tuple[tuple[int, int], ...]:
    """The columns whose memory a W&D table compares, as DLPerf's compares OneFlow's with
    HugeCTR's: the first two of each source (what was measured, each baseline), else, where no
    source has two (one framework per table given), the first two columns."""
    source = {r["_column"]: r["source"] for r in members}
    by_source: dict[str, list[int]] = {}
    for index, column in enumerate(columns):
        by_source.setdefault(source[column], []).append(index)
    pairs = tuple((found[0], found[1]) for found in by_source.values() if len(found) > 1)
    return pairs or (((0, 1),) if len(columns) > 1 else ())


def _memory_ratio(
    by_column: dict[Text, dict[str, Any]], one: Text, other: Text, batch_size: str
) -> str:
    """Column `one`'s memory over column `other`'s in one row (n/a without both, and between two
    `max` batches that differ: memory at two batches)."""
    first, second = by_column.get(one), by_column.get(other)
    if not (first and second and first["status"] == second["status"] == Status.OK):
        return fmt.NA
    found = [_number(r.get("batch_size_resolved")) for r in (first, second)]
    if batch_size == "max" and found[0] != found[1]:
        return fmt.NA
    return fmt.speedup(
        _ratio(_number(first.get("peak_mem_mib")), _number(second.get("peak_mem_mib")))
    )


def _ratio(a: float, b: float) -> float:
    """a / b; nan where b is 0 (a table's 0 MiB or 0 samples/s gives no ratio, and no crash)."""
    return a / b if b else NAN


def _largest(rows: list[dict[str, Any]]) -> list[Table]:
    """Cells whose variant searched an option (`<option>_max`): per layout, the value found."""
    tables = []
    searched = [r for r in rows if _searched(r)]
    keys = {(r["precision"], str(r["batch_size"]), _searched(r)) for r in searched}
    for key in sorted(keys, key=lambda k: (precision_key(k[0]), batch_size_key(k[1]), k[2])):
        precision, batch_size, option = key
        members = [
            r for r in searched if (r["precision"], str(r["batch_size"]), _searched(r)) == key
        ]
        columns = tuple(dict.fromkeys(r["_column"] for r in members))
        layouts = sorted({(int(r["devices"]), r["layout"]) for r in members})
        table_rows = []
        for _, layout in layouts:
            at = {r["_column"]: r for r in members if r["layout"] == layout}
            values = tuple(_largest_value(at.get(c), option) for c in columns)
            table_rows.append(Row(layout, values))
        name = PRECISION_NAMES.get(precision, precision)
        tables.append(
            Table("insightface", name, "", batch_size, columns, tuple(table_rows), option)
        )
    return tables


def _searched(row: dict[str, Any]) -> str:
    """The option a cell's search found the largest value of ('' for none): the swept option
    whose `max` is a part of the cell's variant (another option's value that begins with max,
    compile_mode max-autotune, is none)."""
    setting = json.loads(_setting(row)) if _setting(row) else {}
    variant = str(row["variant"])
    return next((k for k in setting if names_slug(variant, sweep_slug(k, "max"))), "")


def _largest_value(row: dict[str, Any] | None, option: str) -> Value:
    if row is None:
        return Value(ABSENT, "", "")
    value = (json.loads(_setting(row)) if _setting(row) else {}).get(option)
    if row["status"] != Status.OK:
        return Value(str(row["status"]), "", "")
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # 4.0 as JSON writes a whole float
    if not isinstance(value, int) or isinstance(value, bool):
        return Value(Status.PARSE_ERROR, "", "")  # an ok search without a whole largest value
    bound = "≥ " if fmt.is_number(row.get("search_ceiling")) else ""  # its search's ceiling
    return Value(Status.OK, f"{bound}{value:,}{_out_of_memory(row)}{row.get('_mark', '')}", "")


def _gpt(rows: list[dict[str, Any]]) -> list[Table]:
    tables = []
    for precision in sorted({r["precision"] for r in rows}, key=precision_key):
        members = [r for r in rows if r["precision"] == precision]
        columns = tuple(dict.fromkeys(r["_column"] for r in members))
        configurations = sorted(
            {_configuration(r) for r in members},
            key=lambda c: (c[0], layout_key(c[1]), batch_size_key(c[2]), natural_key(c[3])),
        )
        table_rows = []
        for devices, layout, batch, variant in configurations:
            at = {
                r["_column"]: r
                for r in members
                if _configuration(r) == (devices, layout, batch, variant)
            }
            text = f"{layout}, b{batch}" + ("" if variant == "default" else f", {variant}")
            table_rows.append(Row(text, tuple(_gpt_value(at.get(c)) for c in columns)))
        name = PRECISION_NAMES.get(precision, precision)
        methods = tuple(
            (c, "; ".join(sorted({str(r["flops_method"]) for r in members if _flops_of(r, c)})))
            for c in columns
            if any(_flops_of(r, c) for r in members)
        )
        tables.append(Table("gpt", name, "", "", columns, tuple(table_rows), flops_methods=methods))
    return tables


def _flops_of(row: dict[str, Any], column: Text) -> bool:
    """Whether a cell of this column states how its FLOPs were had (a published table does not)."""
    method = row.get("flops_method")
    return row["_column"] == column and isinstance(method, str) and bool(method)


def _configuration(row: dict[str, Any]) -> tuple[int, str, str, str]:
    """Devices from the layout: a published table's devices column may read 8.0."""
    devices = Layout.parse(row["layout"]).devices
    return (devices, row["layout"], str(row["batch_size"]), row["variant"])


def _gpt_value(row: dict[str, Any] | None) -> Value:
    if row is None:
        return Value(ABSENT, "", "")
    if row["status"] != Status.OK:
        return Value(str(row["status"]), "", "")
    mark = row.get("_mark", "")
    return Value(
        Status.OK,
        _marked(format_figure("tflops", row), mark),  # as every table of the report writes it
        format_figure("mfu", row),
        _marked(fmt.throughput(row.get("throughput_median")), mark),
        fmt.integer(  # a whole number of tokens: 49557, not 49556.96
            _number(row.get("throughput_median")) * _number(row.get("tokens_per_sample"))
        ),
        plotted=(_number(row.get("achieved_tflops")), _number(row.get("mfu_pct"))),
    )


def _marked(shown: str, mark: str) -> str:
    """A figure with its doubt mark; n/a has none to doubt."""
    return shown if shown == fmt.NA else shown + mark


def _setting(row: dict[str, Any]) -> str:
    value = row.get("setting")
    return value if isinstance(value, str) else ""


def _setting_order(setting: str) -> tuple[Any, ...]:
    """Numbers in their order, then the values that are not (a `max` no search resolved)."""
    values = json.loads(setting) if setting else {}
    return tuple((k, _value_order(v)) for k, v in values.items())


def _value_order(value: Any) -> tuple[int, float, str]:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (0, value, "")
    return (1, 0, str(value))


def _swept_number(setting: str) -> float:
    """The swept value of a one-option setting, where it is a number (else nan)."""
    values = list((json.loads(setting) if setting else {}).values())
    if len(values) == 1 and isinstance(values[0], int | float) and not isinstance(values[0], bool):
        return float(values[0])
    return NAN


def _setting_label(setting: str) -> str:
    values = json.loads(setting) if setting else {}
    return ", ".join(f"{k}={v:,}" if isinstance(v, int) else f"{k}={v}" for k, v in values.items())


def _number(value: Any) -> float:
    return float(value) if fmt.is_number(value) else float("nan")
