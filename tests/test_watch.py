"""Submitting and waiting for a Slurm job (dlperf.launch.submit, watch) against a scheduler whose
answers a test scripts, and the job's time limit against the run's own: the faults a review found
on the real test cluster (tests/slurm), each deterministic here."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
import submitit
from submitit.core.utils import FailedJobError

from dlperf.launch import submit, watch
from dlperf.launch.allocation import Allocation
from dlperf.launch.spec import STARTUP_MARGIN_MIN, Harness
from dlperf.launch.submit import executor_for
from dlperf.launch.task import load_task_outcomes
from dlperf.launch.watch import Interrupts
from dlperf.paths import RunPaths

ONE_TASK = Allocation(
    nodes=1, tasks_per_node=1, gpus_per_node=0, cpus_per_task=1, devices_per_node=1
)


class ScriptedJob:
    """A submitted job whose cancel reaches no controller (as with slurmctld down)."""

    job_id = "17"

    def __init__(self) -> None:
        self.cancelled = 0

    def cancel(self, check: bool = True) -> None:
        self.cancelled += 1

    def done(self) -> bool:
        return False


def run_paths(tmp_path: Path) -> RunPaths:
    paths = RunPaths("pytorch.resnet50.fp32.noxla.b2.1n1g", 1, tmp_path)
    paths.dir.mkdir(parents=True, exist_ok=True)
    return paths


def report(tmp_path: Path, task: int = 0, job_id: str = ScriptedJob.job_id) -> None:
    """Task `task` of the run's job `job_id` writes its outcome: ok."""
    outcome = {"task": task, "status": "ok", "job_id": job_id}
    run_paths(tmp_path).task_outcome(task).write_text(json.dumps(outcome))


class FakeClock:
    """The watch's `time`: sleep() moves time() on at once, so the seconds a wait counts are its
    polls', never the stalls of a loaded machine."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def waiting(monkeypatch, tmp_path: Path, answer) -> tuple[SimpleNamespace, Harness]:
    """A run whose squeue answers `answer(seconds since start)`; a deadline of 0.6 s, on a clock
    (FakeClock) that only the watch's polls move on."""
    clock = FakeClock()
    monkeypatch.setattr(watch, "time", clock)
    monkeypatch.setattr(watch, "POLL_S", 0.01)
    monkeypatch.setattr(watch, "STATE_CHECK_S", 0.0)
    monkeypatch.setattr(watch, "_starters", lambda: [])
    started = clock.time()
    monkeypatch.setattr(watch, "slurm_state", lambda job: answer(clock.time() - started))
    monkeypatch.setattr(Harness, "job_time_min", 0.01)  # whole minutes, and a start-up margin
    spec = SimpleNamespace(paths=run_paths(tmp_path))
    return spec, Harness(backend="slurm", site={}, time_limit_min=0.01, wait_grace_s=0.0)


def test_a_controller_that_cannot_be_asked_does_not_make_a_pending_job_lost(monkeypatch, tmp_path):
    """slurmctld down while the job pends (squeue fails: UNKNOWN) for longer than the deadline,
    then the job runs and reports ok: its outcome is the run's, never `timeout` with a cancel that
    could not reach the controller (the job then ran anyway, its measurement ignored)."""

    def answer(t: float) -> tuple[str, str]:
        if t < 0.1:
            return "PENDING", "Resources"
        if t < 1.5:
            return "UNKNOWN", ""
        report(tmp_path)
        return "RUNNING", "None"

    spec, harness = waiting(monkeypatch, tmp_path, answer)
    job = ScriptedJob()
    assert watch.wait_for_outcomes(job, spec, ONE_TASK, harness) == (None, "")
    assert job.cancelled == 0


def test_a_controller_unreachable_for_good_gives_the_run_up(monkeypatch, tmp_path):
    monkeypatch.setattr(watch, "UNREACHABLE_S", 0.3)
    spec, harness = waiting(monkeypatch, tmp_path, lambda t: ("UNKNOWN", ""))
    status, detail = watch.wait_for_outcomes(ScriptedJob(), spec, ONE_TASK, harness)
    assert status == "timeout" and "job lost or hung" in detail


