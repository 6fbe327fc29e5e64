"""Load, compose and validate a suite configuration.

A suite is what the user wrote plus the schema's defaults, nothing else: the same file gives the
same plan in `dlperf check` and in Snakemake. Layers (the suite file, a site file, Snakemake's
config files and `--config`) are merged in order, and every error names the layer at fault: the
file and line, or `--config`, and the key.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from dlperf.errors import ConfigError
from dlperf.layers import Layer, key_path, read_layer, source_of
from dlperf.matrix import CellSpec, expand_case, sweep_slug
from dlperf.plan.maxbatch import probe_cell, search_settings, searched
from dlperf.schemacheck import schema_errors

# Keys Snakemake's config may carry that are not part of a suite: which suite file to run.
SUITE_KEY = "suite"
DEFAULT_SUITE = "config/config.yaml"
CLI = "--config"


def merge(layers: Sequence[Layer]) -> dict[str, Any]:
    """Later layers over earlier ones: mappings merge key by key, anything else is replaced;
    but `cases` come from one file: a later file's would drop the earlier's cells silently
    (`--config cases=...` replaces them on purpose)."""
    with_cases = [layer for layer in layers if layer.has(["cases"]) and layer.label != CLI]
    if len(with_cases) > 1:
        first, second = with_cases[:2]
        raise ConfigError(
            f"{second.where(['cases'])}: cases: {first.where(['cases'])} has cases too, and a "
            "suite's cases come from one file (lists are replaced, not merged): put them in one"
        )
    merged: dict[str, Any] = {}
    for layer in layers:
        _merge_into(merged, copy.deepcopy(dict(layer.data)))
    return merged


def _merge_into(base: dict[str, Any], update: Mapping[str, Any]) -> None:
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            _merge_into(base[key], value)
        else:
            base[key] = value


def validate(config: dict[str, Any], layers: Sequence[Layer] | str = "config") -> dict[str, Any]:
    """Validate `config` in place, fill the schema's defaults, check each case with its adapter.

    `layers` are where the keys came from (or one label for all); errors name the one at fault.
    """
    if isinstance(layers, str):
        layers = [Layer(layers, config)]
    _check_finite(config, [], layers)
    errors = schema_errors(config, layers)
    if errors:
        raise ConfigError("invalid suite configuration\n  " + "\n  ".join(errors))
    _check_ranges(config, layers)
    from dlperf.adapters import get_adapter

    for i, case in enumerate(config["cases"]):
        try:
            get_adapter(case["framework"]).check_case(case)
        except ConfigError as err:
            detail = str(err)
            sub = re.match(r"\.([A-Za-z_]\w*)(?:\.(\w+))?", detail)
            parts: list[Any] = ["cases", i, *(p for p in (sub.groups() if sub else ()) if p)]
            raise ConfigError(f"{source_of(parts, layers)}: cases[{i}]{detail}") from None
    _check_id_lengths(config, layers)
    _check_named_once(config, layers)
    return config


def _check_named_once(config: dict[str, Any], layers: Sequence[Layer]) -> None:
    """Every cell comes from one case and one combination of its lists: else an error naming
    the file and line of the case (or of the list that repeats a value), and why."""
    seen: dict[str, tuple[int, CellSpec]] = {}
    for i, case in enumerate(config["cases"]):
        for spec in expand_case(case):
            if spec.id in seen:
                first_case, first = seen[spec.id]
                parts: list[Any] = ["cases", i]
                if first_case == i and first.swept == spec.swept:
                    parts += [
                        k
                        for k in LIST_KEYS
                        if len(set(map(repr, case.get(k, [])))) < len(case.get(k, []))
                    ][:1]
                raise ConfigError(
                    f"{source_of(parts, layers)}: {_named_twice(spec, i, first_case, first, parts)}"
                )
            seen[spec.id] = i, spec


# A cell id is a file name: results/runs/<id>/, results/maxbatch/<id>.json and logs/.../<id>.log
# (dlperf.paths), and a `max` cell's probes are cells of their own, their ids with the value
# probed in place of `max` (dlperf.plan.maxbatch.probe_cell: bmax -> b4096, num_classes_max ->
# num_classes_200000). A file name is at most NAME_MAX bytes (ext4, xfs, NFS, Lustre).
NAME_MAX = 255
ID_SUFFIX = ".json"  # the longest dlperf adds to an id in a file name (MaxBatchPaths.result)
CELL_ID_MAX = NAME_MAX - len(ID_SUFFIX)


def _check_id_lengths(config: dict[str, Any], layers: Sequence[Layer]) -> None:
    """Every cell id, and every probe id of a `max` cell at its ceiling, fits a file name; else
    an error naming the case's key that makes it long (before Snakemake fails on the path)."""
    for i, case in enumerate(config["cases"]):
        for spec in expand_case(case):
            longest, what, hint = spec.id, "", ""
            probe = _probe_at_ceiling(spec, config)
            if probe and len(probe.encode()) > len(longest.encode()):
                longest, what = probe, f" (its probe cell {_short(probe)} at the search's ceiling)"
                hint = " (or lower the search's ceiling)"
            size = len(longest.encode())
            if size > CELL_ID_MAX:
                parts = ["cases", i, *_longest_key(case)]
                raise ConfigError(
                    f"{source_of(parts, layers)}: {key_path(parts)}: cell id {_short(spec.id)}{what} "
                    f"is {size} bytes; a cell id is a file name (results/maxbatch/<id>"
                    f"{ID_SUFFIX}), at most {NAME_MAX} bytes, so it may be at most "
                    f"{CELL_ID_MAX}: shorten the {key_path(parts[2:])}{hint}"
                )


