"""What runs on the node: one submitit task launches one rank (or one node's launcher).

It sets the rank's environment from the job, checks the GPUs it sees, runs the adapter's command
with stdout and stderr in its own log file, and writes its outcome as task<i>.json beside it.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import submitit

from dlperf import logline
from dlperf.adapters import TaskContext, get_adapter
from dlperf.adapters.base import Launcher
from dlperf.i18n import Phrase, english
from dlperf.launch.facts import node_facts, visible_gpus
from dlperf.launch.oom import OomKills, is_oom
from dlperf.launch.spec import RunSpec
from dlperf.paths import RunPaths
from dlperf.status import Status
from dlperf.util import atomic_write_json

PR_SET_PDEATHSIG = 1  # prctl(2)
WATCH_S = 0.5  # how often a local task checks that its submitter still lives


# Slurm jobs' rendezvous ports: below Linux's ephemeral range (32768-60999), where an outgoing
# connection of another process (NCCL's, gloo's) may hold the port; each job a block of its own
# (Paddle's launcher takes its started_port plus each local rank's index)
PORT_BASE, PORT_BLOCK, PORT_BLOCKS = 20000, 16, 750  # 20000-31999


def rendezvous_port(job_id: str, fixed: int | None) -> int:
    """A port no concurrent job shares: fixed by the submitter (local) or derived from the job id
    (the first of its block; jobs 750 ids apart share one)."""
    if fixed:
        return fixed
    digits = re.sub(r"\D", "", job_id.split("_")[0]) or "0"
    return PORT_BASE + PORT_BLOCK * (int(digits) % PORT_BLOCKS)


def master_address(first_node: str) -> str:
    """Node 0's address: its name when that resolves, else the address srun launched tasks from.

    Slurm node names are host names on most clusters. Where they are not (several slurmd on one
    host, as on the test cluster), SLURM_LAUNCH_NODE_IPADDR is the batch host, which is node 0.
    """
    try:
        socket.getaddrinfo(first_node, None)
        return first_node
    except OSError:
        return os.environ.get("SLURM_LAUNCH_NODE_IPADDR") or first_node


def run_task(spec_dict: dict[str, Any]) -> dict[str, Any]:

    spec = RunSpec.from_dict(spec_dict)
    job = submitit.JobEnvironment()
    adapter = get_adapter(spec.adapter)
    per_node = adapter.launcher is Launcher.PER_NODE
    task = job.global_rank
    log_path = spec.paths.task_log(task, per_node)
    outcome: dict[str, Any] = {
        "task": task,
        "node_rank": job.node,
        "local_rank": job.local_rank,
        "host": socket.gethostname(),
        "node": os.environ.get("SLURMD_NODENAME") or socket.gethostname(),  # Slurm's node name
        "job_id": job.job_id,
        "attempt": slurm_attempt(),
        "log": log_path.name,
        "started_at": time.time(),
    }
    if job.local_rank == 0:
        outcome["facts"] = node_facts()
    try:
        outcome |= _launch(spec, adapter, job, task, log_path)
    except submitit.core.utils.UncompletedJobError:  # Slurm's time-limit signal (SIGUSR2)
        detail = english(Phrase.of("detail.slurm_time_limit"))
        outcome |= {"status": Status.TIMEOUT, "detail": detail}
    except Exception as err:  # a harness error on the node is the run's status, not a lost job
        detail = english(Phrase.of("detail.harness_error", error=repr(err)))
        outcome |= {"status": Status.FAILED, "detail": detail}
    outcome["ended_at"] = time.time()
    atomic_write_json(spec.paths.task_outcome(task), outcome)
    return outcome


def _launch(spec: RunSpec, adapter: Any, job: Any, task: int, log_path: Path) -> dict[str, Any]:
    reason = adapter.skip_reason(spec.cell, spec.options) or adapter.node_skip_reason(
        spec.cell, spec.options
    )
    if reason:
        log_path.write_text(logline.format_line(logline.SKIP, reason=reason) + "\n")
        return {"status": Status.SKIPPED, "detail": reason, "exit_code": None, "command": None}
    gpu_problem = _check_gpus(spec)
    if gpu_problem:
        log_path.write_text(logline.format_line(logline.HARNESS, note=gpu_problem) + "\n")
        return {"status": Status.FAILED, "detail": gpu_problem, "exit_code": None, "command": None}
    port = rendezvous_port(job.job_id, spec.port)
    master = "127.0.0.1" if spec.backend == "local" else master_address(job.hostnames[0])
    ctx = TaskContext(
        cell=spec.trained_cell,
        options=spec.options,
        steps=spec.steps,
        device=spec.device,
        rank=task,
        node_rank=job.node,
        nodes=job.num_nodes,
        gpus_per_node=spec.allocation["devices_per_node"],
        master_addr=master,
        master_port=port,
        run_dir=spec.paths.dir,
        hosts=tuple(job.hostnames),
        python=spec.python or sys.executable,
        site_env=tuple(sorted(spec.env)),
    )
    command = in_container(adapter.command(ctx), spec.container)
    env = (
        dict(os.environ)
        | spec.env
        | {
            "MASTER_ADDR": master,
            "MASTER_PORT": str(port),
            "RANK": str(job.global_rank),
            "WORLD_SIZE": str(job.num_tasks),
            "LOCAL_RANK": str(job.local_rank),
            "LOCAL_WORLD_SIZE": str(job.num_tasks // job.num_nodes),
            "NODE_RANK": str(job.node),
            "PYTHONUNBUFFERED": "1",
        }
    )
    keys = ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK", "NODE_RANK")
    rendezvous = {key: env[key] for key in keys}
    outcome = run_workload(command, env, log_path, spec.time_limit_min, spec.submitter_pid)
    return outcome | {"rendezvous": rendezvous}


def run_workload(
    command: list[str],
    env: dict[str, str],
    log_path: Path,
    time_limit_min: float,
    submitter_pid: int | None = None,
) -> dict[str, Any]:
    """Run the workload with its output in `log_path`; its status (ok, skipped, oom, timeout or
    failed), why, its exit code and its wall time."""
    limit_s = time_limit_min * 60
    with open(log_path, "w") as log:
        start = time.monotonic()  # a duration: immune to the wall clock being stepped
        oom_kills = OomKills.now()
        proc = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # its own group: killed whole, never by a stray terminal signal
            preexec_fn=_die_with_parent,
        )
        if submitter_pid:
            _watch_submitter(submitter_pid, proc)
        try:
            code = proc.wait(timeout=limit_s)
        except BaseException:  # interrupted or cancelled: never leave the workload running
            if proc.poll() is None:
                _kill(proc)
            if sys.exc_info()[0] is not subprocess.TimeoutExpired:
                raise
            return {
                "status": Status.TIMEOUT,
                "detail": english(Phrase.of("detail.timeout", minutes=f"{time_limit_min}")),
                "exit_code": None,
                "command": command,
                "workload_wall_s": time.monotonic() - start,
            }
    wall = time.monotonic() - start
    tail = log_tail(log_path)
    if code == 0:
        skipped = _skip_reason(tail)
        status, detail = (Status.SKIPPED, skipped) if skipped is not None else (Status.OK, "")
    # whatever the exit: a wrapper (stop_after, torchrun, mpirun, sh -c) shares the workload's
    # cgroup, and exits 1 or 128 + 9 when the kernel killed the workload under it
    elif oom_kills.grew():
        status, detail = (
            Status.OOM,
            english(Phrase.of("detail.oom_killed", cgroup=oom_kills.cgroup)),
        )
    elif is_oom(tail):
        status, detail = Status.OOM, english(Phrase.of("detail.oom"))
    else:
        status, detail = Status.FAILED, english(_exited(code, _last_line(tail)))
    return {
        "status": status,
        "detail": detail,
        "exit_code": code,
        "command": command,
        "workload_wall_s": wall,
    }


def exit_text(code: int) -> str:
    """`exit code 1`, or for a process a signal ended, which: `killed by SIGKILL (exit code -9)`
    (a shell's or a launcher's 128 + 9 too: `killed by SIGKILL (exit code 137)`)."""
    return english(_exit_phrase(code))


def _exit_phrase(code: int) -> Phrase:
    signum = -code if code < 0 else code - 128 if code > 128 else 0
    if signum:
        try:
            return Phrase.of("detail.killed", signal=signal.Signals(signum).name, code=str(code))
        except ValueError:
            pass
    return Phrase.of("detail.exit_code", code=str(code))


def _exited(code: int, last_line: str) -> Phrase:
    """A workload that failed: how it exited, and its log's last line ('' for an empty log)."""
    if not last_line:
        return Phrase.of("detail.exited_empty", exit=_exit_phrase(code))
    return Phrase.of("detail.exited", exit=_exit_phrase(code), line=last_line)


