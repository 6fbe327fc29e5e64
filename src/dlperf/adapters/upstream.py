"""What the adapters of upstream benchmark scripts (DLPerf's sources) share.

An upstream adapter is mostly data: where the script lives (`models`, `entry`), which parser reads
its log (`parsers`), what it can run (`precisions`, `xla_models`, `variants`, `synthetic_models`),
how often it logs (`log_interval`) and how its ranks are started (`launch`). A subclass adds only
`script_args(ctx)`: the upstream script's own flags for batch size, precision, XLA and steps.

Launch styles (every one is `Launcher.PER_NODE`: one task per node):

- `native`: the script spans nodes itself (OneFlow's `--node_ips`, TF2's worker hosts,
  pytorch/examples' `--dist-url`); every node runs it once.
- `torch`: `python -m torch.distributed.launch` on every node (master address and port from the job).
- `torchrun`: `python -m torch.distributed.run` (torchrun) on every node: ranks learn LOCAL_RANK from
  the environment, not from a `--local_rank` argument (what current PyTorch scripts expect).
- `oneflow`: `python -m oneflow.distributed.launch` on every node: a copy of PyTorch 1.8.1's
  torch.distributed.launch with the same flags, which passes ranks in the environment only.
- `paddle`: `python -m paddle.distributed.launch` on every node, each worker's log in its own file.
- `paddle_collective`: the same with Paddle 2.x+'s flags (`--master`, `--nnodes`, `--rank`,
  `--devices`).
- `horovodrun` / `mpirun`: node 0 starts every rank over ssh, as DLPerf did (`-H host:slots,...`);
  the other nodes' tasks only say so and exit. Needs password-less ssh between the nodes (in the
  container, when there is one), like DLPerf's own scripts.

Commands are argument lists: option values are passed as single arguments, never through a shell.

Releases: option `release` picks which version of the source runs. `dlperf_v1` (the default) is
what the class attributes describe, DLPerf v1.0's pins; an adapter declares any other in `releases`
(a `Release`: version, container, models at their commit, entry scripts, parsers, launch style), and
its `script_args` branches on `self.release_name(options)` where the command lines differ. The
default release is left out of `resolved_options`, so DLPerf v1.0 cells measure (and rerun) exactly
as before; a non-default release is an option of the run and part of what it measures.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from dlperf.adapters.base import Adapter, Launcher, ModelSource, TaskContext
from dlperf.errors import ConfigError
from dlperf.matrix import Cell
from dlperf.parse.records import ParseError, ParseResult
from dlperf.vocabulary import LANGUAGE_MODELS, PRECISIONS

ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
LAUNCHES = (
    "native",
    "torch",
    "torchrun",
    "oneflow",
    "paddle",
    "paddle_collective",
    "horovodrun",
    "mpirun",
)
# paddle.distributed.launch of Paddle 1.x (`paddle`) and 2.x+ (`paddle_collective`): both put each
# worker's output in <log_dir>/workerlog.<local rank>.
PADDLE_LAUNCHES = ("paddle", "paddle_collective")
RANK0_LAUNCHES = ("horovodrun", "mpirun")
# Launchers run as `python -m <module>` with torch.distributed.launch's flags.
MODULE_LAUNCHERS = {
    "torch": "torch.distributed.launch",
    "torchrun": "torch.distributed.run",
    "oneflow": "oneflow.distributed.launch",
}
DEFAULT_RELEASE = "dlperf_v1"  # the sources as DLPerf v1.0 ran them (the class attributes)


@dataclass(frozen=True)
class Release:
    """A version of an upstream source other than DLPerf v1.0's, chosen by option `release`.

    `models` lists every model the release runs, at its commit; `entry`, `parsers`, `launch` and
    `source_root` replace the adapter's own where given (empty: the same as DLPerf v1.0's).
    `unverified` says what has not been checked against a real run of this release.
    """

    version: str  # framework and source versions, as the report shows them
    environment: str  # the container image (or envs/ file) the release runs in
    models: Mapping[str, ModelSource]
    entry: Mapping[str, str] = field(default_factory=dict)
    parsers: Mapping[str, str] = field(default_factory=dict)
    launch: str = ""
    source_root: str = ""
    unverified: str = ""


def upstream_options(mpi: bool = False, **specific: Any) -> dict[str, Any]:
    """The options every upstream adapter takes (and the ssh/MPI ones with `mpi`), with its own."""
    options: dict[str, Any] = {
        "source_root": "",  # the upstream checkout on the node; "" = the adapter's default
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
    source_root: ClassVar[str] = ""  # default checkout location on the node
    entry: ClassVar[dict[str, str]] = {}  # model -> script, relative to the model's folder
    parsers: ClassVar[dict[str, str]] = {}  # model -> function of dlperf.parse.upstream
    precisions: ClassVar[
        dict[str, tuple[str, ...]]
    ] = {}  # model -> precisions it runs (default both)
    xla_models: ClassVar[frozenset[str]] = frozenset()  # models it can run with XLA on
    synthetic_models: ClassVar[frozenset[str]] = frozenset()  # models that run without data_dir
    variants: ClassVar[dict[str, dict[str, tuple[str, ...]]]] = {}  # model -> variant -> extra args
    only_variant: ClassVar[dict[str, str]] = {}  # model -> the one variant the source can run
    log_interval: ClassVar[int] = 1  # iterations per logged line (the largest over its models)
    hidden_steps: ClassVar[int] = 0  # iterations run before the first logged one
    stop_pattern: ClassVar[str] = (
        ""  # progress line with a `step` group, for scripts without a step limit
    )
    seq_len: ClassVar[int] = 128  # sequence length of its language models (parser facts)
    releases: ClassVar[dict[str, Release]] = {}  # name -> a release other than dlperf_v1
    oom_patterns: ClassVar[tuple[str, ...]] = (
        *Adapter.oom_patterns,
        r"(?i)out of memory",  # Paddle's "Out of memory error on GPU", MXNet's cudaMalloc
        r"OOM when allocating",  # TensorFlow
        r"CUDNN_STATUS_ALLOC_FAILED|CUBLAS_STATUS_ALLOC_FAILED",
    )

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
        if any(case.get("xla", [False])) and model not in self.xla_models:
            can = ", ".join(sorted(self.xla_models)) or "none"
            raise ConfigError(
                f".xla: {self.name} cannot run {model} with XLA on (models with XLA: {can})"
            )
        allowed = self.precisions.get(model, PRECISIONS)
        for precision in case.get("precision", ["fp32"]):
            if precision not in allowed:
                raise ConfigError(
                    f".precision: {self.name} runs {model} in {', '.join(allowed)} only, not {precision}"
                )
        variant = case.get("variant", "default")
        variants = self.allowed_variants(model)
        if variant not in variants:
            raise ConfigError(
                f".variant: {self.name} runs {model} as variant {' or '.join(sorted(variants))}, not {variant!r}"
            )
        for precision in case.get("precision", ["fp32"]):
            options = self.resolved_options(
                {**case.get("options", {}), **case.get("precision_options", {}).get(precision, {})}
            )
            check_common_options(options)
            if "max" in case["batch_size"]:
                for xla in case.get("xla", [False]):
                    resolve_max_batch(options["max_batch_size"], self.name, model, precision, xla)

    def option_schema(self, key: str) -> dict[str, Any]:
        if key == "release":
            return {"enum": [DEFAULT_RELEASE, *self.releases]}
        return super().option_schema(key)

    def resolved_options(self, options: dict[str, Any]) -> dict[str, Any]:
        """Every option with its default, except `release` when it is DLPerf v1.0's (so cells of
        the default release measure, and are fresh, exactly as before releases existed)."""
        resolved = super().resolved_options(options)
        if resolved.get("release") == DEFAULT_RELEASE:
            del resolved["release"]
        return resolved

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

    def launch_of(self, options: Mapping[str, Any]) -> str:
        release = self.release(options)
        return (release.launch if release else "") or self.launch

    def source_of(self, model: str, options: Mapping[str, Any]) -> ModelSource:
        release = self.release(options)
        return release.models[model] if release else self.models[model]

    def parser_of(self, model: str, options: Mapping[str, Any]) -> str:
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

    def steps_for(self, warmup: int, measure: int) -> int:
        """Enough iterations for the window in whole logging intervals, plus one interval."""
        window = warmup + measure
        interval = self.log_interval
        return max(window + 2, interval * (math.ceil(window / interval) + 1)) + self.hidden_steps

    def skip_reason(self, cell: Cell, options: dict[str, Any]) -> str | None:
        if not options.get("data_dir") and cell.model not in self.synthetic_models:
            return (
                f"{self.display_name} has no synthetic input for {cell.model}: set option data_dir "
                "to the prepared dataset on the nodes"
            )
        return None

    def batch_size(self, cell: Cell, options: dict[str, Any]) -> int:
        """Samples per device of this cell (`max` resolved from option max_batch_size)."""
        if cell.batch_size == "max":
            return resolve_max_batch(
                options["max_batch_size"], self.name, cell.model, cell.precision, cell.xla
            )
        return int(cell.batch_size)

    # ----------------------------------------------------------------------------- launching

    def root(self, options: dict[str, Any]) -> str:
        release = self.release(options)
        default = (release.source_root if release else "") or self.source_root
        return str(options.get("source_root") or default)

    def model_dir(self, model: str, options: dict[str, Any]) -> str:
        """The model's folder in the checkout."""
        path = self.source_of(model, options).path
        return (
            f"{self.root(options).rstrip('/')}/{path}".rstrip("/") if path else self.root(options)
        )

    def script(self, model: str, options: dict[str, Any]) -> str:
        if options.get("script"):
            return str(options["script"])
        release = self.release(options)
        entry = (release.entry.get(model) if release else None) or self.entry[model]
        return f"{self.model_dir(model, options)}/{entry}"

    def program(self, ctx: TaskContext) -> list[str]:
        """What each worker runs before its arguments: the interpreter and the script."""
        return [str(ctx.options["python"]), self.script(ctx.cell.model, ctx.options)]

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
        launch = self.launch_of(ctx.options)
        if launch in RANK0_LAUNCHES and ctx.node_rank > 0:
            return idle_command(ctx, launch)
        o = ctx.options
        variant_args = self.variants.get(ctx.cell.model, {}).get(ctx.cell.variant, ())
        args = [*self.script_args(ctx), *variant_args, *(str(a) for a in o.get("extra_args", []))]
        env = self.workload_env(ctx)
        if launch in (*MODULE_LAUNCHERS, *PADDLE_LAUNCHES):
            argv = [*self.launcher_args(ctx, env), self.script(ctx.cell.model, o), *args]
        else:
            argv = [*self.launcher_args(ctx, env), *self.program(ctx), *args]
        if env:
            argv = ["env", *(f"{k}={v}" for k, v in sorted(env.items())), *argv]
        if self.stop_pattern:
            argv = stop_after_prefix(self.stop_pattern, ctx.steps, self.progress_lines(ctx)) + argv
        return [str(a) for a in argv]

    def progress_lines(self, ctx: TaskContext) -> int:
        """Progress lines per step this node's output holds (every rank it sees prints one)."""
        if self.launch_of(ctx.options) in RANK0_LAUNCHES:
            return ctx.nodes * self.procs_per_node(ctx)
        return self.procs_per_node(ctx)

    def launcher_args(self, ctx: TaskContext, env: dict[str, str]) -> list[str]:
        o = ctx.options
        python = str(o["python"])
        gpus = ctx.gpus_per_node
        launch = self.launch_of(o)
        if launch == "native":
            return []
        if launch in MODULE_LAUNCHERS:
            return [
                python,
                "-m",
                MODULE_LAUNCHERS[launch],
                f"--nproc_per_node={gpus}",
                f"--nnodes={ctx.nodes}",
                f"--node_rank={ctx.node_rank}",
                f"--master_addr={ctx.master_addr}",
                f"--master_port={ctx.master_port}",
            ]
        if launch == "paddle":
            hosts = node_hosts(ctx)
            return [
                python,
                "-m",
                "paddle.distributed.launch",
                f"--cluster_node_ips={','.join(hosts)}",
                f"--node_ip={hosts[ctx.node_rank]}",
                f"--started_port={ctx.master_port}",
                f"--selected_gpus={','.join(str(i) for i in range(gpus))}",
                f"--log_dir={paddle_log_dir(ctx.run_dir, ctx.node_rank)}",
            ]
        if launch == "paddle_collective":  # Paddle 2.x+: --master/--nnodes/--rank, --devices
            nodes = [
                f"--master={ctx.master_addr}:{ctx.master_port}",
                f"--nnodes={ctx.nodes}",
                f"--rank={ctx.node_rank}",
            ]
            return [
                python,
                "-m",
                "paddle.distributed.launch",
                *(nodes if ctx.nodes > 1 else []),
                f"--devices={','.join(str(i) for i in range(gpus))}",
                f"--log_dir={paddle_log_dir(ctx.run_dir, ctx.node_rank)}",
            ]
        slots = self.procs_per_node(ctx)
        host_slots = ",".join(f"{h}:{slots}" for h in node_hosts(ctx))
        np_ = str(ctx.nodes * slots)
        port = int(o.get("ssh_port") or 0)
        extra = [str(a) for a in o.get("mpi_args", [])]
        if launch == "horovodrun":
            ssh = ["-p", str(port)] if port else []
            return [
                "horovodrun",
                "-np",
                np_,
                "-H",
                host_slots,
                *ssh,
                "--start-timeout",
                "600",
                *extra,
            ]
        ssh = ["-mca", "plm_rsh_args", f"-p {port} -q -o StrictHostKeyChecking=no"] if port else []
        exported = [a for key in ["LD_LIBRARY_PATH", "PATH", *sorted(env)] for a in ("-x", key)]
        return [
            "mpirun",
            "--allow-run-as-root",
            "--oversubscribe",
            "--tag-output",
            "-np",
            np_,
            "-H",
            host_slots,
            "-bind-to",
            "none",
            "-map-by",
            "slot",
            *exported,
            "-mca",
            "pml",
            "ob1",
            "-mca",
            "btl",
            "^openib",
            *ssh,
            *extra,
        ]

    # ----------------------------------------------------------------------------- parsing

    def log_files(self, logs: list[Path], launch: str = "") -> list[Path]:
        """The files the parser reads, in rank order.

        horovodrun/mpirun: node 0's log, which holds every rank's (tagged) output; the other
        nodes' logs only say that node 0 started their ranks. paddle: the workers' own logs
        (paddle_node<i>/workerlog.<j>), where the launcher put their output.
        """
        launch = launch or self.launch
        if not logs:
            return []
        if launch in RANK0_LAUNCHES:
            first = [p for p in logs if Path(p).name == "node0.log"]
            return first or list(logs[:1])
        if launch in PADDLE_LAUNCHES:
            workers = sorted(Path(logs[0]).parent.glob("paddle_node*/workerlog.*"), key=_natural)
            return workers or list(logs)
        return list(logs)

    def parse(self, logs: list[Path], cell: Cell, options: dict[str, Any]) -> ParseResult:
        parser, facts_cls = _parser(self.parser_of(cell.model, options))
        facts = make_facts(
            facts_cls,
            batch_size_per_device=self.batch_size(cell, options),
            world_size=cell.layout.devices,
            nodes=cell.layout.nodes,
            seq_len=int(options.get("seq_len", self.seq_len))
            if cell.model in LANGUAGE_MODELS
            else None,
        )
        return parser(self.log_files(logs, self.launch_of(options)), facts)


