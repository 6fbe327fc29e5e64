"""What a run's status and detail say when its processes die."""

from __future__ import annotations

import dataclasses
import json
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from dlperf.launch.allocation import Allocation
from dlperf.launch.measured import measure_of
from dlperf.launch.outcome import first_cause, record_outcome
from dlperf.launch.record import RunRecord
from dlperf.launch.spec import Harness, RunSpec
from dlperf.launch.task import exit_text, run_workload
from dlperf.matrix import Cell, CellSpec
from dlperf.status import run_status


def test_a_process_ended_by_a_signal_says_which():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    proc.send_signal(signal.SIGKILL)
    assert exit_text(proc.wait()) == "killed by SIGKILL (exit code -9)"
    assert exit_text(1) == "exit code 1"


def test_a_wrapper_whose_process_a_signal_ended_says_which():
    """Review: a shell, stop_after or a launcher exits 128 + the signal that ended its workload;
    the detail said only `exit code 137`."""
    assert exit_text(137) == "killed by SIGKILL (exit code 137)"
    assert exit_text(143) == "killed by SIGTERM (exit code 143)"
    assert exit_text(255) == "exit code 255"  # 127 is no signal


def test_the_detail_names_the_rank_that_died_first():
    """Issue 20.15: rank 1 killed by SIGKILL; rank 0 then died of 'Connection reset by peer',
    which was all the detail said."""
    outcomes = {
        0: {
            "status": "failed",
            "ended_at": 1000.8,
            "detail": "exit code 1; last line: RuntimeError: Connection reset by peer",
        },
        1: {"status": "failed", "ended_at": 1000.2, "detail": "killed by SIGKILL (exit code -9)"},
    }
    assert first_cause(outcomes, "failed") == "task 1 ended first: killed by SIGKILL (exit code -9)"
    assert first_cause({0: outcomes[1]}, "failed") == "killed by SIGKILL (exit code -9)"
    assert first_cause(outcomes, "oom") == ""


def crashed_and_hung(tmp_path: Path) -> tuple[RunSpec, Allocation]:
    """A 1n4g run whose rank 3 crashed at 95 s; ranks 0-2 then waited in a collective for it
    until their time limit."""
    cell = Cell.parse("pytorch.resnet50.fp32.noxla.b2.1n4g")
    allocation = Allocation(
        nodes=1, tasks_per_node=4, gpus_per_node=0, cpus_per_task=1, devices_per_node=4
    )
    spec = RunSpec(
        cell, 1, "pytorch", {}, 5, "cpu", 30.0, "local", allocation.as_dict(),
        results_root=str(tmp_path),
    )  # fmt: skip
    spec.paths.dir.mkdir(parents=True)
    timeout = "the workload ran past its time limit of 30.0 minutes"
    crash = "exit code 1; last line: RuntimeError: CUDA error: an illegal memory access"
    for task in range(4):
        crashed = task == 3
        outcome = {"task": task, "node_rank": 0, "host": "vm", "log": f"rank{task}.log",
                   "job_id": "42", "status": "failed" if crashed else "timeout",
                   "detail": crash if crashed else timeout,
                   "started_at": 0.0, "ended_at": 95.0 if crashed else 1805.0 + task}  # fmt: skip
        spec.paths.task_outcome(task).write_text(json.dumps(outcome))
    return spec, allocation


def harness_and_measure(spec: RunSpec, backend: str) -> tuple[Harness, dict]:
    """What record_outcome is given besides the run: a 30 min harness on `backend`, and the
    measure of the run's cell (a 2 + 3 step window on a CPU)."""
    harness = Harness(backend=backend, site={}, time_limit_min=30.0, wait_grace_s=0.0)
    window = {"window": {"warmup": 2, "measure": 3}, "device": "cpu"}
    return harness, measure_of(CellSpec(spec.cell, {}), window)