def in_container(command: list[str], container: dict[str, Any] | None) -> list[str]:
    """Wrap a command for apptainer; pyxis containers are set on srun by the submitter instead."""
    if not container or container["runtime"] != "apptainer":
        return command
    binds = [f"--bind={mount}" for mount in container["mounts"]]
    return ["apptainer", "exec", "--nv", *binds, container["image"], *command]


def _check_gpus(spec: RunSpec) -> str | None:
    """A rank that sees other GPUs than it was given fails fast, before it trains."""
    wanted = spec.allocation["gpus_per_node"]
    if spec.device == "cpu" or wanted == 0:
        return None
    seen = visible_gpus()
    if seen is None:
        return None if spec.device == "auto" else english(Phrase.of("detail.no_gpu"))
    if seen != wanted:
        return english(Phrase.of("detail.gpus_seen", seen=str(seen), wanted=str(wanted)))
    return None


def _skip_reason(text: str) -> str | None:
    for line in text.splitlines():
        parsed = logline.parse_line(line)
        if parsed and parsed[0] == logline.SKIP:
            return parsed[1].get("reason", "")
    return None


def _die_with_parent() -> None:
    """In the workload, before exec: SIGKILL it when the task that started it dies, however it
    dies (Linux PR_SET_PDEATHSIG), so a killed run never leaves a workload behind."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the submitter watch below still applies
        pass


def _watch_submitter(submitter_pid: int, proc: subprocess.Popen) -> None:
    """Local runs: kill the workload's whole group as soon as the submitter is gone.

    submitit's local controller outlives a submitter killed with SIGKILL; this watch is what
    stops the run then, whatever killed the submitter.
    """

    def watch() -> None:
        while proc.poll() is None:
            if not alive(submitter_pid):
                _kill(proc)
                return
            time.sleep(WATCH_S)

    threading.Thread(target=watch, name="dlperf-submitter-watch", daemon=True).start()


def alive(pid: int) -> bool:
    """Whether process `pid` still runs (a zombie, dead but not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state != "Z"


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def log_tail(path: Path, size: int = 20000) -> str:
    """A log's last `size` bytes as text."""
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - size))
        return f.read().decode(errors="replace")


