"""Load and validate a suite configuration; every error names the key (and file) at fault."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from dlperf.matrix import CellSpec, expand_case


class ConfigError(ValueError):
    """A suite configuration the user must fix; the message names the key."""


def schema() -> dict[str, Any]:
    text = resources.files("dlperf").joinpath("schemas/config.schema.yaml").read_text()
    return yaml.safe_load(text)


def schema_path() -> Path:
    return Path(str(resources.files("dlperf").joinpath("schemas/config.schema.yaml")))


def _with_defaults(validator_class: Any) -> Any:
    """A validator that fills `default`s while it validates (as snakemake.utils.validate does)."""
    validate_properties = validator_class.VALIDATORS["properties"]

    def fill(validator, properties, instance, schema):  # noqa: ANN001
        if isinstance(instance, dict):
            for name, sub in properties.items():
                if "default" in sub and name not in instance:
                    instance[name] = copy.deepcopy(sub["default"])
        yield from validate_properties(validator, properties, instance, schema)

    return jsonschema.validators.extend(validator_class, {"properties": fill})


_Validator = _with_defaults(jsonschema.Draft202012Validator)


def key_path(parts: Any) -> str:
    """`cases[0].precision[1]` from jsonschema's absolute_path."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "<top level>"


def validate(config: dict[str, Any], source: str = "config") -> dict[str, Any]:
    """Validate `config` in place, fill defaults, check adapter options; return it."""
    errors = sorted(_Validator(schema()).iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        lines = [f"{source}: {key_path(e.absolute_path)}: {_message(e)}" for e in errors[:10]]
        raise ConfigError("invalid suite configuration\n  " + "\n  ".join(lines))
    from dlperf.adapters import get_adapter  # late: adapters import this module's error

    for i, case in enumerate(config["cases"]):
        adapter = get_adapter(case["framework"])
        try:
            adapter.check_case(case)
        except ConfigError as err:
            raise ConfigError(f"{source}: cases[{i}]{err}") from None
    return config


def _message(error: jsonschema.ValidationError) -> str:
    if error.validator == "additionalProperties":
        return f"{error.message} (not a known key; check its spelling)"
    if error.validator == "enum":
        return f"{error.instance!r} is not one of {error.validator_value}"
    return error.message


def load(path: str | Path) -> dict[str, Any]:
    """Read a YAML suite file; syntax errors name the file and line."""
    path = Path(path)
    try:
        config = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise ConfigError(f"{where}: not valid YAML: {err}") from None
    if not isinstance(config, dict):
        raise ConfigError(f"{path}: expected a mapping of keys at the top level")
    return validate(config, source=str(path))


@dataclass(frozen=True)
class Suite:
    """A validated configuration with its expanded matrix."""

    config: dict[str, Any]

    @property
    def repeats(self) -> int:
        return int(self.config["repeats"])

    def cell_specs(self) -> list[CellSpec]:
        """All cells, in config order; a cell named twice is an error naming both cases."""
        seen: dict[str, int] = {}
        specs = []
        for i, case in enumerate(self.config["cases"]):
            for spec in expand_case(case):
                if spec.id in seen:
                    raise ConfigError(
                        f"cell {spec.id} comes from both cases[{seen[spec.id]}] and cases[{i}]"
                    )
                seen[spec.id] = i
                specs.append(spec)
        return specs

    def plan_summary(self) -> str:
        """Runs per layout, e.g. `168 cells x 7 repeats = 1176 runs (1n1g: 294, 1n8g: 294, ...)`."""
        specs = self.cell_specs()
        per_layout: dict[str, int] = {}
        for spec in sorted(specs, key=lambda s: (s.cell.layout.devices, s.cell.layout.nodes)):
            key = str(spec.cell.layout)
            per_layout[key] = per_layout.get(key, 0) + self.repeats
        layouts = ", ".join(f"{k}: {v}" for k, v in per_layout.items())
        return f"{len(specs)} cells x {self.repeats} repeats = {len(specs) * self.repeats} runs ({layouts})"

    def runs(self) -> Iterator[tuple[CellSpec, int]]:
        for spec in self.cell_specs():
            for repeat in range(1, self.repeats + 1):
                yield spec, repeat
