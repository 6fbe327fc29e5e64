"""What the adapters of upstream benchmark scripts (DLPerf's sources) share.

An upstream adapter is mostly data: where the script lives (`models`, `entry`), which parser reads
its log (`parsers`), what it can run (`precisions`, `xla_models`, `variants`, `synthetic_models`),
how often it logs (`log_interval`) and how its ranks are started (`launch`, one of the launch
styles of dlperf.adapters.launchers, each `Launcher.PER_NODE`: one task per node). A subclass adds
only `script_args(ctx)`: the upstream script's own flags for batch size, precision, XLA and steps.
`parsers` binds each model to its log parser, a function of dlperf.parse.upstream.

Commands are argument lists: option values are passed as single arguments, never through a shell.

Releases (dlperf.adapters.releases): option `release` picks which version of the source runs. `dlperf_v1` (the default) is
what the class attributes describe, DLPerf v1.0's pins; an adapter declares any other in `releases`
(a `Release`: version, container, models at their commit, entry scripts, parsers, launch style), and
its `script_args` branches on `self.release_name(options)` where the command lines differ. The
default release is left out of `resolved_options`, so DLPerf v1.0 cells measure (and rerun) exactly
as before; a non-default release is an option of the run and part of what it measures.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from dlperf.adapters.base import Adapter, Launcher, ModelSource, TaskContext
from dlperf.adapters.launchers import (
    RANK0_LAUNCHES,
    SCRIPT_LAUNCHES,
    idle_command,
    launcher_args,
    stop_after_prefix,
    worker_logs,
)
from dlperf.adapters.releases import DEFAULT_RELEASE, Evidence, Ran, Release
from dlperf.defaults import case_setting
from dlperf.errors import ConfigError
from dlperf.i18n import Phrase, english
from dlperf.matrix import Cell
from dlperf.parse.records import ParseResult
from dlperf.parse.upstream import Parser, RunFacts
from dlperf.parse.upstream.rows import rows_for
from dlperf.vocabulary import LANGUAGE_MODELS, PRECISIONS

# The shared options' types beyond what their defaults say (Adapter.option_problem checks them)
_ARGUMENTS = {"type": "array", "items": {"type": ["string", "number"]}}
COMMON_TYPES: dict[str, dict[str, Any]] = {
    "extra_args": _ARGUMENTS,
    "mpi_args": _ARGUMENTS,
    "env": {  # NAME: value, a name the shell takes
        "type": "object",
        "propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
        "additionalProperties": {"type": ["string", "number"]},
    },
    "ssh_port": {"type": "integer", "minimum": 0},  # 0: ssh's default
}


def upstream_options(mpi: bool = False, **specific: Any) -> dict[str, Any]:
    """The options every upstream adapter takes (and the ssh/MPI ones with `mpi`), with its own."""
    options: dict[str, Any] = {
        "source_root": "",  # the upstream checkout on the node; "" = the adapter's default
        # where `dlperf sources` put the checkouts (each model's at <sources_dir>/<owner>+<name>@
        # <commit>, ModelSource.checkout_in), used where source_root is not set; "" = not used.
        # A relative folder is relative to the task's working folder (the workflow's directory).
        "sources_dir": "",
        "script": "",  # the entry script itself, overriding source_root + the model's entry
        "python": "python3",  # the interpreter inside the environment or container
        "data_dir": "",  # the dataset; "" = synthetic input where the source has it
        "max_batch_size": {},  # what `max` means: {model: n} or {model: {fp32: n, amp: n, amp_xla: n}}
        "extra_args": [],  # appended to the script's own arguments
        "env": {},  # extra environment variables of the workload
        "release": DEFAULT_RELEASE,  # which version of the source: dlperf_v1 or one of `releases`
    }
    if mpi:
        options["ssh_port"] = 0  # the sshd port between nodes (0 = ssh's default)
        options["mpi_args"] = []  # further launcher arguments (e.g. -mca btl_tcp_if_include ib0)
    return options | specific


class UpstreamAdapter(Adapter):
    """An upstream benchmark script launched once per node (see the module docstring)."""

    launcher: ClassVar[Launcher] = Launcher.PER_NODE
    launch: ClassVar[str] = "native"
    # model -> its launch style where DLPerf v1.0's differs from `launch` (a release's own
    # `launch` replaces both)
    model_launch: ClassVar[dict[str, str]] = {}
    source_root: ClassVar[str] = ""  # default checkout location on the node
    entry: ClassVar[dict[str, str]] = {}  # model -> script, relative to the model's folder
    parsers: ClassVar[dict[str, Parser]] = {}  # model -> its parser (dlperf.parse.upstream)
    precisions: ClassVar[
        dict[str, tuple[str, ...]]
    ] = {}  # model -> precisions it runs (default both)
    xla_models: ClassVar[frozenset[str]] = frozenset()  # models it can run with XLA on
    synthetic_models: ClassVar[frozenset[str]] = frozenset()  # models that run without data_dir
    variants: ClassVar[dict[str, tuple[str, ...]]] = {}  # model -> variants beside "default"
    only_variant: ClassVar[dict[str, str]] = {}  # model -> the one variant the source can run
    log_interval: ClassVar[int] = 1  # iterations per logged line (the largest over its models)
    stop_pattern: ClassVar[str] = (
        ""  # progress line with a `step` group, for scripts without a step limit
    )
    seq_len: ClassVar[int] = 128  # sequence length of its language models (parser facts)
    releases: ClassVar[dict[str, Release]] = {}  # name -> a release other than dlperf_v1
    # options left out of a cell's measure at their defaults (added after DLPerf v1.0's results,
    # so a cell that does not set them measures, and is fresh, exactly as before they existed)
    option_types: ClassVar[dict[str, dict[str, Any]]] = COMMON_TYPES
    quiet_options: ClassVar[tuple[str, ...]] = ("release", "sources_dir")
    evidence: ClassVar[Evidence] = Evidence()  # what DLPerf v1.0's release has run on here

    # ----------------------------------------------------------------------------- config time

    def check_case(self, case: dict[str, Any]) -> None:
        super().check_case(case)
        model = case["model"]
        blocks = [case.get("options", {}), *case.get("precision_options", {}).values()]
        for options in blocks:
            release = self.release(options)
            if release is not None and model not in release.models:
                name = options["release"]
                raise ConfigError(
                    f".options.release: {self.name} release {name} has no {model} benchmark "
                    f"(it has: {', '.join(release.models) or 'none'})"
                )
        if any(case_setting(case, "xla")) and model not in self.xla_models:
            can = ", ".join(sorted(self.xla_models)) or "none"
            raise ConfigError(
                f".xla: {self.name} cannot run {model} with XLA on (models with XLA: {can})"
            )
        allowed = self.precisions.get(model, PRECISIONS)
        for precision in case_setting(case, "precision"):
            if precision not in allowed:
                raise ConfigError(
                    f".precision: {self.name} runs {model} in {', '.join(allowed)} only, not {precision}"
                )
        variant = case_setting(case, "variant")
        # a case may also be named after the release it runs, beside the v1.0 pin's cells
        releases = {self.release_name(options) for options in blocks} - {DEFAULT_RELEASE}
        variants = self.allowed_variants(model) | releases
        if variant not in variants:
            raise ConfigError(
                f".variant: {self.name} runs {model} as variant {' or '.join(sorted(variants))}, "
                f"not {variant!r} (or as the release it runs: `variant: current` beside "
                "`options: {release: current}`)"
            )
        for precision in case_setting(case, "precision"):
            options = self.resolved_options(
                {**case.get("options", {}), **case.get("precision_options", {}).get(precision, {})}
            )
            if "max" in case["batch_size"]:
                for xla in case_setting(case, "xla"):
                    resolve_max_batch(options["max_batch_size"], self.name, model, precision, xla)

    def option_schema(self, key: str) -> dict[str, Any]:
        if key == "release":
            return {"enum": [DEFAULT_RELEASE, *self.releases]}
        return super().option_schema(key)

    def measured_options(self, cell: Cell, options: dict[str, Any]) -> dict[str, Any]:
        """The resolved options less the `quiet_options` at their defaults: `release` when it is
        DLPerf v1.0's, `sources_dir` when unset (so cells of the default release measure, and are
        fresh, exactly as before these options existed). The run is launched with all of them."""
        measured = super().measured_options(cell, options)
        for key in self.quiet_options:
            if key in measured and measured[key] == self.options[key]:
                del measured[key]
        return measured

    def release_name(self, options: Mapping[str, Any]) -> str:
        return str(options.get("release") or DEFAULT_RELEASE)

    def release(self, options: Mapping[str, Any]) -> Release | None:
        """The chosen release, or None for DLPerf v1.0's (the class attributes)."""
        name = self.release_name(options)
        if name == DEFAULT_RELEASE:
            return None
        if name not in self.releases:
            known = ", ".join([DEFAULT_RELEASE, *self.releases])
            raise ConfigError(f".options.release: {self.name} has no release {name!r} ({known})")
        return self.releases[name]

    def evidence_of(self, name: str) -> Evidence:
        """What release `name` has been proven on (never run: what was read instead, where the
        release says)."""
        release = self.releases.get(name) if name != DEFAULT_RELEASE else None
        evidence = release.evidence if release else self.evidence
        unverified = release.unverified if release else getattr(self, "unverified", "")
        if evidence.ran is Ran.NEVER and unverified:
            return Evidence(Ran.NEVER, unverified.removeprefix("not run: "))
        return evidence

    def describe(self) -> dict[str, Any]:
        """The adapter's row, with what each release has been proven on (Evidence)."""
        releases = (DEFAULT_RELEASE, *self.releases)
        return super().describe() | {
            "evidence": {r: self.evidence_of(r).phrase() for r in releases}
        }

    def launch_of(self, options: Mapping[str, Any], model: str = "") -> str:
        release = self.release(options)
        if release is not None:
            return release.launch or self.launch
        return self.model_launch.get(model) or self.launch

    def source_of(self, model: str, options: Mapping[str, Any]) -> ModelSource:
        release = self.release(options)
        return release.models[model] if release else self.models[model]

    def parser_of(self, model: str, options: Mapping[str, Any]) -> Parser:
        release = self.release(options)
        return (release.parsers.get(model) if release else None) or self.parsers[model]

    def environment_of(self, options: Mapping[str, Any]) -> str:
        release = self.release(options)
        return release.environment if release else self.environment

    def version_of(self, options: Mapping[str, Any]) -> str:
        release = self.release(options)
        return release.version if release else self.version

    def allowed_variants(self, model: str) -> set[str]:
        if model in self.only_variant:
            return {self.only_variant[model]}
        return {"default", *self.variants.get(model, {})}

    # ----------------------------------------------------------------------------- planning

    def steps_for(
        self, warmup: int, measure: int, options: Mapping[str, Any] | None = None, model: str = ""
    ) -> int:
        """Enough iterations for the window in whole logging intervals, plus one interval, after
        the iterations the model's script runs before its first logged one."""
        window = warmup + measure
        interval = self.log_interval_of(options or {})
        logged = max(window + 2, interval * (math.ceil(window / interval) + 1))
        return logged + self.hidden_steps(model, options or {})

    def hidden_steps(self, model: str, options: Mapping[str, Any]) -> int:
        """Iterations the model's script runs before it logs its first (the window counts from
        the first logged one)."""
        return 0

    def log_interval_of(self, options: Mapping[str, Any]) -> int:
        """Iterations per logged line under these options (`log_interval`, unless an option of
        the adapter sets it)."""
        return self.log_interval

    def skip_reason(self, cell: Cell, options: dict[str, Any]) -> str | None:
        if not options.get("data_dir") and cell.model not in self.synthetic_models:
            reason = Phrase.of(
                "detail.no_synthetic_input", framework=self.display_name, model=cell.model
            )
            return english(reason)
        return None

    def tokens_per_sample(self, cell: Cell, options: dict[str, Any]) -> int | None:
        """The option seq_len where the source takes one, else the sequence its scripts train."""
        if cell.model not in LANGUAGE_MODELS:
            return None
        return int(options.get("seq_len") or self.seq_len)

    def batch_size(self, cell: Cell, options: dict[str, Any]) -> int:
        """Samples per device of this cell (`max` resolved from option max_batch_size)."""
        if cell.batch_size == "max":
            return resolve_max_batch(
                options["max_batch_size"], self.name, cell.model, cell.precision, cell.xla
            )
        return int(cell.batch_size)

    # ----------------------------------------------------------------------------- launching

    def root(self, options: Mapping[str, Any], model: str = "") -> str:
        """The checkout the scripts run from: option source_root; else, with option sources_dir,
        `dlperf sources`' checkout of the model's repository at its commit (`model` may be left
        out where every model of the release is in one checkout); else the adapter's default."""
        if options.get("source_root"):
            return str(options["source_root"])
        if options.get("sources_dir"):
            sources = {
                self.source_of(m, options) for m in ([model] if model else self.models_of(options))
            }
            folders = {s.checkout_in(str(options["sources_dir"])) for s in sources}
            if len(folders) > 1:
                raise ConfigError(
                    f".options.sources_dir: {self.name}'s models are in {len(folders)} checkouts; "
                    "name the model whose root is meant"
                )
            return folders.pop()
        release = self.release(options)
        return (release.source_root if release else "") or self.source_root

    def models_of(self, options: Mapping[str, Any]) -> list[str]:
        """The models the chosen release runs."""
        release = self.release(options)
        return list(release.models if release else self.models)

    def model_dir(self, model: str, options: dict[str, Any]) -> str:
        """The model's folder in the checkout."""
        path = self.source_of(model, options).path
        root = self.root(options, model)
        return f"{root.rstrip('/')}/{path}".rstrip("/") if path else root

    def script(self, model: str, options: dict[str, Any]) -> str:
        if options.get("script"):
            return str(options["script"])
        release = self.release(options)
        entry = (release.entry.get(model) if release else None) or self.entry[model]
        return f"{self.model_dir(model, options)}/{entry}"

    def script_argv(self, ctx: TaskContext) -> list[str]:
        """The script as a worker's interpreter runs it: its path, after any wrapper."""
        return [self.script(ctx.cell.model, ctx.options)]

    def program(self, ctx: TaskContext) -> list[str]:
        """What each worker runs before its arguments: the interpreter and the script."""
        return [str(ctx.options["python"]), *self.script_argv(ctx)]

    def script_args(self, ctx: TaskContext) -> list[str]:
        """The upstream script's own arguments (batch size, precision, XLA, steps, layout)."""
        raise NotImplementedError

    def workload_env(self, ctx: TaskContext) -> dict[str, str]:
        """Environment variables of the workload: the adapter's, then the case's."""
        return {str(k): str(v) for k, v in ctx.options.get("env", {}).items()}

    def procs_per_node(self, ctx: TaskContext) -> int:
        """Worker processes per node (one per GPU, unless the program drives all of a node's GPUs)."""
        return ctx.gpus_per_node

    def command(self, ctx: TaskContext) -> list[str]:
        launch = self.launch_of(ctx.options, ctx.cell.model)
        if launch in RANK0_LAUNCHES and ctx.node_rank > 0:
            return idle_command(ctx, launch)
        o = ctx.options
        args = [*self.script_args(ctx), *(str(a) for a in o.get("extra_args", []))]
        env = self.workload_env(ctx)
        launcher = launcher_args(launch, ctx, env, self.procs_per_node(ctx))
        if launch in SCRIPT_LAUNCHES:
            argv = [*launcher, *self.script_argv(ctx), *args]
        else:
            argv = [*launcher, *self.program(ctx), *args]
        if env:
            argv = ["env", *(f"{k}={v}" for k, v in sorted(env.items())), *argv]
        if self.stop_pattern:
            argv = stop_after_prefix(self.stop_pattern, ctx.steps, self.progress_lines(ctx)) + argv
        return [str(a) for a in argv]

    def progress_lines(self, ctx: TaskContext) -> int:
        """Progress lines per step this node's output holds (every rank it sees prints one)."""
        if self.launch_of(ctx.options, ctx.cell.model) in RANK0_LAUNCHES:
            return ctx.nodes * self.procs_per_node(ctx)
        return self.procs_per_node(ctx)

    # ----------------------------------------------------------------------------- parsing

    def log_files(self, logs: list[Path], launch: str = "") -> list[Path]:
        """The files the parser reads, in rank order (see launchers.worker_logs)."""
        return worker_logs(launch or self.launch, logs)

    def parse(
        self,
        logs: list[Path],
        cell: Cell,
        options: dict[str, Any],
        keep_iterations: int | None = None,
    ) -> ParseResult:
        """The model's parser over the launch style's logs; with `keep_iterations`, each log's
        rows past what the window can reach are not kept (parse.upstream.rows.rows_for)."""
        parser = self.parser_of(cell.model, options)
        facts = RunFacts(
            batch_size_per_device=self.batch_size(cell, options),
            world_size=cell.layout.devices,
            nodes=cell.layout.nodes,
            seq_len=int(options.get("seq_len", self.seq_len))
            if cell.model in LANGUAGE_MODELS
            else None,
        )
        with rows_for(keep_iterations, cell.layout.devices):
            return parser(self.log_files(logs, self.launch_of(options, cell.model)), facts)


# --------------------------------------------------------------------------------- helpers


def resolve_max_batch(
    table: dict[str, Any], adapter: str, model: str, precision: str, xla: bool
) -> int:
    """`max` for a model: a number, or a mapping by precision (`amp_xla` before `amp` when XLA is on)."""
    entry = table.get(model)
    if isinstance(entry, dict):
        keys = [f"{precision}_xla", precision] if xla else [precision]
        entry = next((entry[k] for k in keys if k in entry), None)
    if isinstance(entry, bool) or not isinstance(entry, int) or entry < 1:
        raise ConfigError(
            f".options.max_batch_size: {adapter} has no max batch size for {model} {precision}"
            f"{' with XLA' if xla else ''}; set options.max_batch_size.{model}"
        )
    return entry


def flag_bool(value: bool) -> str:
    """Python-style booleans, as argparse `str2bool` flags of the upstream scripts expect."""
    return "True" if value else "False"
