"""How an upstream adapter's ranks are started: one launch style per name, one task per node.

Launch styles (an adapter's or a release's `launch` names one; each is `Launcher.PER_NODE`):

- `native`: the script spans nodes itself (OneFlow's `--node_ips`, TF2's worker hosts,
  pytorch/examples' `--dist-url`); every node runs it once.
- `torch`: `python -m torch.distributed.launch` on every node (master address and port from the job):
  each rank gets a `--local_rank=<i>` argument.
- `torch_env`: the same with `--use_env`: ranks learn LOCAL_RANK from the environment only and get
  no argument (what DLE's multiproc.py did; a script whose argparse has no --local_rank needs it).
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

Scripts without a step limit run under `dlperf.adapters.stop_after` (stop_after_prefix).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from dlperf.adapters.base import TaskContext
from dlperf.adapters.hosts import node_hosts

# Launchers run as `python -m <module>` with torch.distributed.launch's flags.
MODULE_LAUNCHERS = {
    "torch": "torch.distributed.launch",
    "torch_env": "torch.distributed.launch",
    "torchrun": "torch.distributed.run",
    "oneflow": "oneflow.distributed.launch",
}
# the flag that makes a module launcher pass ranks in the environment only
ENV_ONLY_FLAG = {"torch_env": "--use_env"}
# paddle.distributed.launch of Paddle 1.x (`paddle`) and 2.x+ (`paddle_collective`): both put each
# worker's output in <log_dir>/workerlog.<local rank>.
PADDLE_LAUNCHES = ("paddle", "paddle_collective")
RANK0_LAUNCHES = ("horovodrun", "mpirun")
# Launchers that take the script itself and start the interpreter (not the adapter's program).
SCRIPT_LAUNCHES = (*MODULE_LAUNCHERS, *PADDLE_LAUNCHES)
# The `step` group a stop pattern (an adapter's `stop_pattern`) needs.
STEP_GROUP = r"(?P<step>\d+)"

# A launch style's arguments: (task, workload environment, worker processes per node).
LaunchArgs = Callable[[TaskContext, Mapping[str, str], int], list[str]]


def _native(ctx: TaskContext, env: Mapping[str, str], slots: int) -> list[str]:
    return []


def _module(launch: str) -> LaunchArgs:
    def args(ctx: TaskContext, env: Mapping[str, str], slots: int) -> list[str]:
        return [
            str(ctx.options["python"]),
            "-m",
            MODULE_LAUNCHERS[launch],
            *([ENV_ONLY_FLAG[launch]] if launch in ENV_ONLY_FLAG else []),
            f"--nproc_per_node={ctx.gpus_per_node}",
            f"--nnodes={ctx.nodes}",
            f"--node_rank={ctx.node_rank}",
            f"--master_addr={ctx.master_addr}",
            f"--master_port={ctx.master_port}",
        ]

    return args


def _paddle(ctx: TaskContext, env: Mapping[str, str], slots: int) -> list[str]:
    hosts = node_hosts(ctx)
    return [
        str(ctx.options["python"]),
        "-m",
        "paddle.distributed.launch",
        f"--cluster_node_ips={','.join(hosts)}",
        f"--node_ip={hosts[ctx.node_rank]}",
        f"--started_port={ctx.master_port}",
        f"--selected_gpus={','.join(str(i) for i in range(ctx.gpus_per_node))}",
        f"--log_dir={paddle_log_dir(ctx.run_dir, ctx.node_rank)}",
    ]


def _paddle_collective(ctx: TaskContext, env: Mapping[str, str], slots: int) -> list[str]:
    """Paddle 2.x+: --master/--nnodes/--rank (several nodes only), --devices (on a CPU:
    --nproc_per_node)."""
    nodes = [
        f"--master={ctx.master_addr}:{ctx.master_port}",
        f"--nnodes={ctx.nodes}",
        f"--rank={ctx.node_rank}",
    ]
    return [
        str(ctx.options["python"]),
        "-m",
        "paddle.distributed.launch",
        *(nodes if ctx.nodes > 1 else []),
        # a CPU build has no device ids: `--devices=0` stops it (ValueError in
        # launch/context/device.py); it starts --nproc_per_node processes instead
        f"--nproc_per_node={ctx.gpus_per_node}"
        if ctx.device == "cpu"
        else f"--devices={','.join(str(i) for i in range(ctx.gpus_per_node))}",
        f"--log_dir={paddle_log_dir(ctx.run_dir, ctx.node_rank)}",
    ]


def _host_slots(ctx: TaskContext, slots: int) -> list[str]:
    """`-np` and `-H host:slots,...` of every node's ranks."""
    host_slots = ",".join(f"{h}:{slots}" for h in node_hosts(ctx))
    return ["-np", str(ctx.nodes * slots), "-H", host_slots]