def test_a_rank_that_crashed_is_the_runs_cause_not_the_others_timeouts(tmp_path):
    """Review: one rank crashed at 95 s and the others hung in a collective until the limit; the
    run was recorded `timeout`, its cause (the crash) lost. The crash decides, and the record
    the submitter writes reads back under the same rule (not a parse_error)."""
    spec, allocation = crashed_and_hung(tmp_path)
    harness, measure = harness_and_measure(spec, "local")
    job = SimpleNamespace(job_id="42", state="RUNNING")
    record = record_outcome(spec, allocation, harness, measure, job, None, "", 0.0, 1900.0)
    assert record.status == "failed"
    assert record.status_detail.startswith("task 3 ended first: exit code 1; last line: Runtime")
    assert RunRecord.read(record.write(spec.paths.manifest).path).status == "failed"
    # recorded `timeout` before this rule (the worst task's): still read, not a parse_error
    old = dataclasses.replace(record, status="timeout").write(spec.paths.manifest)
    assert RunRecord.read(old.path).status == "timeout"


@pytest.mark.parametrize(
    "tasks, status",
    [
        ([("timeout", 1805.0), ("failed", 95.0), ("failed", 96.0)], "failed"),
        ([("timeout", 1805.0), ("failed", 95.0), ("oom", 97.0)], "oom"),
        ([("oom", 95.0), ("oom", 1800.0)], "oom"),
        # rank 0 timed out, the others failed at that moment (its SIGTERM, a broken collective)
        ([("timeout", 1805.0), ("failed", 1801.0), ("failed", 1806.0)], "timeout"),
        ([("timeout", None), ("failed", 95.0)], "timeout"),  # when it timed out is unknown
        ([("ok", 100.0), ("skipped", 100.0)], "skipped"),
    ],
)
def test_a_runs_status_is_its_worst_tasks_but_for_timeouts_that_hung_on_a_failure(tasks, status):
    assert run_status(tasks) == status


def test_a_run_records_the_environment_it_ran_in_not_the_planned_one():
    """Pins edited between the plan and the run: the record's measure names the environment the
    run had (so its digest is not the suite's, and the run is redone), not the one planned."""
    from dlperf.launch.measured import measure_digest, ran_in

    planned = {"cell": {}, "options": {}, "steps": 3, "device": "cpu", "environment": "aaa"}
    assert ran_in(planned, {"key": "aaa", "python": "/e/bin/python"}) == planned
    assert ran_in(planned, None) == planned  # dlperf's own environment: nothing to say
    other = ran_in(planned, {"key": "bbb", "python": "/e2/bin/python"})
    assert other["environment"] == "bbb" and measure_digest(other) != measure_digest(planned)
    site = ran_in(planned, {"key": "site", "python": "/opt/jax/bin/python"})
    assert site["environment"] == "site /opt/jax/bin/python"


def test_a_run_slurm_stopped_says_so_before_its_first_failed_task(tmp_path):
    """Review: the watch's reason a run's job ended (Slurm preempted it) and the task that ended
    first are both the record's detail; the tasks' alone read as the workload's failure."""
    spec, allocation = crashed_and_hung(tmp_path)
    harness, measure = harness_and_measure(spec, "slurm")
    job = SimpleNamespace(job_id="42", state="PREEMPTED")
    stopped = "Slurm stopped the job (PREEMPTED): preempted, cancelled or a node lost, not the workload's failure"
    record = record_outcome(spec, allocation, harness, measure, job, None, stopped, 0.0, 1900.0)
    assert record.status == "failed"
    assert record.status_detail.startswith(stopped + "; task 3 ended first: exit code 1; last line")