def test_a_completed_jobs_outcome_that_nfs_shows_late_is_waited_for(monkeypatch, tmp_path):
    """Review: a job COMPLETED (every task wrote its outcome) whose outcome file this host's NFS
    showed only after its attribute cache expired (30-60 s) was recorded failed 10 s after the
    job's end. Other end states keep the short grace."""
    monkeypatch.setattr(watch, "ENDED_GRACE_S", 0.1)

    def answer(t: float) -> tuple[str, str]:
        if t > 0.5:
            report(tmp_path)
        return "COMPLETED", "None"

    spec, harness = waiting(monkeypatch, tmp_path, answer)
    assert watch.wait_for_outcomes(ScriptedJob(), spec, ONE_TASK, harness) == (None, "")
    spec, harness = waiting(monkeypatch, tmp_path / "other", lambda t: ("FAILED", "None"))
    status, detail = watch.wait_for_outcomes(ScriptedJob(), spec, ONE_TASK, harness)
    assert status == "failed" and "job ended as FAILED" in detail


def test_outcomes_are_opened_by_name_not_looked_for_in_a_folder_listing(monkeypatch, tmp_path):
    """Review: outcomes were globbed, and a folder's listing over NFS misses a file another host
    wrote for as long as its cached copy lasts; an open looks the name up on the server."""
    report(tmp_path)
    monkeypatch.setattr(Path, "glob", lambda self, pattern: iter(()))  # a stale listing
    assert list(load_task_outcomes(run_paths(tmp_path), 1, ScriptedJob.job_id)) == [0]


def test_an_earlier_jobs_outcomes_are_not_the_runs(monkeypatch, tmp_path):
    """Review: an earlier attempt's job, never cancelled (its Snakemake was SIGKILLed), wrote
    ok outcomes into the folder the run's redo had emptied, and the new job's wait returned at
    once with them: the run recorded another job's tasks, while its own job ran on."""
    report(tmp_path, job_id="16")
    own: list[float] = []

    def answer(t: float) -> tuple[str, str]:
        if t > 0.3 and not own:
            own.append(t)
            report(tmp_path)
        return "RUNNING", "None"

    spec, harness = waiting(monkeypatch, tmp_path, answer)
    assert watch.wait_for_outcomes(ScriptedJob(), spec, ONE_TASK, harness) == (None, "")
    assert own, "returned with the earlier job's outcome"


def test_a_local_jobs_tasks_know_the_job_id_their_submitter_holds(tmp_path):
    """The job id a task records (submitit's JobEnvironment) is the one the submitter compares
    it with, on the local backend too."""
    executor = submitit.AutoExecutor(folder=tmp_path, cluster="local")
    executor.update_parameters(timeout_min=1)
    job = executor.submit(eval, "__import__('submitit').JobEnvironment().job_id")
    assert job.result() == job.job_id


def test_a_job_that_can_never_start_is_cancelled_naming_the_reason(monkeypatch, tmp_path):
    """Pending with PartitionTimeLimit (the partition's MaxTime below the job's --time) never
    clears: every PENDING used to restart the deadline, so the submitter waited forever."""
    spec, harness = waiting(monkeypatch, tmp_path, lambda t: ("PENDING", "PartitionTimeLimit"))
    job = ScriptedJob()
    found: list = []
    waiter = threading.Thread(
        target=lambda: found.append(watch.wait_for_outcomes(job, spec, ONE_TASK, harness)),
        daemon=True,
    )
    waiter.start()
    waiter.join(30)
    assert found, "still waiting on a job that can never start"
    status, detail = found[0]
    assert status == "failed" and "reason PartitionTimeLimit" in detail and job.cancelled