# --------------------------------------------------------------------------------- helpers


def check_common_options(options: dict[str, Any]) -> None:
    """Types of the shared options (a ConfigError names the key)."""
    for key in ("source_root", "script", "python", "data_dir"):
        if key in options and not isinstance(options[key], str):
            raise ConfigError(f".options.{key}: expected a string, got {options[key]!r}")
    for key in ("extra_args", "mpi_args"):
        value = options.get(key, [])
        if not isinstance(value, list) or not all(isinstance(a, str | int | float) for a in value):
            raise ConfigError(f".options.{key}: expected a list of arguments (strings or numbers)")
    env = options.get("env", {})
    if not isinstance(env, dict):
        raise ConfigError(".options.env: expected a mapping NAME: value")
    for name, value in env.items():
        if not isinstance(name, str) or not ENV_KEY.match(name):
            raise ConfigError(f".options.env.{name}: not a valid environment variable name")
        if not isinstance(value, str | int | float):
            raise ConfigError(f".options.env.{name}: expected a string or number")
    if not isinstance(options.get("max_batch_size", {}), dict):
        raise ConfigError(".options.max_batch_size: expected a mapping model -> size")
    port = options.get("ssh_port", 0)
    if not isinstance(port, int) or port < 0:
        raise ConfigError(".options.ssh_port: expected a port number (0 = ssh's default)")


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