def test_a_run_cancelled_while_its_ranks_hung_on_one_that_failed_names_that_one(tmp_path):
    """The watch cancelled a 1n4g run whose rank 3 ran out of memory while ranks 0-2 hung on it,
    and they never reported: the run is `oom` (rank 3's), and its detail says why the job was
    cancelled and which task, of several, ended first and how (it said neither)."""
    spec, allocation = crashed_and_hung(tmp_path)
    for task in range(3):
        spec.paths.task_outcome(task).unlink()
    crashed = json.loads(spec.paths.task_outcome(3).read_text())
    crashed |= {"status": "oom", "detail": "out of memory (see log)"}
    spec.paths.task_outcome(3).write_text(json.dumps(crashed))
    harness, measure = harness_and_measure(spec, "slurm")
    job = SimpleNamespace(job_id="42", state="CANCELLED")
    hung = (
        "task 3 ended oom and tasks [0, 1, 2] still ran 60 s later, waiting on it: "
        "dlperf cancelled the job"
    )
    record = record_outcome(spec, allocation, harness, measure, job, "failed", hung, 0.0, 160.0)
    assert record.status == "oom"
    assert record.status_detail == hung + "; task 3 ended first: out of memory (see log)"


def test_a_task_sigkilled_in_a_job_slurm_ended_out_of_memory_is_oom(tmp_path):
    """The watch found the job OUT_OF_MEMORY: rank 3's workload, SIGKILLed (-9 or a wrapper's
    137), ran out of memory; ranks that failed otherwise keep their status, and the record reads
    back (its status is its tasks')."""
    spec, allocation = crashed_and_hung(tmp_path)
    for task, (code, detail) in enumerate(
        [(-15, "killed by SIGTERM (exit code -15)"), (1, "exit code 1; last line: Connection reset"),
         (137, "killed by SIGKILL (exit code 137); last line: step 3"),
         (-9, "killed by SIGKILL (exit code -9); last line: step 3")]
    ):  # fmt: skip
        outcome = json.loads(spec.paths.task_outcome(task).read_text())
        outcome |= {
            "status": "failed",
            "exit_code": code,
            "detail": detail,
            "ended_at": 95.0 + task,
        }
        spec.paths.task_outcome(task).write_text(json.dumps(outcome))
    harness, measure = harness_and_measure(spec, "slurm")
    job = SimpleNamespace(job_id="42", state="OUT_OF_MEMORY")
    ended = "Slurm ended the job as OUT_OF_MEMORY: a process of it went over the job's memory"
    record = record_outcome(spec, allocation, harness, measure, job, "oom", ended, 0.0, 160.0)
    assert record.status == "oom"
    assert [t["status"] for t in record.tasks] == ["failed", "failed", "oom", "oom"]
    assert record.status_detail == (
        ended + "; task 2 ended first: killed by SIGKILL (exit code 137); last line: step 3"
    )
    assert RunRecord.read(record.write(spec.paths.manifest).path).status == "oom"


def test_a_run_whose_tasks_never_reported_names_what_their_stderr_says(tmp_path, monkeypatch):
    """Review (on the test cluster, a setup line `ulimit -v 20000`): the task's Python died on
    the node before it could report, and the record said only 'job ended as FAILED before every
    task reported', its rank logs the same; the cause was in submitit's stderr file of the task,
    which nothing named. The detail now quotes its last line that is not srun's or submitit's
    own, and says which file."""
    spec, allocation = crashed_and_hung(tmp_path)
    for task in range(4):
        spec.paths.task_outcome(task).unlink()
    monkeypatch.chdir(tmp_path)  # the workflow's results root is relative: results/
    spec = dataclasses.replace(spec, results_root=".")
    spec.paths.submitit.mkdir()
    (spec.paths.submitit / "42_0_log.err").write_text(
        '  File "/usr/lib/python3.11/enum.py", line 837, in __setattr__\n'
        "    super().__setattr__(name, value)\n"
        "MemoryError: Out of memory interning an attribute name\n"
        "srun: error: node1: tasks 0-3: Exited with exit code 1\n"
    )
    harness, measure = harness_and_measure(spec, "slurm")
    job = SimpleNamespace(job_id="42", state="FAILED")
    ended = "job ended as FAILED before every task reported"
    record = record_outcome(spec, allocation, harness, measure, job, "failed", ended, 0.0, 9.0)
    assert (record.status, record.status_detail) == (
        "failed",
        ended + "; task 0's stderr (submitit/42_0_log.err) ends: MemoryError: Out of memory "
        "interning an attribute name",
    )
    (spec.paths.submitit / "42_0_log.err").write_text("")  # says nothing: nothing added
    record = record_outcome(spec, allocation, harness, measure, job, "failed", ended, 0.0, 9.0)
    assert record.status_detail == ended


