"""The adapter contract: how to launch one benchmark source and read its logs."""

from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar

import jsonschema

from dlperf.errors import ConfigError
from dlperf.flops import FlopsFormula
from dlperf.i18n import Phrase, Text, english
from dlperf.jsontypes import strict_integers
from dlperf.matrix import Cell
from dlperf.parse.records import ParseResult
from dlperf.vocabulary import LANGUAGE_MODELS

_OPTION_VALIDATOR = strict_integers(jsonschema.Draft202012Validator)
# Options no run reads: max_batch_size sizes the plan's estimate of a `max` cell before its search
# ran (dlperf.plan.durations); every run, a `max` cell's too, trains at a number (its search's).
PLAN_ONLY_OPTIONS = ("max_batch_size",)
# The type an option's default implies (bool before int: True is an int in Python).
_DEFAULT_TYPES: tuple[tuple[type | tuple[type, ...], dict[str, Any]], ...] = (
    (bool, {"type": "boolean"}),
    (int, {"type": "integer"}),
    (float, {"type": "number"}),
    (str, {"type": "string"}),
    ((list, tuple), {"type": "array"}),
    (dict, {"type": "object"}),
)


class Launcher(StrEnum):
    PER_DEVICE = "per_device"  # one task per GPU (srun / submitit tasks); the adapter runs one rank
    PER_NODE = "per_node"  # one task per node that spawns its own workers (torchrun, mpirun, ...)


@dataclass(frozen=True)
class TaskContext:
    """What one task knows when it builds its command on the node."""

    cell: Cell
    options: dict[str, Any]
    steps: int  # iterations the source must run: warmup + measure (+ margin)
    device: str  # auto | cpu | cuda
    rank: int  # global rank (per-device) or node rank (per-node)
    node_rank: int
    nodes: int
    gpus_per_node: int
    master_addr: str
    master_port: int
    run_dir: Path
    hosts: tuple[str, ...] = ()  # every node of the job, node rank order (mpirun/horovodrun -H)
    python: str = sys.executable  # the interpreter of the cell's environment (dlperf.environments)
    # names of the variables the task sets for every rank (site.env, an environment's
    # PYTHONPATH): a launcher that starts ranks on other nodes over ssh passes them on
    site_env: tuple[str, ...] = ()


@dataclass(frozen=True)
class ModelSource:
    """Where a model's benchmark script lives upstream."""

    repo: str
    path: str
    tag: str = ""
    # the folders a checkout of it needs (`dlperf sources`), where the model's folder is the
    # repository's root but its scripts need less than the whole tree: the root's own files
    # and these (); () = the model's folder, all of it
    folders: tuple[str, ...] = ()

    def checkout_in(self, sources_dir: str) -> str:
        """The checkout of this source's repository at its commit under `sources_dir`, as
        `dlperf sources` places it (dlperf.launch.sources): `<sources_dir>/<owner>+<name>@<commit>`.
        The one owner of that folder scheme."""
        if not self.tag:
            raise ConfigError(
                f".options.sources_dir: {self.repo}/{self.path} has no commit pinned, so it has "
                "no checkout by commit; set option source_root to a checkout instead"
            )
        return f"{sources_dir.rstrip('/')}/{self.repo.replace('/', '+')}@{self.tag}"


