"""The suite `dlperf gpu-proof` runs: the GPU suite at a CPU's size (--tiny), checked once
against the schema; the cases it cannot run here (packages or an upstream checkout
missing); and the suite file of the cases Snakemake runs."""

from __future__ import annotations

import copy
import importlib.util
import sys
from pathlib import Path
from typing import Any

import yaml

from dlperf.adapters import get_adapter
from dlperf.adapters.upstream import UpstreamAdapter
from dlperf.config import Suite, load, validate

# The framework whose cases run on this interpreter (write_suite), which must have its packages.
ON_THIS_PYTHON = "jax"
JAX_PACKAGES = ("jax", "keras", "keras_hub")
TINY_OPTIONS: dict[str, dict[str, Any]] = {
    "resnet50": {"image_size": 32, "num_classes": 100},
    "bert_base": {
        "seq_len": 32,
        "max_predictions": 5,
        "model_config": {
            "num_hidden_layers": 2,
            "hidden_size": 128,
            "num_attention_heads": 2,
            "intermediate_size": 512,
            "vocab_size": 4096,
        },
    },
    "gpt": {
        "seq_len": 32,
        "model_config": {
            "model_type": "llama",
            "hidden_size": 64,
            "intermediate_size": 172,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "vocab_size": 1024,
        },
    },
}


def tiny_suite(base: dict[str, Any]) -> dict[str, Any]:
    """The suite at a CPU's size: small models, a short window, one repeat, any device."""
    small = dict(base, repeats=1, window={"warmup": 2, "measure": 3}, device="auto")
    small["max_batch_search"] = {"start": 2, "granularity": 2, "ceiling": 8, "probe_steps": 2}
    small["cases"] = [
        dict(
            case,
            options=case.get("options", {}) | _tiny_options(case),
            batch_size=[b if b == "max" else 4 for b in case["batch_size"]],
        )
        for case in base["cases"]
    ]
    return small


def _tiny_options(case: dict[str, Any]) -> dict[str, Any]:
    """A built-in workload's small model; an upstream source's options are its own."""
    if isinstance(get_adapter(case["framework"]), UpstreamAdapter):
        return {}
    return TINY_OPTIONS[case["model"]]


def validated_suite(path: Path) -> dict[str, Any]:
    """The suite file with the schema's defaults, its cells expanded once to check them: an
    error names the file, the line and the key."""
    validated = load(path)
    Suite(validated).cell_specs()
    return validated


def revalidated_suite(config: dict[str, Any], changed_by: str) -> dict[str, Any]:
    """A checked suite file as the command's flags (`changed_by`) changed it, checked again: an
    error here is the flags' (the file as written was checked first)."""
    validated = validate(copy.deepcopy(config), changed_by)
    Suite(validated).cell_specs()
    return validated


def missing_packages(case: dict[str, Any]) -> list[str]:
    """The packages this interpreter lacks that the case's cells run with, if they run on it."""
    if case["framework"] != ON_THIS_PYTHON:
        return []
    return [name for name in JAX_PACKAGES if importlib.util.find_spec(name) is None]


def missing_sources(case: dict[str, Any]) -> str:
    """The case's sources_dir, as written, where the checkout its cells run from is not there
    (its entry script is missing); "" where it is, or the case names no sources_dir. A relative
    sources_dir is relative to where the kit runs (write_suite makes it absolute for the runs)."""
    adapter = get_adapter(case["framework"])
    if not isinstance(adapter, UpstreamAdapter):
        return ""
    options = adapter.resolved_options(case.get("options", {}))
    if not options.get("sources_dir") or options.get("source_root") or options.get("script"):
        return ""
    return "" if Path(adapter.script(case["model"], options)).is_file() else options["sources_dir"]


def _absolute_sources(case: dict[str, Any]) -> dict[str, Any]:
    """The case with a relative sources_dir made absolute (the runs' working folder is `work`)."""
    given = case.get("options", {}).get("sources_dir")
    if not given or Path(given).is_absolute():
        return case
    return dict(case, options=dict(case["options"], sources_dir=str(Path(given).resolve())))


def write_suite(base: dict[str, Any], cases: list[dict[str, Any]], work: Path) -> Path:
    """The suite of these cases (a relative sources_dir made absolute); a JAX case runs on this
    interpreter (which has its packages)."""
    suite = dict(base, cases=[_absolute_sources(case) for case in cases])
    if any(c["framework"] == ON_THIS_PYTHON for c in cases):
        site = dict(suite.get("site") or {})
        environments = dict(site.get("environments") or {})
        pythons = dict(environments.get("python") or {}, **{ON_THIS_PYTHON: sys.executable})
        environments["python"] = pythons
        suite["site"] = site | {"environments": environments}
    path = work / "suite.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False))
    return path
