"""A suite's YAML as the user wrote it: each file a layer of keys that keeps its node tree, so an
error names the file, the line and the key; a key given twice is refused (YAML keeps the last)."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dlperf.errors import ConfigError


def key_path(parts: Sequence[Any]) -> str:
    """`cases[0].precision[1]` from jsonschema's absolute_path."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "<top level>"


@dataclass(frozen=True)
class Layer:
    """One source of config keys: a YAML file (with its node tree, for line numbers) or --config."""

    label: str  # a path, or "--config"
    data: Mapping[str, Any]
    node: yaml.Node | None = field(default=None, compare=False)

    def has(self, parts: Sequence[Any]) -> bool:
        value: Any = self.data
        for part in parts:
            if isinstance(value, Mapping) and part in value:
                value = value[part]
            elif isinstance(value, list) and isinstance(part, int) and part < len(value):
                value = value[part]
            else:
                return False
        return True

    def where(self, parts: Sequence[Any]) -> str:
        """`file:line` of the deepest node of `parts` found in the file, else the label."""
        line = _line_of(self.node, parts) if self.node is not None else None
        return f"{self.label}:{line}" if line else self.label


def _line_of(node: yaml.Node, parts: Sequence[Any]) -> int | None:
    line = node.start_mark.line + 1
    for part in parts:
        if isinstance(node, yaml.MappingNode):
            found = [(k, v) for k, v in node.value if getattr(k, "value", None) == part]
            if not found:
                break
            key, node = found[0]
            line = key.start_mark.line + 1
        elif (
            isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value)
        ):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line


def read_layer(path: str | Path) -> Layer:
    """A YAML file as a config layer; a missing file or a syntax error names the file and line."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except OSError as err:
        raise ConfigError(f"{path}: cannot read: {err.strerror}") from None
    except UnicodeDecodeError as err:
        raise ConfigError(f"{path}: not a text file ({err.reason} at byte {err.start})") from None
    data, node = load_yaml(text, str(path))
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of keys at the top level")
    return Layer(str(path), data, node)


def load_yaml(text: str, label: str) -> tuple[Any, yaml.Node | None]:
    """The data of a YAML document and its node tree (for line numbers), as YAML's safe loader
    reads it, but a key given twice in one mapping is an error: YAML keeps the last silently,
    so a second `cases:` would drop the first case list. Errors name `label` and the line."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        if node is None:
            return None, None
        loop = _alias_loop(node)
        if loop:
            line, where = loop
            raise ConfigError(
                f"{label}:{line}: {where}: an alias of a mapping or list that holds it (its value "
                "would never end): write the value out, or alias another node"
            )
        duplicates = _duplicate_keys(node)
        if duplicates:
            lines = [
                f"{label}:{line}: {where}: duplicate key {key!r} (first at line {first}); "
                "YAML would silently keep only the last: remove one"
                for line, first, key, where in duplicates[:10]
            ]
            if len(lines) == 1:
                raise ConfigError(lines[0])
            raise ConfigError(f"{label}: {len(duplicates)} duplicate keys\n  " + "\n  ".join(lines))
        # Construction flattens merge keys (<<) in place: build the data from a copy, so the
        # tree's lines stay the file's.
        loader = yaml.SafeLoader("")
        try:
            data = loader.construct_document(copy.deepcopy(node))
        finally:
            loader.dispose()
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
        where = f"{label}:{mark.line + 1}" if mark else label
        problem = getattr(err, "problem", None) or str(err)
        raise ConfigError(f"{where}: not valid YAML: {problem}") from None
    return data, node


def _alias_loop(root: yaml.Node) -> tuple[int, str] | None:
    """(line, key path) of the first value that is an alias of a node holding it (`site: &s`
    then `partition: *s` under it): YAML builds a value that contains itself, which every walk
    over the config would follow for ever. None if there is none."""
    done: set[int] = set()  # nodes whose subtrees hold no loop (an alias may repeat them)

    def walk(
        node: yaml.Node, holding: set[int], parts: list[Any], line: int
    ) -> tuple[int, str] | None:
        if id(node) in holding:
            return line, key_path(parts)
        if id(node) in done:
            return None
        if isinstance(node, yaml.MappingNode):
            children = [(getattr(k, "value", "?"), v, k.start_mark.line + 1) for k, v in node.value]
        elif isinstance(node, yaml.SequenceNode):
            children = [(i, v, _item_line(v, node)) for i, v in enumerate(node.value)]
        else:
            children = []
        holding.add(id(node))
        for part, child, child_line in children:
            found = walk(child, holding, [*parts, part], child_line)
            if found:
                return found
        holding.discard(id(node))
        done.add(id(node))
        return None

    return walk(root, set(), [], root.start_mark.line + 1)


def _item_line(item: yaml.Node, sequence: yaml.SequenceNode) -> int:
    """The line of a list's item; an alias has its anchor's place, so the list's where that is
    outside the list."""
    inside = sequence.start_mark.index <= item.start_mark.index <= sequence.end_mark.index
    return (item if inside else sequence).start_mark.line + 1


def _duplicate_keys(root: yaml.Node) -> list[tuple[int, int, Any, str]]:
    """(line, line of the first, key, key path) of each key given twice in a mapping of the
    tree, in document order. Keys compare as their values (`1` and `1.0` are one key)."""
    found: list[tuple[int, int, Any, str]] = []
    seen_nodes: set[int] = set()  # an alias repeats a node (and may contain itself)
    constructor = yaml.SafeLoader("")

    def key_of(key: yaml.Node) -> Any:
        if not isinstance(key, yaml.ScalarNode):
            return None  # a complex key: the constructor refuses it itself
        if key.tag == "tag:yaml.org,2002:merge":
            return "<<"
        value = constructor.construct_object(key, deep=True)
        return value if isinstance(value, (str, int, float, bool)) else str(value)

    def walk(node: yaml.Node, parts: list[Any]) -> None:
        if id(node) in seen_nodes:
            return
        seen_nodes.add(id(node))
        if isinstance(node, yaml.MappingNode):
            first: dict[Any, int] = {}
            for key_node, value_node in node.value:
                key = key_of(key_node)
                line = key_node.start_mark.line + 1
                if key is not None and key in first:
                    found.append((line, first[key], key, key_path([*parts, key])))
                elif key is not None:
                    first[key] = line
                walk(value_node, [*parts, key])
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                walk(item, [*parts, i])

    try:
        walk(root, [])
    finally:
        constructor.dispose()
    return sorted(found, key=lambda d: d[0])


def source_of(parts: Sequence[Any], layers: Sequence[Layer]) -> str:
    """The last layer that sets the key (or its deepest set parent), as file:line or --config."""
    for depth in range(len(parts), 0, -1):
        for layer in reversed(layers):
            if layer.has(parts[:depth]):
                return layer.where(parts[:depth])
    return layers[0].where([]) if layers else "config"  # a key nobody set: the suite lacks it
