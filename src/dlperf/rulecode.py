"""What the workflow's rules after the runs execute of dlperf (their `code` input), and the
decorator of its job functions."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import dlperf

# The package code each rule after the runs executes: its modules' import closure (which
# tests/test_campaign.py checks against dlperf.workloads.code_files) and the data files they read.
# Editing any of it remakes what the rule made, and never reruns a run: an upgrade of dlperf that
# judges runs differently (a new check of a record) rebuilds the tables that showed them.
_CORE_CODE = ("__init__.py", "adapters", "parse", "measure", "launch/__init__.py",
              "launch/record.py", "launch/taskoutcome.py", "launch/measured.py", "launch/facts.py",
              "launch/ranin.py",
              "environments.py",
              "config.py", "schemacheck.py", "defaults.py", "layers.py", "schemas", "errors.py",
              "jsontypes.py",
              "logline.py", "matrix.py", "paths.py", "status.py", "util.py", "vocabulary.py",
              "flops.py", "peaks.py", "workloads/__init__.py", "workloads/options.py",
              # the workloads' own model_config rules the adapters check a suite with
              "workloads/common.py", "workloads/keras_config.py",
              "workloads/mxnet_train.py", "workloads/mindspore_networks.py",
              "workloads/paddle_train.py",
              "plan/__init__.py", "plan/maxbatch.py", "i18n")  # fmt: skip
RULE_CODE = {
    "tables": (*_CORE_CODE, "workflow.py"),
    "repeat_decision": _CORE_CODE,
    "adaptive_runs": _CORE_CODE,
    "plan": (*_CORE_CODE, "plan"),
    "report": (*_CORE_CODE, "plan", "report"),
}


F = TypeVar("F", bound=Callable[..., Any])


def job_function(function: F) -> F:
    """An input, params or priority function, its signature stated once: Snakemake inspects a
    function's signature on every call, a few times a job (a tenth of a 5,000-job dry run)."""
    function.__signature__ = inspect.signature(function)  # type: ignore[attr-defined]
    return function


def rule_code(rule: str) -> list[str]:
    """The source and data files of dlperf that `rule` runs (RULE_CODE): its `code` input."""
    return package_files(*RULE_CODE[rule])


@functools.cache
def package_files(*names: str) -> list[str]:
    """Source files of the dlperf package (modules or subpackages) a rule's output depends on."""
    root = Path(dlperf.__file__).parent
    files: list[str] = []
    for name in names:
        path = root / name
        if path.is_dir():
            files += sorted(
                str(p) for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts
            )
        else:
            files.append(str(path))
    return files