def node_hosts(ctx: TaskContext) -> list[str]:
    """Host names of the job's nodes, node 0 first.

    From the task context when it carries them (`hosts`), else the master alone on one node, else
    Slurm's node list (SLURM_JOB_NODELIST, in node order).
    """
    hosts = list(ctx.hosts)
    if hosts:
        return hosts[: ctx.nodes]
    if ctx.nodes == 1:
        return [ctx.master_addr]
    nodelist = os.environ.get("SLURM_JOB_NODELIST") or os.environ.get("SLURM_NODELIST") or ""
    hosts = expand_hostlist(nodelist)
    if len(hosts) < ctx.nodes:
        raise RuntimeError(
            f"{ctx.nodes} nodes but the host list is {hosts or 'unknown'} "
            "(no SLURM_JOB_NODELIST on this node)"
        )
    return hosts[: ctx.nodes]


def expand_hostlist(text: str) -> list[str]:
    """Slurm's compressed host list (`gpu[01-03,07],login1`) as names, in order."""
    hosts: list[str] = []
    for item in _split_top(text.strip()):
        hosts.extend(_expand_one(item))
    return hosts


def _split_top(text: str) -> list[str]:
    items, depth, current = [], 0, ""
    for char in text:
        if char == "," and depth == 0:
            items.append(current)
            current = ""
            continue
        depth += {"[": 1, "]": -1}.get(char, 0)
        current += char
    if current:
        items.append(current)
    return [i for i in items if i]