def test_a_run_records_the_state_its_job_ended_in_as_squeue_says_it(tmp_path, monkeypatch):
    """Review (on the test cluster, no accounting): the watch saw the job FAILED, and the record
    said job_state UNKNOWN, read from submitit's sacct (which also warned 'Bypassing sacct
    error' into the rule's log)."""
    from dlperf.launch import outcome

    spec, allocation = crashed_and_hung(tmp_path)
    spec.paths.task_outcome(0).unlink()
    monkeypatch.setattr(outcome, "slurm_state", lambda job: ("NODE_FAIL", "None"))
    harness, measure = harness_and_measure(spec, "slurm")
    job = SimpleNamespace(job_id="42", state="UNKNOWN")
    record = record_outcome(spec, allocation, harness, measure, job, "failed", "", 0.0, 9.0)
    assert record.job_state == "NODE_FAIL"


def test_a_slurm_jobs_rendezvous_ports_are_its_own_block_below_the_ephemeral_range():
    """Review: ports were 20000 + job id % 40000, 70% of them in Linux's ephemeral range
    (32768-60999), where another process's outgoing connection may hold the port; and Paddle's
    launcher takes the port plus each local rank's index, so consecutive jobs on one node
    overlapped (job 7 used 20007-20014, job 8 20008-20015)."""
    from dlperf.launch.task import PORT_BLOCK, rendezvous_port

    ports = [rendezvous_port(str(job), None) for job in range(100_000)]
    assert min(ports) == 20000 and max(ports) + PORT_BLOCK - 1 < 32768
    assert rendezvous_port("8", None) - rendezvous_port("7", None) == PORT_BLOCK == 16
    assert rendezvous_port("12345_3", None) == rendezvous_port("12345", None) == 20000 + 16 * 345
    assert rendezvous_port("7", 29500) == 29500  # the local submitter's free port


# A DLE script launched by torchrun (ngc_pytorch, release current) that failed to import, as its
# log ends (CPU run, 2026-11-27): the worker's error, then torchrun's traceback and summary
TORCHRUN_FAILURE = """\
Traceback (most recent call last):
  File "ConvNets/image_classification/logger.py", line 32, in <module>
    import dllogger
ModuleNotFoundError: No module named 'dllogger'
E1127 15:25:58.024000 6116 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) local_rank: 0 (pid: 6141) of binary: python3
Traceback (most recent call last):
  File "torch/distributed/launcher/api.py", line 383, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
ConvNets/main.py FAILED
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  exitcode  : 1 (pid: 6141)
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""


def test_a_torchrun_failure_names_the_workers_error_not_torchruns_banner(tmp_path: Path) -> None:
    """A run torchrun launched (DLE's and Megatron's current releases) that failed says the
    worker's last line: the '=' line that ends torchrun's summary said nothing of why."""
    printing = [sys.executable, "-c", f"import sys; print({TORCHRUN_FAILURE!r}); sys.exit(1)"]
    outcome = run_workload(printing, {}, tmp_path / "node0.log", 1.0)
    assert outcome["status"] == "failed"
    assert (
        outcome["detail"]
        == "exit code 1; last line: ModuleNotFoundError: No module named 'dllogger'"
    )
    plain = [
        sys.executable,
        "-c",
        "print('step 3'); print('RuntimeError: boom'); raise SystemExit(1)",
    ]
    assert run_workload(plain, {}, tmp_path / "rank0.log", 1.0)["detail"] == (
        "exit code 1; last line: RuntimeError: boom"
    )
