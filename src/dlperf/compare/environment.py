"""The environment half of a results-folder diff: every fact the run manifests and the workloads'
config lines state (packages, GPUs, drivers, options), and which differ between A and B."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from dlperf import logline
from dlperf.compare.inputs import DiffInputError, ResultsFolder
from dlperf.launch.measured import SITE_MEASURE_FIELDS
from dlperf.launch.record import RunRecord
from dlperf.parse.records import ParseError


def _flatten(prefix: str, value: Any, out: dict[str, str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _flatten(f"{prefix}.{key}", item, out)
    elif isinstance(value, list):
        out[prefix] = "; ".join(str(v) for v in value)
    else:
        out[prefix] = str(value)


NODE_FACTS_SKIPPED = ("host",)  # differs between any two allocations: not an environment fact


ENVIRONMENT_SKIPPED = ("name", "python", "requirements")  # a path, or said by the scope
# what the measure names that the record states once more: the site's settings (site.*) and the
# framework's environment (environment[...].key, or the site's interpreter in site.environments)
MEASURE_SKIPPED = (*SITE_MEASURE_FIELDS, "environment")


def manifest_facts(record: RunRecord) -> dict[str, str]:
    """The environment a run ran in, flattened to dotted keys: node facts (packages, python,
    CUDA driver, GPUs, CPU model, environment variables...), adapter version, backend, what was
    measured (per model, cell-independent keys only, less what the record states once more:
    MEASURE_SKIPPED), the framework's own environment (its key and exact package versions), and
    the site's settings (container, setup lines, env, partition)."""
    facts: dict[str, str] = {}
    for key, value in (
        ("dlperf_version", record.dlperf_version),
        ("python", record.python),
        ("backend", record.backend),
    ):
        if value:
            facts[key] = str(value)
    if record.adapter_name is not None:
        facts[f"adapter.{record.adapter_name}.version"] = str(record.adapter_version)
    for node in record.nodes.values():
        for key, value in (node or {}).items():
            if key not in NODE_FACTS_SKIPPED:
                _flatten(f"node.{key}", value, facts)
    cell = record.planned_cell
    framework = cell.framework
    scope = f"[{framework}.{cell.model}]"
    for key, value in record.measured_items():
        if key not in MEASURE_SKIPPED:
            _flatten(f"measure{scope}.{key}", value, facts)
    for key, value in (record.environment or {}).items():
        if key not in ENVIRONMENT_SKIPPED:
            _flatten(f"environment[{framework}].{key}", value, facts)
    _flatten("site", record.site, facts)
    facts.pop("site", None)  # an empty mapping flattens to nothing
    return facts


WORKLOAD_FACTS = ("torch", "cuda", "cudnn", "nccl", "gpu", "jax", "keras", "keras_hub")


def workload_facts(record: RunRecord) -> dict[str, str]:
    """Versions the workload itself reported (the built-in workloads' `dlperf-config` line in
    the first task's log): the framework, CUDA, cuDNN and NCCL it really ran with."""
    if not record.task_outcomes:
        return {}
    framework = record.planned_cell.framework
    try:
        with open(record.logs[0], errors="replace") as log:
            for _, line in zip(range(200), log, strict=False):
                parsed = logline.parse_line(line)
                if parsed and parsed[0] == logline.CONFIG:
                    fields = parsed[1]
                    return {
                        f"workload[{framework}].{k}": fields[k]
                        for k in WORKLOAD_FACTS
                        if k in fields
                    }
    except OSError:
        pass
    return {}


def folder_facts(folder: ResultsFolder) -> tuple[dict[str, set[str]], int]:
    """Every value each fact takes over the manifests of the folder's ok runs (its runs table's), and
    how many were read."""
    facts: dict[str, set[str]] = {}
    count = 0
    for path in folder.manifests():
        try:
            record = RunRecord.read(path)
        except ParseError as err:
            raise DiffInputError(f"unreadable run manifest: {err}") from err
        count += 1
        found = manifest_facts(record) | workload_facts(record)
        for key, value in found.items():
            facts.setdefault(key, set()).add(value)
    return facts, count


@dataclass(frozen=True)
class EnvDifference:
    key: str
    a: str  # the values in A, sorted and joined; "(absent)" when A never records it
    b: str


def env_diff(a: ResultsFolder, b: ResultsFolder) -> tuple[list[EnvDifference], int, int]:
    """Facts whose values differ between the two folders' manifests, and the manifests read."""
    fa, na = folder_facts(a)
    fb, nb = folder_facts(b)
    scopes_a, scopes_b = _measure_scopes(fa), _measure_scopes(fb)
    out = []
    for key in sorted(fa.keys() | fb.keys()):
        va, vb = fa.get(key), fb.get(key)
        scope = key.split("]", 1)[0] if key.startswith("measure[") else None
        if scope is not None and (scope not in scopes_a or scope not in scopes_b):
            continue  # a model measured on one side only: its options have nothing to differ from
        if va != vb:
            out.append(EnvDifference(key, *_shown(va, vb)))
    return out, na, nb


def _measure_scopes(facts: dict[str, set[str]]) -> set[str]:
    return {k.split("]", 1)[0] for k in facts if k.startswith("measure[")}


SHOWN_WIDTH = 60  # characters of each side's values printed
SHOWN_BEFORE = 15  # of them, the characters before where the two sides first differ


def _shown(a: set[str] | None, b: set[str] | None) -> tuple[str, str]:
    """Each side's values (sorted, joined; "(absent)" for none), cut to SHOWN_WIDTH characters
    from the same place on both: their start, or just before where they first differ when that
    lies beyond the cut. Cut at the start, two long values that differ late (a topology's one
    NVLink down, a node's eighth GPU) read as the same text on both sides."""
    texts = [None if v is None else _joined(v) for v in (a, b)]
    start = 0
    if texts[0] is not None and texts[1] is not None:
        differ = len(os.path.commonprefix([texts[0], texts[1]]))
        if differ > SHOWN_WIDTH - 3 - SHOWN_BEFORE:
            start = differ - SHOWN_BEFORE
    return _cut(texts[0], start), _cut(texts[1], start)


def _joined(values: set[str]) -> str:
    return ", ".join(sorted(values)).replace("\n", "\\n").replace("\t", " ")


def _cut(text: str | None, start: int) -> str:
    if text is None:
        return "(absent)"
    shown = ("..." if start else "") + text[start:]
    return shown if len(shown) <= SHOWN_WIDTH else shown[: SHOWN_WIDTH - 3] + "..."


def format_env_diff(diffs: list[EnvDifference], na: int, nb: int) -> list[str]:
    """Lines printed first by ``dlperf diff`` on two results folders."""
    head = f"environment ({na} run manifests in A, {nb} in B)"
    if na == 0 or nb == 0:
        side = "A" if na == 0 else "B"
        return [f"{head}: no run manifests in {side} (runs/<cell>/r<k>/manifest.json)"]
    if not diffs:
        return [f"{head}: no differences"]
    width = max(len(d.key) for d in diffs)
    return [f"{head}: {len(diffs)} differences (A -> B)"] + [
        f"  {d.key:<{width}}  {d.a} -> {d.b}" for d in diffs
    ]