def _short(cell_id: str) -> str:
    return repr(cell_id if len(cell_id) <= 80 else f"{cell_id[:50]}...{cell_id[-30:]}")


def _probe_at_ceiling(spec: CellSpec, config: dict[str, Any]) -> str | None:
    """The longest probe id of a `max` cell's search (its probe at the ceiling)."""
    option = searched(spec)
    if option is None:
        return None
    ceiling = search_settings(config, option, spec.search)["ceiling"]
    return probe_cell(spec.cell, option, ceiling).id


def _longest_key(case: dict[str, Any]) -> tuple[str, ...]:
    """The key of a case whose value puts the most into its cell ids: the variant, or a swept
    option (its slugs), or the layouts or batch sizes."""
    sizes: dict[tuple[str, ...], int] = {
        ("variant",): len(case["variant"]) if case["variant"] != "default" else 0
    }
    for name, values in case["sweep"].items():
        sizes["sweep", name] = max(len(sweep_slug(name, v)) for v in values)
    sizes["layouts",] = max(len(layout) for layout in case["layouts"])
    sizes["batch_size",] = max(len(str(b)) for b in case["batch_size"])
    return max(sizes, key=lambda k: sizes[k])


def _check_finite(value: Any, parts: list[Any], layers: Sequence[Layer]) -> None:
    """YAML's .inf and .nan pass every bound of the schema (nan compares false to all): no
    setting of a suite may be one."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(
            f"{source_of(parts, layers)}: {key_path(parts)}: {value} is not a finite number"
        )
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, item in items:
        _check_finite(item, [*parts, key], layers)


def _check_ranges(config: dict[str, Any], layers: Sequence[Layer]) -> None:
    """Bounds between keys, which the schema cannot state."""
    adaptive = config.get("adaptive_repeats")
    if adaptive and adaptive["max"] < config["repeats"]:
        parts = ["adaptive_repeats", "max"]
        raise ConfigError(
            f"{source_of(parts, layers)}: adaptive_repeats.max: {adaptive['max']} is below "
            f"repeats ({config['repeats']}), the runs every cell gets first"
        )
    search = config["max_batch_search"]
    if search["ceiling"] < search["start"]:
        parts = ["max_batch_search", "ceiling"]
        raise ConfigError(
            f"{source_of(parts, layers)}: max_batch_search.ceiling: {search['ceiling']} is below "
            f"start ({search['start']})"
        )
    for i, case in enumerate(config["cases"]):
        _check_used(case, i, layers)
        option = next((k for k, values in case.get("sweep", {}).items() if "max" in values), None)
        if option is None:
            continue
        own = case.get("max_search", {})
        merged = search_settings(config, option, own)
        if merged["ceiling"] < merged["start"]:
            key = "start" if "start" in own else "ceiling"
            whose = "" if "ceiling" in own else " (max_batch_search's: give the option's own)"
            raise ConfigError(
                f"{source_of(['cases', i, 'max_search', key], layers)}: cases[{i}].max_search: "
                f"ceiling {merged['ceiling']}"
                f"{whose} is below start ({merged['start']})"
            )


def _check_used(case: dict[str, Any], i: int, layers: Sequence[Layer]) -> None:
    """A case's settings that no cell of it would use (they were ignored silently)."""
    for precision, options in case["precision_options"].items():
        if options and precision not in case["precision"]:
            raise ConfigError(
                f"{source_of(['cases', i, 'precision_options', precision], layers)}: cases[{i}]."
                f"precision_options.{precision}: the case measures no {precision} cell (precision: "
                f"{case['precision']}): add {precision} to its precision, or remove these options"
            )
    if case["max_search"] and not any("max" in v for v in case["sweep"].values()):
        batch = "max" in case["batch_size"]
        raise ConfigError(
            f"{source_of(['cases', i, 'max_search'], layers)}: cases[{i}].max_search: the case "
            "sweeps no option to `max`, so no search uses it"
            + (": `batch_size: max` is searched as max_batch_search says (set it there)" * batch)
        )


def load(path: str | Path, *more: str | Path, overrides: Mapping[str, Any] | None = None) -> dict:
    """A suite file (and files merged over it, e.g. a site file) validated with defaults."""
    layers = [read_layer(path), *(read_layer(p) for p in more)]
    if overrides:
        layers.append(Layer(CLI, dict(overrides)))
    return validate(merge(layers), layers)


