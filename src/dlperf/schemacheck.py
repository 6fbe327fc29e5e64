"""The suite schema as dlperf validates it, and its errors in words.

The schema file (dlperf.defaults) with the framework and model names of their registries filled
in; a validator that fills `default`s while it validates, reads `pattern` as JSON Schema means it
and refuses a float where an integer is due; each error at the layer (file:line, or --config)
that set the key, in words a user acts on."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import jsonschema

from dlperf.defaults import schema_data
from dlperf.jsontypes import strict_integers
from dlperf.layers import Layer, key_path, source_of


def schema() -> dict[str, Any]:
    """The suite schema, with the framework and model names taken from their registries."""
    from dlperf.adapters import REGISTRY
    from dlperf.vocabulary import DEVICES, MODELS, PRECISIONS

    loaded = copy.deepcopy(schema_data())  # parsed once (dlperf.defaults); filled here
    case = loaded["$defs"]["case"]["properties"]
    case["framework"]["enum"] = list(REGISTRY)
    case["model"]["enum"] = list(MODELS)
    case["precision"]["items"]["enum"] = list(PRECISIONS)
    loaded["properties"]["device"]["enum"] = list(DEVICES)
    site = loaded["$defs"]["site"]["properties"]
    site["environments"]["properties"]["python"]["propertyNames"] = {"enum": list(REGISTRY)}
    return loaded


def _ecma_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    """`pattern` as JSON Schema means it (ECMA-262): `$` ends the text. Python's `$` also matches
    before a final newline, which would let "abc\\n" through a `^[a-z]+$` id pattern."""
    if isinstance(instance, str):
        python = re.sub(r"(?<!\\)\$$", r"\\Z", pattern)
        if not re.search(python, instance):
            yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


def _with_defaults(validator_class: Any) -> Any:
    """A validator that fills `default`s while it validates (as snakemake.utils.validate does)."""
    validate_properties = validator_class.VALIDATORS["properties"]

    def fill(validator, properties, instance, schema):  # noqa: ANN001
        if isinstance(instance, dict):
            for name, sub in properties.items():
                if "default" in sub and name not in instance:
                    instance[name] = copy.deepcopy(sub["default"])
        yield from validate_properties(validator, properties, instance, schema)

    return jsonschema.validators.extend(
        validator_class, {"properties": fill, "pattern": _ecma_pattern}
    )


_Validator = _with_defaults(strict_integers(jsonschema.Draft202012Validator))


def schema_errors(config: dict[str, Any], layers: Sequence[Layer]) -> list[str]:
    """The schema's errors in `config` (its defaults filled in place), each located in `layers`,
    in the order of their keys (the first ten)."""
    errors = sorted(_Validator(schema()).iter_errors(config), key=lambda e: list(e.absolute_path))
    return [_located(e, layers) for e in errors[:10]]


def _located(error: jsonschema.ValidationError, layers: Sequence[Layer]) -> str:
    parts = list(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {}))
        extra = [k for k in error.instance if k not in allowed]
        parts += extra[:1]
    if "propertyNames" in error.schema_path:  # the key is at fault: its line, not its mapping's
        parts.append(error.instance)
    return f"{source_of(parts, layers)}: {key_path(list(error.absolute_path))}: {_message(error)}"


def _message(error: jsonschema.ValidationError) -> str:
    if error.validator == "additionalProperties":
        return f"{error.message} (not a known key; check its spelling)"
    if error.validator == "enum":
        return f"{error.instance!r} is not one of {error.validator_value}"
    if error.validator == "pattern" and "description" in error.schema:
        return f"{error.message}: write {error.schema['description']}"
    if error.validator in ("oneOf", "anyOf"):  # jsonschema: "is not valid under any of ..."
        kinds = " or ".join(_described(branch) for branch in error.validator_value)
        quoted = isinstance(error.instance, str) and error.instance.strip().isdigit()
        return f"{error.instance!r} is not {kinds}" + " (write the number without quotes)" * quoted
    return error.message


_TYPE_WORDS = {"integer": "a whole number", "number": "a number", "string": "a string"}


def _described(branch: Mapping[str, Any]) -> str:
    """A schema alternative in words: `a whole number of at least 1`, `'max'`, `true`."""
    if "const" in branch:
        const = branch["const"]
        return str(const).lower() if isinstance(const, bool) else repr(const)
    kinds = branch.get("type", [])
    kinds = [kinds] if isinstance(kinds, str) else kinds
    words = " or ".join(_TYPE_WORDS.get(k, k) for k in kinds)
    return words + (f" of at least {branch['minimum']}" if "minimum" in branch else "")
