"""The suite schema's defaults, read from the schema that owns them (schemas/config.schema.yaml).

A validated suite has every default filled in already (dlperf.config): code handed one indexes
it directly. This is for code that may be handed a dict the schema never filled (a caller's
partial settings, a suite file read as it is written) and needs a key's default.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

import yaml

SCHEMA_FILE = "schemas/config.schema.yaml"  # in the dlperf package


@cache
def schema_data() -> dict[str, Any]:
    """The schema file as written, parsed once per process (callers copy before they change it)."""
    text = resources.files("dlperf").joinpath(SCHEMA_FILE).read_text()
    # libyaml's loader where PyYAML has it: 2 ms, not 17, on every start of the workflow
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def suite_default(*keys: str) -> Any:
    """The default of a suite key, by its path: suite_default("variance", "max_cv_pct") is 5;
    a case's key is under "cases": suite_default("cases", "precision") is ["fp32"].

    A key the schema gives no default is a KeyError naming it: the caller asked for a fact the
    schema does not own.
    """
    data = schema_data()
    node = data
    for i, key in enumerate(keys):
        node = _resolve_node(data, node)
        if "properties" not in node and "items" in node:  # a list's items: cases
            node = _resolve_node(data, node["items"])
        try:
            node = node["properties"][key]
        except KeyError:
            raise KeyError(f"the suite schema has no key {'.'.join(keys[: i + 1])}") from None
    if "default" not in node:
        node = _resolve_node(data, node)
    if "default" not in node:
        raise KeyError(f"the suite schema gives {'.'.join(keys)} no default")
    return copy.deepcopy(node["default"])


def case_setting(case: Mapping[str, Any], key: str) -> Any:
    """A case's `key`, or the schema's default where the case leaves it out (adapters check
    cases validated or not)."""
    return case[key] if key in case else suite_default("cases", key)


def _resolve_node(data: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """The schema a `$ref` ("#/$defs/site") points to; any other node as it is."""
    while "$ref" in node:
        target = data
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node
