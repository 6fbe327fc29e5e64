"""Whether a value read from JSON is of a declared Python type (`int`, `float | None`,
`list[str]`, `dict[str, Any]`), and how to say which it should have been: the typed records
(dlperf.launch.record) check what they read with it, naming the key at fault."""

from __future__ import annotations

import json
import math
import types
import typing
from typing import Any

_TYPE_NAMES = {int: "an integer", float: "a finite number", str: "a string", bool: "true or false"}
_PLURALS = {str: "strings", int: "integers", float: "numbers", dict: "objects"}


def conforms(value: Any, hint: Any) -> bool:
    """Whether a JSON value is of a declared type: true is no number, a float is finite."""
    if hint is Any:
        return True
    if hint is type(None):
        return value is None
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(conforms(value, arg) for arg in typing.get_args(hint))
    if origin is list:
        (item,) = typing.get_args(hint)
        return isinstance(value, list) and all(conforms(v, item) for v in value)
    if origin is dict:
        item = typing.get_args(hint)[1]
        return isinstance(value, dict) and all(conforms(v, item) for v in value.values())
    if isinstance(value, bool):
        return hint is bool
    if hint is float:
        return isinstance(value, int | float) and math.isfinite(value)
    return isinstance(value, hint)


def type_name(hint: Any) -> str:
    """'a finite number or null', 'a list of strings', 'an object'."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        names = [type_name(a) for a in args if a is not type(None)]
        return " or ".join(names) + (" or null" if type(None) in args else "")
    item = _PLURALS.get(typing.get_origin(args[-1]) or args[-1]) if args else None
    if origin is list:
        return f"a list of {item}" if item else "a list"
    if origin is dict:
        return f"an object of {item}" if item else "an object"
    return _TYPE_NAMES.get(hint, getattr(hint, "__name__", str(hint)))


def shown(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def strict_integers(validator_class: Any) -> Any:
    """A jsonschema validator class whose `integer` is a number written without a fraction: JSON
    Schema counts 2000.0 as one, and a workload's flag (argparse's int), an upstream script's
    argument and a cell id (b16.0, vocab_size_2000p0) then read 2000.0 (YAML's 6.4e+7 is one)."""
    import jsonschema  # here: the records read this module without it

    def integer(_: Any, value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    checker = validator_class.TYPE_CHECKER.redefine("integer", integer)
    return jsonschema.validators.extend(validator_class, type_checker=checker)