@pytest.mark.parametrize(
    ("reason", "never"),
    [
        ("QOSMaxGRESPerJob", True),  # 4n8g asks 32 GPUs of a QOS with MaxTRESPerJob=gres/gpu=16
        ("AssocMaxNodePerJobLimit", True),  # Slurm's spelling (the list had AssocMaxNodes...)
        ("AssocMaxGRESPerNode", True),
        ("QOSMaxMemoryPerJob", True),
        ("QOSMinGRES", True),
        ("AccountNotAllowed", True),
        ("QOSMaxGRESPerUser", False),  # clears as the user's other jobs end
        ("AssocGrpGRES", False),
        ("Resources", False),
    ],
)
def test_a_request_over_a_per_job_limit_never_starts(monkeypatch, tmp_path, reason, never):
    """Review: a job pending on a QOS's or association's per-job (or per-node, or minimum) limit
    never starts, whatever else ends, and Slurm's default (no DenyOnLimit) queues it: the
    submitter waited on it for ever. Limits over the user's or group's jobs clear by waiting."""

    def answer(t: float) -> tuple[str, str]:
        if t < 2.0:
            return "PENDING", reason
        report(tmp_path)
        return "RUNNING", "None"

    spec, harness = waiting(monkeypatch, tmp_path, answer)
    job = ScriptedJob()
    status, detail = watch.wait_for_outcomes(job, spec, ONE_TASK, harness)
    if never:
        assert (status, job.cancelled) == ("failed", 1)
        assert detail == (
            f"the job can never start as submitted (pending, reason {reason}); cancelled"
        )
    else:
        assert (status, detail, job.cancelled) == (None, "", 0)


def test_slurms_time_limit_signal_comes_after_the_runs_own_limit(tmp_path):
    """submitit asks Slurm for SIGUSR2 `signal_delay_s` before --time, and Slurm may send it up
    to 60 s earlier still; the run's own limit counts from the workload's start, after setup
    lines, a container and imports (a minute here). A signal before it recorded a run inside its
    limit as `failed` (seen on the test cluster: T = 1 min, `sleep 40` setup, a 42 s workload)."""
    spec = SimpleNamespace(
        paths=SimpleNamespace(submitit=tmp_path), cell=SimpleNamespace(id="c"), repeat=1
    )
    site = {"mem_gb": 0, "setup": [], "extra_args": {}, "exclusive": False, "container": None}
    harness = Harness(backend="slurm", site=site, time_limit_min=1, wait_grace_s=60)
    parameters = executor_for(spec, ONE_TASK, harness)._executor.parameters
    signal_at_s = parameters["time"] * 60 - parameters["signal_delay_s"] - 60
    assert signal_at_s >= harness.time_limit_min * 60 + 60


@pytest.mark.parametrize(
    "reports_at_s", [4 * 60 + 29.5 * 60, None], ids=["slow_start_up", "never_reports"]
)
def test_the_submitters_deadline_leaves_the_job_its_start_up_as_slurms_time_does(
    monkeypatch, tmp_path, reports_at_s
):
    """Review: Slurm's --time is the run's limit plus STARTUP_MARGIN_MIN, since the run's limit
    counts only from the workload's start; the submitter's deadline was the run's limit plus
    wait_grace_s from the job's start, so a run whose start-up took over 2 minutes (setup lines, a
    container, imports, nvidia-smi) was cancelled while healthy and recorded `timeout`. A job
    that never reports is still given up, once its whole job time and the grace are past."""
    clock = FakeClock()
    monkeypatch.setattr(watch, "time", clock)
    monkeypatch.setattr(watch, "_starters", lambda: [])
    started = clock.now

    def squeue(job) -> tuple[str, str]:
        if reports_at_s is not None and clock.now - started >= reports_at_s:
            report(tmp_path)
        return "RUNNING", "None"

    monkeypatch.setattr(watch, "slurm_state", squeue)
    spec = SimpleNamespace(paths=run_paths(tmp_path))
    harness = Harness(backend="slurm", site={}, time_limit_min=30, wait_grace_s=120)
    job = ScriptedJob()
    found = watch.wait_for_outcomes(job, spec, ONE_TASK, harness)
    if reports_at_s is not None:
        assert found == (None, "") and job.cancelled == 0
    else:
        assert found[0] == "timeout" and job.cancelled == 1
        assert clock.now - started == pytest.approx((30 + STARTUP_MARGIN_MIN) * 60 + 120, abs=1)


