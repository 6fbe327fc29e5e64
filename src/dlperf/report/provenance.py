"""What ran where: node facts and the exact model configuration, read from the runs' manifests."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlperf import logline
from dlperf.launch.facts import config_fact_text, gpu_text
from dlperf.launch.record import RunRecord
from dlperf.parse.records import ParseError
from dlperf.status import Status

log = logging.getLogger(__name__)

# Label maps that only repeat num_labels; summarised so the configuration stays readable.
_LABEL_MAPS = ("id2label", "label2id")


@dataclass(frozen=True)
class NodeEnv:
    host: str
    cpu_model: str
    cpus_usable: str
    memory_gb: str
    os: str
    python: str
    gpus: tuple[str, ...]
    cuda_driver_version: str
    packages: tuple[tuple[str, str], ...]
    topology: str | None
    cells: int  # how many cells ran on this node (with these facts)


@dataclass(frozen=True)
class ModelConfig:
    """One distinct configuration of a (framework, model) and the cells that ran with it."""

    framework: str
    model: str
    cells: tuple[
        str, ...
    ]  # cell ids without the layout, each with its layouts: "x.b8 (1n1g, 1n2g)"
    facts: tuple[tuple[str, str], ...]  # from the log's dlperf-config line (params, device, ...)
    options_json: str  # the adapter options the run was launched with
    model_config_json: str | None  # the model configuration the workload printed; None: not logged
    log_line: str  # "path:1" of the dlperf-config line it came from ('' when none)


def read_manifests(paths: Iterable[str]) -> dict[str, RunRecord]:
    """Manifest path -> run record, for the paths that exist and read (others are logged and
    left out)."""
    records: dict[str, RunRecord] = {}
    for text in sorted({p for p in paths if p}):
        try:
            records[text] = RunRecord.read(Path(text))
        except ParseError as err:
            log.warning("%s; left out of the environment section", err)
    return records


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def node_environments(manifests: dict[str, RunRecord]) -> list[NodeEnv]:
    """One entry per host and distinct set of facts, in host order."""
    seen: dict[str, tuple[dict[str, Any], set[str]]] = {}
    for record in manifests.values():
        for node in record.nodes.values():
            key = json.dumps(node, sort_keys=True, default=str)
            seen.setdefault(key, (node, set()))[1].add(record.cell_id)
    envs = []
    for node, cells in seen.values():
        packages = node.get("packages") or {}
        envs.append(
            NodeEnv(
                host=_text(node.get("host")),
                cpu_model=_text(node.get("cpu_model")),
                cpus_usable=_text(node.get("cpus_usable")),
                memory_gb=_text(node.get("memory_gb")),
                os=_text(node.get("os")),
                python=_text(node.get("python")),
                gpus=tuple(gpu_text(str(g)) for g in node.get("gpus") or []),
                cuda_driver_version=_text(node.get("cuda_driver_version")),
                packages=tuple(sorted((k, _text(v)) for k, v in packages.items())),
                topology=node.get("topology") or None,
                cells=len(cells),
            )
        )
    hosts = [e.host for e in envs]
    if len(hosts) != len(set(hosts)):
        log.warning("a host reported different facts in different runs; each set is listed")
    return sorted(envs, key=lambda e: (e.host, -e.cells))


def config_line(log_path: Path) -> tuple[dict[str, str], Any, int] | None:
    """(fields, model_config, line number) of the first dlperf-config line of a log, or None."""
    try:
        with log_path.open(encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, start=1):
                parsed = logline.parse_line(line)
                if parsed and parsed[0] == logline.CONFIG:
                    fields = dict(parsed[1])
                    config = fields.pop("model_config", "")
                    try:
                        model_config = json.loads(config) if config.strip() else None
                    except ValueError:
                        model_config = config.strip()
                    return fields, model_config, number
                if number > 200:
                    break
    except OSError:
        return None
    return None


def summarise_model_config(config: Any) -> Any:
    """The configuration as printed, with id2label/label2id replaced by their size."""
    if not isinstance(config, dict):
        return config
    out = {k: v for k, v in config.items() if k not in _LABEL_MAPS}
    for key in _LABEL_MAPS:
        if isinstance(config.get(key), dict):
            out[f"{key} (entries)"] = len(config[key])
    return out


# Fields of the config line left out: the layout's world size, and the model named elsewhere.
_PER_RUN_FIELDS = ("world_size", "model")


def model_configs(manifests: dict[str, RunRecord]) -> list[ModelConfig]:
    """Distinct configurations per (framework, model), each with the cells that ran it.

    Each cell contributes one run: an ok run whose log has the dlperf-config line if there is one.
    Skipped runs launched nothing, so they state no configuration and are left out.
    """
    per_cell: dict[str, tuple[RunRecord, tuple[dict[str, str], Any, str] | None]] = {}
    for record in sorted(manifests.values(), key=_ok_first):
        cell_id = record.cell_id
        if record.status == Status.SKIPPED:
            continue
        if cell_id in per_cell and per_cell[cell_id][1] is not None:
            continue
        line = _config_line_of(record)
        if cell_id not in per_cell or line is not None:
            per_cell[cell_id] = (record, line)
    found: dict[tuple[str, ...], dict[str, Any]] = {}
    for _, (record, line) in sorted(per_cell.items()):
        cell = record.planned_cell
        options = record.measured_options
        fields, model_config, where = line if line else ({}, None, "")
        facts = [(k, config_fact_text(k, v)) for k, v in fields.items() if k not in _PER_RUN_FIELDS]
        config_json = (
            json.dumps(summarise_model_config(model_config), sort_keys=True, indent=2, default=str)
            if model_config is not None
            else ""
        )
        key = (
            cell.framework,
            cell.model,
            json.dumps(options, sort_keys=True, indent=2, default=str),
            config_json,
            json.dumps(facts),
        )
        entry = found.setdefault(key, {"cells": {}, "log_line": where})
        prefix = f"{cell.framework}.{cell.group_id}"
        entry["cells"].setdefault(prefix, set()).add(cell.layout)
    configs = []
    for (framework, model, options_json, config_json, facts_json), entry in found.items():
        cells = tuple(
            f"{prefix} ({', '.join(str(layout) for layout in sorted(layouts))})"
            for prefix, layouts in sorted(entry["cells"].items())
        )
        configs.append(
            ModelConfig(
                framework=framework,
                model=model,
                cells=cells,
                facts=tuple((k, v) for k, v in json.loads(facts_json)),
                options_json=options_json,
                model_config_json=config_json or None,
                log_line=entry["log_line"],
            )
        )
    return sorted(configs, key=lambda c: (c.framework, c.model, c.cells))


def _ok_first(record: RunRecord) -> tuple[bool, str]:
    """Records of ok runs first, so a configuration's log line comes from a run that trained."""
    return (record.status != Status.OK, record.cell_id)


def _config_line_of(record: RunRecord) -> tuple[dict[str, str], Any, str] | None:
    for log_path in record.logs[:1]:
        found = config_line(log_path)
        if found:
            fields, model_config, number = found
            return fields, model_config, f"{log_path}:{number}"
    return None