def _horovodrun(ctx: TaskContext, env: Mapping[str, str], slots: int) -> list[str]:
    port = int(ctx.options.get("ssh_port") or 0)
    ssh = ["-p", str(port)] if port else []
    extra = [str(a) for a in ctx.options.get("mpi_args", [])]
    return ["horovodrun", *_host_slots(ctx, slots), *ssh, "--start-timeout", "600", *extra]


def _mpirun(ctx: TaskContext, env: Mapping[str, str], slots: int) -> list[str]:
    port = int(ctx.options.get("ssh_port") or 0)
    ssh = ["-mca", "plm_rsh_args", f"-p {port} -q -o StrictHostKeyChecking=no"] if port else []
    extra = [str(a) for a in ctx.options.get("mpi_args", [])]
    # mpirun's ranks on other nodes get no variable it does not name: the workload's own, and
    # the site's (NCCL_SOCKET_IFNAME on node 0's ranks only would set them apart)
    always = ["LD_LIBRARY_PATH", "PATH"]
    names = [*always, *sorted((set(env) | set(ctx.site_env)) - set(always))]
    exported = [a for key in names for a in ("-x", key)]
    return [
        "mpirun",
        "--allow-run-as-root",
        "--oversubscribe",
        "--tag-output",
        *_host_slots(ctx, slots),
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


LAUNCHERS: dict[str, LaunchArgs] = {
    "native": _native,
    **{name: _module(name) for name in MODULE_LAUNCHERS},
    "paddle": _paddle,
    "paddle_collective": _paddle_collective,
    "horovodrun": _horovodrun,
    "mpirun": _mpirun,
}
LAUNCHES = tuple(LAUNCHERS)


def launcher_args(launch: str, ctx: TaskContext, env: Mapping[str, str], slots: int) -> list[str]:
    """The launch style's own arguments, before the script (`slots`: worker processes per node,
    horovodrun's and mpirun's `-H host:slots`; mpirun exports the workload's `env` to the ranks)."""
    if launch not in LAUNCHERS:
        raise ValueError(f"no launch style {launch!r} (known: {', '.join(LAUNCHES)})")
    return LAUNCHERS[launch](ctx, env, slots)


def worker_logs(launch: str, logs: list[Path]) -> list[Path]:
    """The files a launch style's output lies in, in rank order, from the run's task logs.

    horovodrun/mpirun: node 0's log, which holds every rank's (tagged) output; the other nodes'
    logs only say that node 0 started their ranks. paddle: the workers' own logs
    (paddle_node<i>/workerlog.<j>), where the launcher put their output.
    """
    if not logs:
        return []
    if launch in RANK0_LAUNCHES:
        first = [p for p in logs if Path(p).name == "node0.log"]
        return first or list(logs[:1])
    if launch in PADDLE_LAUNCHES:
        workers = sorted(Path(logs[0]).parent.glob("paddle_node*/workerlog.*"), key=_natural)
        return workers or list(logs)
    return list(logs)


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


def _natural(path: Path) -> tuple[Any, ...]:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(path)))