class FlakySbatch:
    """An executor whose sbatch fails `failures` times (the controller unreachable), then works."""

    def __init__(self, failures: int) -> None:
        self.failures, self.calls = failures, 0

    def submit(self, function, *args):
        self.calls += 1
        if self.calls <= self.failures:
            raise FailedJobError(
                "sbatch: error: Batch job submission failed: Unable to contact slurm controller"
            )
        return SimpleNamespace(job_id="18")


def test_sbatch_failing_is_tried_again_then_a_clear_error_not_a_traceback(monkeypatch):
    monkeypatch.setattr(submit, "SUBMIT_RETRY_S", (0.0, 0.0))
    spec = SimpleNamespace(cell=SimpleNamespace(id="c"), repeat=2, to_dict=dict)
    with Interrupts() as interrupts:
        flaky = FlakySbatch(failures=2)
        assert submit.submit_patiently(flaky, spec, interrupts).job_id == "18" and flaky.calls == 3
        with pytest.raises(
            SystemExit, match="c r2 not submitted: sbatch: error: .* Unable to contact"
        ):
            submit.submit_patiently(FlakySbatch(failures=3), spec, interrupts)


class RefusingSbatch(FlakySbatch):
    """sbatch refusing the job as asked, as Slurm 22.05 said it on the test cluster."""

    def __init__(self, message: str) -> None:
        super().__init__(failures=99)
        self.message = message

    def submit(self, function, *args):
        self.calls += 1
        raise FailedJobError(self.message)


@pytest.mark.parametrize(
    "message",
    [
        "sbatch: error: invalid partition specified: nosuch\n"
        "sbatch: error: Batch job submission failed: Invalid partition name specified",
        "sbatch: error: Memory specification can not be satisfied\n"
        "sbatch: error: Batch job submission failed: Requested node configuration is not available",
        "sbatch: error: Batch job submission failed: Invalid feature specification",
        "sbatch: error: Batch job submission failed: Invalid account or account/partition "
        "combination specified",
    ],
)
def test_sbatch_refusing_the_job_as_asked_is_not_tried_again(monkeypatch, message):
    """Review: a misspelt partition (or account, feature, too much memory) was submitted four
    times over 100 s by every run, so a campaign of 2,000 runs at 64 at a time spent 50 minutes
    failing; it fails at the first try, with sbatch's words."""
    slept: list[float] = []
    monkeypatch.setattr(submit.time, "sleep", slept.append)
    spec = SimpleNamespace(cell=SimpleNamespace(id="c"), repeat=2, to_dict=dict)
    sbatch = RefusingSbatch(message)
    with Interrupts() as interrupts, pytest.raises(SystemExit) as refused:
        submit.submit_patiently(sbatch, spec, interrupts)
    assert str(refused.value) == f"dlperf: c r2 not submitted: {message}"
    assert (sbatch.calls, slept) == (1, [])


def test_slurms_time_limit_signal_in_a_task_is_a_timeout_not_a_harness_failure(
    tmp_path, monkeypatch
):
    """submitit turns Slurm's SIGUSR2 into UncompletedJobError inside the task: the run ran out
    of the job's time, which is a `timeout` naming Slurm's limit."""
    from submitit.core.utils import UncompletedJobError

    from dlperf.launch import task
    from dlperf.launch.spec import RunSpec
    from dlperf.matrix import Cell

    job = SimpleNamespace(global_rank=0, node=0, local_rank=1, job_id="19")
    monkeypatch.setattr(task.submitit, "JobEnvironment", lambda: job)

    def signalled(*args):
        raise UncompletedJobError("Job not requeued because: timed-out and not checkpointable.")

    monkeypatch.setattr(task, "_launch", signalled)
    spec = RunSpec(
        Cell.parse("pytorch.resnet50.fp32.noxla.b2.1n1g"), 1, "pytorch", {}, 5, "cpu", 1.0,
        "slurm", {}, results_root=str(tmp_path),
    )  # fmt: skip
    spec.paths.dir.mkdir(parents=True)
    outcome = task.run_task(spec.to_dict())
    assert outcome["status"] == "timeout" and "Slurm's time limit" in outcome["detail"]
    assert json.loads(spec.paths.task_outcome(0).read_text())["status"] == "timeout"