def _expand_one(item: str) -> list[str]:
    match = re.search(r"\[([^\]]*)\]", item)
    if not match:
        return [item]
    head, tail = item[: match.start()], item[match.end() :]
    names = []
    for part in match.group(1).split(","):
        lo, _, hi = part.partition("-")
        width = len(lo)
        for n in range(int(lo), int(hi or lo) + 1):
            names.extend(_expand_one(f"{head}{n:0{width}d}{tail}"))
    return names


def idle_command(ctx: TaskContext, launch: str) -> list[str]:
    """The task of a node whose ranks node 0's launcher starts over ssh: it only says so."""
    message = f"dlperf: node {ctx.node_rank}: its ranks are started by node 0's {launch} over ssh"
    return [sys.executable, "-c", "import sys; print(sys.argv[1])", message]


def stop_after_prefix(pattern: str, steps: int, lines: int) -> list[str]:
    """Wrap a script without a step limit: stop it once `lines` progress lines reached `steps`."""
    return [
        sys.executable,
        "-m",
        "dlperf.adapters.stop_after",
        "--pattern",
        pattern,
        "--step",
        str(steps),
        "--lines",
        str(max(1, lines)),
        "--",
    ]


def paddle_log_dir(run_dir: Path, node_rank: int) -> Path:
    return Path(run_dir) / f"paddle_node{node_rank}"


def make_facts(facts_cls: type, **values: Any) -> Any:
    """The parser's RunFacts from what this side knows (fields it does not have are left out)."""
    if dataclasses.is_dataclass(facts_cls):
        names = {f.name for f in dataclasses.fields(facts_cls)}
        values = {k: v for k, v in values.items() if k in names}
    return facts_cls(**values)


def _parser(name: str) -> tuple[Any, type]:
    try:
        from dlperf.parse import upstream  # late: the parsers are optional for planning
    except ImportError as err:
        raise ParseError(f"the upstream log parsers are not installed ({err})") from None
    function = getattr(upstream, name, None)
    facts = getattr(upstream, "RunFacts", None)
    if function is None or facts is None:
        raise ParseError(f"dlperf.parse.upstream has no {name if function is None else 'RunFacts'}")
    return function, facts


def _natural(path: Path) -> tuple[Any, ...]:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(path)))


def flag_bool(value: bool) -> str:
    """Python-style booleans, as argparse `str2bool` flags of the upstream scripts expect."""
    return "True" if value else "False"


def join_ints(values: Iterable[int]) -> str:
    return ",".join(str(v) for v in values)