def snakemake_config(
    config: Mapping[str, Any],
    configfiles: Sequence[str | Path],
    cli: Mapping[str, Any],
    search: Sequence[Path] = (Path("."),),
) -> dict[str, Any]:
    """The suite Snakemake runs, from what Snakemake loaded: `config` (its config files and
    --config merged), the config files it read, and the --config values.

    The suite is the file named by `--config suite=FILE`, else the config file that has `cases`
    (`--configfile my.yaml`), else config/config.yaml. Other config files (a site file such as
    slurm/site.yaml) and --config values are merged over it. The default suite is never merged
    under a suite of the user's own.
    """
    files = [read_layer(p) for p in configfiles]
    cli_layer = Layer(CLI, {k: v for k, v in cli.items() if k != SUITE_KEY})
    if SUITE_KEY in config and not str(config[SUITE_KEY] or "").strip():
        raise ConfigError(f"{CLI} {SUITE_KEY}= names no file (give suite=FILE, or leave it out)")
    if config.get(SUITE_KEY):
        suite_file = _find(str(config[SUITE_KEY]), search, f"{CLI} {SUITE_KEY}")
        layers = [read_layer(suite_file), *files]
    elif any("cases" in layer.data for layer in files):
        layers = files
    else:
        layers = [read_layer(_find(DEFAULT_SUITE, search, "the default suite")), *files]
    layers.append(cli_layer)
    merged = merge(layers)
    merged.pop(SUITE_KEY, None)
    return validate(merged, layers)


def resolve_baselines(config: dict[str, Any], search: Sequence[Path]) -> None:
    """Each baseline's path, relative to the working directory or else to the workflow (the
    shipped ones); one that is in neither is an error naming its key, before anything runs."""
    for i, baseline in enumerate(config["baselines"]):
        baseline["path"] = str(_find(baseline["path"], search, f"baselines[{i}].path"))


def _find(name: str, search: Sequence[Path], what: str) -> Path:
    """The first file `name` in the search folders, else the first thing of that name (a folder:
    its reader says what it is)."""
    candidates = [Path(folder, name) for folder in search]
    found = [c for c in candidates if c.is_file()] or [c for c in candidates if c.exists()]
    if found:
        return found[0]
    places = dict.fromkeys(str(folder) for folder in search)
    raise ConfigError(f"{what}: no such file {name!r} (looked in {', '.join(places)})")


LIST_KEYS = ("precision", "xla", "batch_size", "layouts")  # a case's lists of its cells' values


def _named_twice(
    spec: CellSpec, case: int, first_case: int, first: CellSpec, parts: Sequence[Any]
) -> str:
    """Why a cell id comes twice, and what to do."""
    if first_case != case:
        return (
            f"cell {spec.id} comes from both cases[{first_case}] and cases[{case}]: to measure "
            "both, give one a `variant` (e.g. `variant: current` beside `options: {release: "
            "current}`), which becomes part of its cell ids"
        )
    if first.swept != spec.swept:  # two values of one sweep, one id part
        return (
            f"cases[{case}].sweep: {first.swept} and {spec.swept} give the same cell {spec.id}: "
            "a value's part of the id keeps letters, digits and _ (others become _, '.' p, "
            "'-' m): make the values differ there"
        )
    return f"{key_path(parts)}: names the cell {spec.id} twice (a value repeated in the list)"


@dataclass(frozen=True)
class Suite:
    """A validated configuration with its expanded matrix."""

    config: dict[str, Any]

    @property
    def repeats(self) -> int:
        return int(self.config["repeats"])

    def cell_specs(self) -> list[CellSpec]:
        """All cells, in config order."""
        return list(self._cell_specs)

    @cached_property
    def _cell_specs(self) -> tuple[CellSpec, ...]:  # the workflow's start-up asks four times
        from dlperf.adapters import get_adapter

        specs = []
        for case in self.config["cases"]:  # validate checked that each cell comes once
            sets = get_adapter(case["framework"]).variant_options(case.get("variant", "default"))
            specs += [dataclasses.replace(s, options=s.options | sets) for s in expand_case(case)]
        return tuple(specs)

    def plan_summary(self) -> str:
        """Runs per layout, e.g. `168 cells x 7 repeats = 1176 runs (1n1g: 294, 1n8g: 294, ...)`."""
        specs = self.cell_specs()
        per_layout: dict[str, int] = {}
        for spec in sorted(specs, key=lambda s: s.cell.layout):
            key = str(spec.cell.layout)
            per_layout[key] = per_layout.get(key, 0) + self.repeats
        layouts = ", ".join(f"{k}: {v}" for k, v in per_layout.items())
        return f"{len(specs)} cells x {self.repeats} repeats = {len(specs) * self.repeats} runs ({layouts})"

    def runs(self) -> Iterator[tuple[CellSpec, int]]:
        for spec in self.cell_specs():
            for repeat in range(1, self.repeats + 1):
                yield spec, repeat