def sigtermed(tmp_path: Path) -> None:
    """The run's one task reports its workload killed by Slurm's SIGTERM."""
    outcome = {"task": 0, "status": "failed", "job_id": ScriptedJob.job_id,
               "detail": "killed by SIGTERM (exit code -15); last line: step 40"}  # fmt: skip
    run_paths(tmp_path).task_outcome(0).write_text(json.dumps(outcome))


@pytest.mark.parametrize("state", ["PREEMPTED", "CANCELLED", "NODE_FAIL"])
def test_a_job_slurm_stopped_is_not_recorded_as_the_workloads_failure(monkeypatch, tmp_path, state):
    """Review: a job preempted (or cancelled by an admin, or its node lost) sends its tasks'
    workloads SIGTERM; submitit's task ignores it and writes the outcome `killed by SIGTERM`, so
    every task reported and the run was recorded as the workload's failure, Slurm's state never
    asked. The detail now says Slurm stopped it."""
    sigtermed(tmp_path)
    answers = iter([("RUNNING", "None"), ("COMPLETING", "None")])
    spec, harness = waiting(monkeypatch, tmp_path, lambda t: next(answers, (state, "None")))
    status, detail = watch.wait_for_outcomes(ScriptedJob(), spec, ONE_TASK, harness)
    assert (status, detail) == (
        None,
        f"Slurm stopped the job ({state}): preempted, cancelled or a node lost, "
        "not the workload's failure",
    )


def test_a_workload_that_failed_on_its_own_keeps_its_own_detail(monkeypatch, tmp_path):
    sigtermed(tmp_path)
    spec, harness = waiting(monkeypatch, tmp_path, lambda t: ("FAILED", "NonZeroExitCode"))
    assert watch.wait_for_outcomes(ScriptedJob(), spec, ONE_TASK, harness) == (None, "")
    # and a job still running past the grace is not waited on for ever
    spec, harness = waiting(monkeypatch, tmp_path, lambda t: ("RUNNING", "None"))
    assert watch.wait_for_outcomes(ScriptedJob(), spec, ONE_TASK, harness) == (None, "")


def test_a_preempted_job_whose_tasks_never_reported_says_slurm_stopped_it(monkeypatch, tmp_path):
    monkeypatch.setattr(watch, "ENDED_GRACE_S", 0.1)
    spec, harness = waiting(monkeypatch, tmp_path, lambda t: ("PREEMPTED", "None"))
    status, detail = watch.wait_for_outcomes(ScriptedJob(), spec, ONE_TASK, harness)
    assert status == "failed"
    assert detail == (
        "job ended as PREEMPTED before every task reported; Slurm stopped the job (PREEMPTED): "
        "preempted, cancelled or a node lost, not the workload's failure"
    )


TWO_TASKS = Allocation(
    nodes=2, tasks_per_node=1, gpus_per_node=0, cpus_per_task=1, devices_per_node=1
)


def attempt_of(tmp_path: Path, task: int, attempt: int, status: str) -> None:
    """Task `task` of the job's `attempt` (SLURM_RESTART_COUNT) writes its outcome."""
    outcome = {"task": task, "status": status, "job_id": ScriptedJob.job_id, "attempt": attempt}
    run_paths(tmp_path).task_outcome(task).write_text(json.dumps(outcome))


def test_a_requeued_jobs_first_attempt_is_not_read_as_its_second(tmp_path):
    """Review: a site with `requeue` saw a node fail; Slurm requeued the job under its id. Task 0's
    first attempt had written `failed` (its workload SIGTERMed), and once the second attempt's
    task 1 reported, the run had its two outcomes: recorded from two attempts, the second
    attempt's task 0 still training."""
    attempt_of(tmp_path, 0, 0, "failed")
    attempt_of(tmp_path, 1, 1, "ok")
    assert list(load_task_outcomes(run_paths(tmp_path), 2, ScriptedJob.job_id)) == [1]
    attempt_of(tmp_path, 0, 1, "ok")
    outcomes = load_task_outcomes(run_paths(tmp_path), 2, ScriptedJob.job_id)
    assert [(o["task"], o["attempt"], o["status"]) for o in outcomes.values()] == [
        (0, 1, "ok"),
        (1, 1, "ok"),
    ]