# torchrun's own report of a failed worker, after the worker's output: its traceback ends in this
# exception, then a summary framed by '=' lines (the last line of every torchrun-launched failure)
TORCHRUN_FAILED = "torch.distributed.elastic.multiprocessing.errors.ChildFailedError"
TORCHRUN_AGENT_LINE = re.compile(r"\] failed \(exitcode: -?\d+\)")  # the agent's `E... failed`


def _last_line(text: str) -> str:
    """The log's last line that is not blank, cut at 300 characters ('' for none): the worker's,
    before torchrun's report of its failure where torchrun launched it."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    report = next((i for i, line in enumerate(lines) if TORCHRUN_FAILED in line), None)
    if report is not None:
        tracebacks = [i for i in range(report) if lines[i].startswith("Traceback (most recent")]
        worker = lines[: tracebacks[-1] if tracebacks else report]
        lines = [line for line in worker if not TORCHRUN_AGENT_LINE.search(line)] or lines
    return lines[-1][:300] if lines else ""


def slurm_attempt() -> int:
    """Which start of its job this task is part of: Slurm counts a requeued job's restarts (a
    node failure or a preemption where the site allows requeue), the job id staying the same."""
    return int(os.environ.get("SLURM_RESTART_COUNT") or 0)


def load_task_outcomes(
    paths: RunPaths, tasks: int, job_id: str, since_attempt: int = 0
) -> dict[int, dict[str, Any]]:
    """Outcomes the run's `tasks` tasks of job `job_id` wrote (atomically), each opened by its
    name: over NFS a folder's listing may miss a file another host wrote for as long as its
    attribute cache holds, an open looks the name up. An unreadable one counts as not reported,
    and so does another job's: an earlier attempt's, left running when its submitter was killed,
    writes into the folder its redo emptied. A job Slurm requeued runs again under its id: only
    its latest attempt's outcomes (from `since_attempt` on) are the run's."""
    outcomes = {}
    for task in range(tasks):
        try:
            data = json.loads(paths.task_outcome(task).read_text())
            if str(data["job_id"]) == job_id and data.get("attempt", 0) >= since_attempt:
                outcomes[int(data["task"])] = data
        except (OSError, ValueError, KeyError, TypeError):
            continue
    latest = max((o.get("attempt", 0) for o in outcomes.values()), default=0)
    return {task: o for task, o in outcomes.items() if o.get("attempt", 0) == latest}
