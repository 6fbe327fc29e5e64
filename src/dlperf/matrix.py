"""The benchmark matrix: layouts, cells and their stable ids."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Any

LAYOUT_RE = re.compile(r"^(?P<nodes>[1-9][0-9]*)n(?P<gpus>[1-9][0-9]*)g$")
# Cell ids are path components: lowercase letters, digits and a few separators only, never "..".
CELL_ID_RE = r"[a-z0-9_]+(?:\.[a-z0-9_-]+){5}"
PRECISIONS = ("fp32", "amp")


@dataclass(frozen=True, order=True)
class Layout:
    """N nodes with G devices each (DLPerf's NnGg)."""

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
        xla = "xla" if self.xla else "noxla"
        return ".".join(
            [
                self.framework,
                self.model,
                self.precision,
                xla,
                f"b{self.batch_size}" + ("" if self.variant == "default" else f"-{self.variant}"),
                str(self.layout),
            ]
        )

    @property
    def baseline(self) -> Cell:
        """The same cell at 1n1g: the denominator of speedup."""
        return Cell(
            self.framework,
            self.model,
            self.precision,
            self.xla,
            self.batch_size,
            Layout(1, 1),
            self.variant,
        )

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

    @property
    def id(self) -> str:
        return self.cell.id


def expand_case(case: dict[str, Any]) -> list[CellSpec]:
    """Expand one validated `cases` entry into its cells (the product of its lists)."""
    specs = []
    for precision, xla, bsz, layout in itertools.product(
        case["precision"], case["xla"], case["batch_size"], case["layouts"]
    ):
        cell = Cell(
            framework=case["framework"],
            model=case["model"],
            precision=precision,
            xla=xla,
            batch_size=bsz,
            layout=Layout.parse(layout),
            variant=case.get("variant", "default"),
        )
        options = dict(case.get("options", {}))
        options.update(case.get("precision_options", {}).get(precision, {}))
        specs.append(CellSpec(cell, options))
    return specs
