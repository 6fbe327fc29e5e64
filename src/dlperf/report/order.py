"""The order the report lists things in: frameworks and models as the config names them, then
precisions, batch sizes and layouts in their natural order."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pandas as pd

from dlperf.matrix import Cell, Layout
from dlperf.report.load import MEASURED
from dlperf.vocabulary import PRECISIONS


def batch_size_key(batch_size: str) -> tuple[int, int, str]:
    """Numbers in numeric order, then words (`max`)."""
    return (0, int(batch_size), "") if str(batch_size).isdigit() else (1, 0, str(batch_size))


def natural_key(text: str) -> tuple[Any, ...]:
    """Text with its numbers in numeric order: vocab_size_3200000 before vocab_size_12800000."""
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", text)
    )


def layout_key(layout: str) -> tuple[int, int, str]:
    """By devices, then nodes: 1n1g, 1n2g, 2n1g, 1n4g, 2n2g..."""
    parsed = Layout.parse(layout)
    return (parsed.devices, parsed.nodes, layout)


def cell_id_key(cell_id: str) -> tuple[Any, ...]:
    """A cell id's parts in their natural order: b8 before b16, 1n2g before 1n16g (text order put
    them the other way round)."""
    try:
        c = Cell.parse(cell_id)
    except ValueError:
        return (1, natural_key(cell_id))
    batch, variant, layout = batch_size_key(str(c.batch_size)), natural_key(c.variant), c.layout
    head = (c.framework, c.model, precision_key(c.precision), c.xla)
    return (0, *head, batch, variant, layout_key(str(layout)))


def precision_key(precision: str) -> tuple[int, str]:
    return _index(list(PRECISIONS), precision)


def _index(items: list[str], value: str) -> tuple[int, str]:
    return (items.index(value) if value in items else len(items), value)


class Order:
    """Sort keys: frameworks and models in the order the config names them (else the tables'),
    measured cells before the baselines in the order the config lists them."""

    def __init__(self, config: Mapping[str, Any], cells: pd.DataFrame) -> None:
        cases = config["cases"]
        self.frameworks = list(
            dict.fromkeys([c["framework"] for c in cases] + list(cells["framework"]))
        )
        self.models = list(dict.fromkeys([c["model"] for c in cases] + list(cells["model"])))
        self.sources = list(
            dict.fromkeys(
                [MEASURED] + [b["name"] for b in config["baselines"]] + list(cells["source"])
            )
        )

    def framework(self, name: str) -> tuple[int, str]:
        return _index(self.frameworks, name)

    def model(self, name: str) -> tuple[int, str]:
        return _index(self.models, name)

    def group(self, key: tuple[Any, ...]) -> tuple[Any, ...]:
        """A results table's key (model, precision, table batch size)."""
        model, precision, batch_size = key
        return (self.model(model), precision_key(precision), batch_size_key(batch_size))

    def column(self, key: tuple[Any, ...]) -> tuple[Any, ...]:
        """A column's key (source, framework, xla, variant, batch size): the default variant
        and no XLA first."""
        source, framework, xla, variant, batch_size = key
        return (
            _index(self.sources, source),
            self.framework(framework),
            variant != "default",
            natural_key(variant),
            bool(xla),
            batch_size_key(batch_size),
        )
