"""What a log states about its own run's shape (batch size, devices, nodes), held to the cell.

A log of another batch size or device count than its cell would otherwise give a figure scaled by
their ratio (a source that multiplies iterations by the cell's batch), or the log's own figure
filed under the wrong cell (a source that reads the batch from the log). Where a source's log
prints such a value, its parser lists it as a `Stated` and reads its lines through `checker`: a
value that disagrees with the run facts is a ParseError at that line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dlperf.parse.records import ParseError
from dlperf.parse.upstream.lines import Line
from dlperf.parse.upstream.ranks import RunFacts

# what a value is held to: its words in messages, and the run facts' value
FACTS: dict[str, tuple[str, Callable[[RunFacts], int]]] = {
    "per_device": ("batch size per device", lambda f: f.batch_size_per_device),
    "global": ("global batch (per device x devices)", lambda f: f.global_batch),
    "world": ("number of devices", lambda f: f.world_size),
    "nodes": ("number of nodes", lambda f: f.nodes),
    "per_node": ("devices per node", lambda f: f.gpus_per_node),
    "node_batch": (
        "batch per node (per device x devices per node)",
        lambda f: f.batch_size_per_device * f.gpus_per_node,
    ),
}


@dataclass(frozen=True)
class Stated:
    """A value a log prints: `pattern`'s group 1 (an integer) must equal the run facts' `fact`
    (a key of FACTS), or one of `facts` where the source's meaning is one of several."""

    pattern: re.Pattern[str]
    name: str  # how the log names it
    fact: str | tuple[str, ...]

    def facts(self) -> tuple[str, ...]:
        return (self.fact,) if isinstance(self.fact, str) else self.fact


def stated(pattern: str, name: str, fact: str | tuple[str, ...]) -> Stated:
    for key in (fact,) if isinstance(fact, str) else fact:
        if key not in FACTS:
            raise ValueError(f"unknown fact {key!r}")
    return Stated(re.compile(pattern), name, fact)


def argument(key: str, fact: str | tuple[str, ...], name: str = "") -> Stated:
    """An argument dump's `  key ........ value` line (Megatron-LM's and OneFlow-GPT's
    print_args, the OneFlow models' config.py), the value an integer."""
    return stated(rf"^{key} \.+ (\d+)$", name or key, fact)


def check_value(
    name: str, value: int, fact: str | tuple[str, ...], facts: RunFacts, path: str, lineno: int
) -> None:
    """A ParseError at path:lineno when `value` (the log's `name`) is not the facts' `fact`."""
    keys = (fact,) if isinstance(fact, str) else fact
    expected = [FACTS[key][1](facts) for key in keys]
    if value in expected:
        return
    wanted = " or ".join(f"{FACTS[k][0]} {e}" for k, e in zip(keys, expected, strict=True))
    raise ParseError(
        f"the log says {name} = {value} but the cell's {wanted}: "
        "a log of another run shape than its cell",
        path,
        lineno,
    )


def checker(
    facts: RunFacts, specs: Sequence[Stated], then: Callable[[Line], None] | None = None
) -> Callable[[Line], None]:
    """An `other` callback for rows.collect: each line any of `specs` finds is checked (every
    occurrence, every rank's copy), then the line goes on to `then`."""

    def other(line: Line) -> None:
        for spec in specs:
            for m in spec.pattern.finditer(line.text):
                check_value(spec.name, int(m[1]), spec.fact, facts, line.path, line.lineno)
        if then is not None:
            then(line)

    return other