def test_a_job_requeued_after_every_task_reported_is_waited_for_again(monkeypatch, tmp_path):
    """Review: a preemption Slurm requeues SIGTERMs every task, and each wrote `failed`: the run
    was recorded at once from that attempt while the job ran again, unwatched, over its logs."""
    attempt_of(tmp_path, 0, 0, "failed")
    attempt_of(tmp_path, 1, 0, "failed")

    def answer(t: float) -> tuple[str, str]:
        if t > watch.ENDED_GRACE_S + 2:  # the second attempt runs and reports
            attempt_of(tmp_path, 0, 1, "ok")
            attempt_of(tmp_path, 1, 1, "ok")
            return "RUNNING", "None"
        return ("COMPLETING", "None") if t < 0.05 else ("PENDING", "BeginTime")

    spec, harness = waiting(monkeypatch, tmp_path, answer)
    assert watch.wait_for_outcomes(ScriptedJob(), spec, TWO_TASKS, harness) == (None, "")
    outcomes = load_task_outcomes(spec.paths, 2, ScriptedJob.job_id)
    assert [o["attempt"] for o in outcomes.values()] == [1, 1]


class CancelledJob(ScriptedJob):
    """A job whose cancel Slurm carries out: SIGTERM kills task 0's hung workload, whose task
    reports it (when `reports`), and the job ends CANCELLED."""

    def __init__(self, tmp_path: Path, reports: bool) -> None:
        super().__init__()
        self.tmp_path, self.reports = tmp_path, reports

    def cancel(self, check: bool = True) -> None:
        super().cancel(check)
        if self.reports:
            attempt_of(self.tmp_path, 0, 0, "failed")


def hung_on_rank_1(monkeypatch, tmp_path: Path, job: CancelledJob) -> tuple[tuple, float]:
    """A 2n1g run on the real harness's limits (30 min, grace 120 s) whose task 1 fails at once
    (status `failed` or, with job.reports False, `oom`) while task 0 hangs in a collective:
    what the watch returns, and the seconds it took."""
    clock = FakeClock()
    monkeypatch.setattr(watch, "time", clock)
    monkeypatch.setattr(watch, "_starters", lambda: [])
    started = clock.now
    outcome = {"task": 1, "status": "failed" if job.reports else "oom", "job_id": job.job_id,
               "ended_at": started, "detail": "exit code 1; last line: RuntimeError: boom"}  # fmt: skip
    run_paths(tmp_path).task_outcome(1).write_text(json.dumps(outcome))
    monkeypatch.setattr(
        watch,
        "slurm_state",
        lambda j: ("CANCELLED", "None") if j.cancelled else ("RUNNING", "None"),
    )
    spec = SimpleNamespace(paths=run_paths(tmp_path))
    harness = Harness(backend="slurm", site={}, time_limit_min=30, wait_grace_s=120)
    found = watch.wait_for_outcomes(job, spec, TWO_TASKS, harness)
    return found, clock.now - started


def test_tasks_that_hang_on_a_failed_task_are_cancelled_not_waited_for_to_the_limit(
    monkeypatch, tmp_path
):
    """Review: rank 1 of a multi-node run failed (a CUDA error, an OOM, a lost NIC) and rank 0
    waited in NCCL's all-reduce for it: the submitter waited for every task's outcome, so the
    job held its nodes to the run's time limit (30 min by default, 37 min with the job's
    start-up margin and grace) and nothing said why. The job is cancelled a minute after."""
    job = CancelledJob(tmp_path, reports=True)
    (status, detail), waited_s = hung_on_rank_1(monkeypatch, tmp_path, job)
    assert (status, job.cancelled) == (None, 1)
    assert detail == (
        "task 1 ended failed and tasks [0] still ran 60 s later, waiting on it: "
        "dlperf cancelled the job"
    )
    assert watch.HUNG_AFTER_FAILURE_S <= waited_s < watch.HUNG_AFTER_FAILURE_S + 10


