"""The benchmark matrix: layouts, cells and their stable ids."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import re
from dataclasses import dataclass
from typing import Any

LAYOUT_RE = re.compile(r"\A(?P<nodes>[1-9][0-9]*)n(?P<gpus>[1-9][0-9]*)g\Z")
# Cell ids are path components: lowercase letters, digits and a few separators only, never "..".
CELL_ID_RE = r"[a-z0-9_]+(?:\.[a-z0-9_-]+){5}"
_CELL_ID = re.compile(
    r"\A(?P<framework>[a-z0-9_]+)\.(?P<model>[a-z0-9_]+)\.(?P<precision>[a-z0-9_]+)"
    r"\.(?P<xla>xla|noxla)\.b(?P<batch_size>[0-9]+|max)(?:-(?P<variant>[a-z0-9_]+))?"
    r"\.(?P<layout>[0-9]+n[0-9]+g)\Z"
)


@functools.total_ordering
@dataclass(frozen=True)
class Layout:
    """N nodes with G devices each (DLPerf's NnGg); sorted by devices, then nodes."""

    nodes: int
    gpus_per_node: int

    @classmethod
    def parse(cls, text: str) -> Layout:
        match = LAYOUT_RE.match(text)
        if not match:
            raise ValueError(f"layout {text!r} is not of the form NnGg (e.g. 1n8g)")
        return cls(int(match["nodes"]), int(match["gpus"]))

    @property
    def devices(self) -> int:
        return self.nodes * self.gpus_per_node

    def __str__(self) -> str:
        return f"{self.nodes}n{self.gpus_per_node}g"

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Layout):
            return NotImplemented
        return (self.devices, self.nodes) < (other.devices, other.nodes)


@dataclass(frozen=True, order=True)
class Cell:
    """One combination of framework, model, precision, xla, batch size (per device) and layout."""

    framework: str
    model: str
    precision: str
    xla: bool
    batch_size: int | str  # a number, or "max"
    layout: Layout
    variant: str = "default"  # e.g. "noclip": a case option that changes what is measured

    @property
    def id(self) -> str:
        """`framework.model.precision.(no)xla.b<bsz>[-variant].NnGg`; `Cell.parse` reads it back."""
        return f"{self.framework}.{self.group_id}.{self.layout}"

    @property
    def group_id(self) -> str:
        """The id without framework and layout: cells compared side by side in one report table."""
        xla = "xla" if self.xla else "noxla"
        variant = "" if self.variant == "default" else f"-{self.variant}"
        return f"{self.model}.{self.precision}.{xla}.b{self.batch_size}{variant}"

    @classmethod
    def parse(cls, cell_id: str) -> Cell:
        """The cell an id names; ValueError naming the id when it is not one."""
        match = _CELL_ID.match(cell_id)
        if not match:
            raise ValueError(
                f"{cell_id!r} is not a cell id (framework.model.precision.xla|noxla.b<n>[-variant].NnGg)"
            )
        bsz = match["batch_size"]
        return cls(
            framework=match["framework"],
            model=match["model"],
            precision=match["precision"],
            xla=match["xla"] == "xla",
            batch_size=int(bsz) if bsz.isdigit() else bsz,
            layout=Layout.parse(match["layout"]),
            variant=match["variant"] or "default",
        )

    @classmethod
    def from_key(cls, key: dict[str, Any]) -> Cell:
        """The cell of a table row or manifest (`key()`'s columns)."""
        bsz = str(key["batch_size"])
        return cls(
            framework=key["framework"],
            model=key["model"],
            precision=key["precision"],
            xla=bool(key["xla"]),
            batch_size=int(bsz) if bsz.isdigit() else bsz,
            layout=Layout.parse(key["layout"]),
            variant=key.get("variant") or "default",
        )

    @property
    def baseline(self) -> Cell:
        """The same cell at 1n1g: the denominator of speedup."""
        return dataclasses.replace(self, layout=Layout(1, 1))

    def key(self) -> dict[str, Any]:
        """The cell's dimensions as flat, table-ready columns."""
        return {
            "cell_id": self.id,
            "framework": self.framework,
            "model": self.model,
            "precision": self.precision,
            "xla": self.xla,
            "batch_size": str(self.batch_size),
            "variant": self.variant,
            "layout": str(self.layout),
            "nodes": self.layout.nodes,
            "gpus_per_node": self.layout.gpus_per_node,
            "devices": self.layout.devices,
        }


@dataclass(frozen=True)
class CellSpec:
    """A cell plus everything needed to launch it: the case's adapter options."""

    cell: Cell
    options: dict[str, Any]  # adapter-specific: model sizes, steps, image, flags
    swept: dict[str, Any] = dataclasses.field(default_factory=dict)  # this cell's sweep values
    search: dict[str, Any] = dataclasses.field(default_factory=dict)  # the case's max_search

    @property
    def id(self) -> str:
        return self.cell.id


def sweep_slug(name: str, value: Any) -> str:
    """A swept option's part of the variant: readable, safe in a path and stable for the same
    value, e.g. vocab_size_3200000, sample_rate_0p1, fsdp_true."""
    text = str(value).lower().replace(".", "p").replace("-", "m").replace("+", "")
    return f"{name}_{re.sub(r'[^a-z0-9_]', '_', text)}"


def _slug_part(slug: str) -> re.Pattern[str]:
    return re.compile(rf"(?:^|_){re.escape(slug)}(?=_|$)")


def names_slug(variant: str, slug: str) -> bool:
    """Whether a variant holds `slug` as one of the parts it was joined from, not the start of a
    longer one (compile_mode_max is no part of compile_mode_maxmautotune)."""
    return _slug_part(slug).search(variant) is not None


def without_slug(variant: str, slug: str) -> str:
    """The variant with the part `slug` taken out (and the underscore joining it)."""
    return _slug_part(slug).sub("", variant).strip("_")


def with_slug_replaced(variant: str, slug: str, by: str) -> str:
    """The variant with the part `slug` (not a longer part that begins with it) replaced by `by`."""
    return _slug_part(slug).sub(lambda part: part[0][: -len(slug)] + by, variant)


def sweep_points(sweep: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Every combination of the swept options' values (one empty point: no sweep)."""
    names = list(sweep)
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*sweep.values())]


def expand_case(case: dict[str, Any]) -> list[CellSpec]:
    """Expand one validated `cases` entry into its cells (the product of its lists, and of its
    swept options' values, each of which names its cells through the variant)."""
    specs = []
    base_variant = case.get("variant", "default")
    for point, precision, xla, bsz, layout in itertools.product(
        sweep_points(case.get("sweep", {})),
        case["precision"],
        case["xla"],
        case["batch_size"],
        case["layouts"],
    ):
        slugs = [sweep_slug(name, value) for name, value in point.items()]
        variant = "_".join(([] if base_variant == "default" else [base_variant]) + slugs)
        cell = Cell(
            framework=case["framework"],
            model=case["model"],
            precision=precision,
            xla=xla,
            batch_size=bsz,
            layout=Layout.parse(layout),
            variant=variant or "default",
        )
        options = dict(case.get("options", {}))
        options.update(case.get("precision_options", {}).get(precision, {}))
        options.update(point)
        specs.append(CellSpec(cell, options, point, case.get("max_search", {})))
    return specs