@dataclass
class Adapter(ABC):
    """One benchmark source. Subclasses set the class attributes and implement the two methods.

    `options` lists every option a case may set, with its default; an unknown option is a config
    error naming the key.
    """

    name: ClassVar[str]  # registry key; the `framework` of a case
    display_name: ClassVar[str]  # the source's name (title(): the report's column header)
    version: ClassVar[str]  # upstream tag or framework version benchmarked
    launcher: ClassVar[Launcher]
    models: ClassVar[dict[str, ModelSource]]
    # model -> why this adapter does not run it, for a model of dlperf.vocabulary it lacks (an
    # upstream source that has no such benchmark needs no entry)
    lacks: ClassVar[dict[str, Phrase]] = {}
    environment: ClassVar[str]  # an envs/ file, or a container image
    features: ClassVar[tuple[str, ...]] = ()  # DALI, Horovod, XLA, APEX...
    options: ClassVar[dict[str, Any]] = {}
    # JSON schema of options whose default's type says too little (a number that may be 2.5)
    option_types: ClassVar[dict[str, dict[str, Any]]] = {}
    # Its step lines are stamped in seconds since the epoch by dlperf's step clock on the task's
    # own machine: they must then lie within the task's run (dlperf.parse.checks).
    epoch_step_stamps: ClassVar[bool] = False
    extra: dict[str, Any] = field(default_factory=dict)

    def check_case(self, case: dict[str, Any]) -> None:
        """Raise ConfigError (message starts with the key path) for what this source cannot run."""
        if case["model"] not in self.models:
            why = english(self.why_not(case["model"]))
            raise ConfigError(
                f".model: {self.name} does not run {case['model']}: {why} "
                f"(it runs: {', '.join(self.models)})"
            )
        blocks = [("options", case.get("options", {}))]
        blocks += [
            (f"precision_options.{p}", o) for p, o in case.get("precision_options", {}).items()
        ]
        searches = ["batch_size"] if "max" in case["batch_size"] else []
        for key, values in case.get("sweep", {}).items():
            for where, options in blocks:
                if key in options:
                    raise ConfigError(
                        f".sweep.{key}: also set in {where}; sweep it or set it, not both"
                    )
            if "max" in values and key in self.options:
                if self.option_schema(key).get("type") != "integer":
                    raise ConfigError(
                        f".sweep.{key}: max is the largest value of an integer option"
                    )
                searches.append(key)
            checked = [v for v in values if v != "max" or key not in self.options]
            blocks += [("sweep", {key: value}) for value in checked]
        if len(searches) > 1:
            raise ConfigError(f".sweep: one search per cell, not {' and '.join(searches)}")
        variant = case.get("variant", "default")
        for key, value in self.variant_options(variant).items():
            for where, options in blocks:
                if key in options and options[key] != value:
                    raise ConfigError(
                        f".{where}.{key}: variant {variant} sets it to {value}, not {options[key]}"
                    )
        for where, options in blocks:
            for key, value in options.items():
                if key not in self.options:
                    known = ", ".join(sorted(self.options)) or "none"
                    raise ConfigError(
                        f".{where}.{key}: unknown option of {self.name} (known: {known})"
                    )
                problem = self.option_problem(key, value)
                if problem:
                    raise ConfigError(f".{where}.{key}: {problem}")

    def option_schema(self, key: str) -> dict[str, Any]:
        """The declared type of an option: `option_types`, else the type of its default."""
        if key in self.option_types:
            return self.option_types[key]
        default = self.options[key]
        for kind, schema in _DEFAULT_TYPES:
            if isinstance(default, kind):
                return schema
        return {}

    def option_problem(self, key: str, value: Any) -> str | None:
        """Why `value` is not a valid `key` option (None: it is), checked before anything runs."""
        error = jsonschema.exceptions.best_match(
            _OPTION_VALIDATOR(self.option_schema(key)).iter_errors(value)
        )
        return None if error is None else error.message

    def resolved_options(self, options: dict[str, Any]) -> dict[str, Any]:
        """Every option with its default: what a run is launched with."""
        return {**self.options, **options}

    def measured_options(self, cell: Cell, options: dict[str, Any]) -> dict[str, Any]:
        """The options a cell's measure states (dlperf.launch.measured.measure_of): the resolved
        ones, less any an adapter keeps out so cells stay fresh across a new option, or that
        this cell's command does not pass (a change of it must not rerun the cell). The
        PLAN_ONLY_OPTIONS are measured at their defaults: a change of one reruns no cell."""
        measured = self.resolved_options(options)
        for key in PLAN_ONLY_OPTIONS:
            if key in measured:
                measured[key] = self.options[key]
        return measured

    def variant_options(self, variant: str) -> dict[str, Any]:
        """The options a case's `variant` sets (the suite applies them to each of its cells, a
        swept one too, so the record states what the command runs); {} for none."""
        return {}

    def steps_for(
        self, warmup: int, measure: int, options: Mapping[str, Any] | None = None, model: str = ""
    ) -> int:
        """Iterations to run: the window plus a margin so the last measured step is complete.
        `options` (the cell's resolved options) matter where an option sets how often the
        source logs, `model` where a source's script runs steps before it logs one."""
        return warmup + measure + 2

    def skip_reason(self, cell: Cell, options: dict[str, Any]) -> str | None:
        """Why a planned cell is not run by this adapter, from the suite alone (None: it runs):
        decided before its job is submitted, so nothing queues for it."""
        return None

    def node_skip_reason(self, cell: Cell, options: dict[str, Any]) -> str | None:
        """Why a cell is not run on the node its job landed on (its hardware); None: it runs."""
        return None

    def code_digest(self) -> str | None:
        """A digest of the dlperf code a run executes; None where the run executes an upstream
        source's own scripts (named by the release and container options instead)."""
        return None

    @abstractmethod
    def command(self, ctx: TaskContext) -> list[str]:
        """The argument list that runs this task (never a shell string)."""

    @abstractmethod
    def parse(
        self,
        logs: list[Path],
        cell: Cell,
        options: dict[str, Any],
        keep_iterations: int | None = None,
    ) -> ParseResult:
        """Per-step records from this run's task logs (one per rank, or per node for PER_NODE).
        A parser may stop reading a rank's steps once it has `keep_iterations` (the window's)."""

    def title(self) -> Text:
        """What the report and `dlperf adapters` call this source (a built-in workload's says so)."""
        return self.display_name

    def why_not(self, model: str) -> Phrase:
        """Why this adapter does not run `model` (i18n.english(...) words it in English)."""
        return self.lacks.get(model) or Phrase.of(
            "adapter.no_benchmark", framework=self.title(), model=model
        )

    def flops_formula(self, cell: Cell, options: dict[str, Any]) -> FlopsFormula | None:
        """Training FLOPs per sample by dlperf's formula for a run whose logs state none (an
        upstream source's); None: no formula, no TFLOP/s."""
        return None

    def tokens_per_sample(self, cell: Cell, options: dict[str, Any]) -> int | None:
        """A language model's tokens per sample (its sequence length: tokens/s = samples/s x
        this); None for other models."""
        if cell.model not in LANGUAGE_MODELS or "seq_len" not in options:
            return None
        return int(options["seq_len"])

    def source_of(self, model: str, options: Mapping[str, Any]) -> ModelSource:
        """Where `model`'s code comes from under these options (an upstream release's own)."""
        return self.models[model]

    def source_text(self, model: str, options: Mapping[str, Any]) -> str:
        """That source as the report names it: repository/path@tag."""
        source = self.source_of(model, options)
        return f"{source.repo}/{source.path}" + (f"@{source.tag}" if source.tag else "")

    def environment_of(self, options: Mapping[str, Any]) -> str:
        """The environment (an envs/ file or a container image) the source is meant to run in
        under these options; what a run really ran in is its record's (RunRecord.ran_in)."""
        return self.environment

    def describe(self) -> dict[str, Any]:
        """The adapter as a row of the report's frameworks table."""
        return {
            "framework": self.name,
            "display_name": self.title(),
            "version": self.version,
            "launcher": str(self.launcher),
            "environment": self.environment,
            "features": list(self.features),
            "models": {m: self.source_text(m, {}) for m in self.models},
            "lacks": dict(self.lacks),
        }