def test_a_cancelled_hung_task_that_never_reports_leaves_the_failed_tasks_status(
    monkeypatch, tmp_path
):
    job = CancelledJob(tmp_path, reports=False)
    (status, detail), waited_s = hung_on_rank_1(monkeypatch, tmp_path, job)
    assert (status, job.cancelled) == ("failed", 1)
    assert detail.startswith("task 1 ended oom and tasks [0] still ran 60 s later")
    assert waited_s < watch.HUNG_AFTER_FAILURE_S + watch.ENDED_GRACE_S + 10


def test_a_requeued_jobs_earlier_failure_does_not_cancel_its_next_attempt(monkeypatch, tmp_path):
    """A site with `requeue`: attempt 0's task 1 failed (its node lost) and the job was requeued;
    attempt 1 runs longer than the hang's grace and reports ok."""
    attempt_of(tmp_path, 1, 0, "failed")

    def answer(t: float) -> tuple[str, str]:
        if t < 1.0:
            return "PENDING", "BeginTime"
        if t > 3 * watch.HUNG_AFTER_FAILURE_S:
            attempt_of(tmp_path, 0, 1, "ok")
            attempt_of(tmp_path, 1, 1, "ok")
        return "RUNNING", "None"

    spec, harness = waiting(monkeypatch, tmp_path, answer)
    monkeypatch.setattr(Harness, "job_time_min", 30)
    job = ScriptedJob()
    assert watch.wait_for_outcomes(job, spec, TWO_TASKS, harness) == (None, "")
    assert job.cancelled == 0


def test_a_job_slurm_ended_out_of_memory_is_oom_though_its_task_saw_only_sigkill(
    monkeypatch, tmp_path
):
    """Review: Slurm's cgroup OOM killer (or its OverMemoryKill) SIGKILLed the workload, and its
    task could read no OOM kill count (cgroup v1 before kernel 4.13, a container's view): the
    task reported `killed by SIGKILL`, and once every task had reported the job's end state
    OUT_OF_MEMORY was asked for a scheduler stop only: the run was `failed`, its `max` search
    reading it as a crash instead of a batch that does not fit."""
    outcome = {"task": 0, "status": "failed", "job_id": ScriptedJob.job_id, "exit_code": -9,
               "detail": "killed by SIGKILL (exit code -9); last line: step 40"}  # fmt: skip
    run_paths(tmp_path).task_outcome(0).write_text(json.dumps(outcome))
    answers = iter([("COMPLETING", "None")])
    spec, harness = waiting(
        monkeypatch, tmp_path, lambda t: next(answers, ("OUT_OF_MEMORY", "OutOfMemory"))
    )
    assert watch.wait_for_outcomes(ScriptedJob(), spec, ONE_TASK, harness) == (
        "oom",
        "Slurm ended the job as OUT_OF_MEMORY: a process of it went over the job's memory",
    )


def test_a_redo_cancels_the_job_its_killed_attempt_left_running(monkeypatch, tmp_path):
    """Review (seen on the test cluster): Snakemake's process group SIGKILLed while a run
    trained, then `--unlock` and a re-run: the redo submitted a second job while the first,
    which no submitter was left to cancel, trained on beside it on the same node. The redo asks
    Slurm to cancel the earlier attempt's jobs of this run's name, by the ids its submitit
    folder names."""
    calls: list[list[str]] = []
    monkeypatch.setattr(submit.subprocess, "run", lambda args, **kw: calls.append(args))
    paths = run_paths(tmp_path)
    spec = SimpleNamespace(paths=paths, cell=SimpleNamespace(id=paths.cell_id), repeat=1)
    assert submit.cancel_earlier_jobs(spec) == [] and calls == []  # a first attempt
    paths.submitit.mkdir()
    for name in ("6_submitted.pkl", "6_0_log.out", "6_0_result.pkl", "8_submitted.pkl"):
        (paths.submitit / name).touch()
    assert submit.cancel_earlier_jobs(spec) == ["6", "8"]
    assert calls == [["scancel", f"--name=dlperf.{paths.cell_id}.r1", "6", "8"]]
