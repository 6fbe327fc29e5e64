"""The workflow for real: Snakemake, submitit's local executor and the PyTorch workload at 1 and 2
processes, on a tiny suite. Proves planning, the numbers, the statuses and what reruns."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from workflow_helpers import ROOT, SNAKEMAKE, TINY_SUITE, WorkflowCopy, planned_jobs, snakemake

pytestmark = pytest.mark.integration
RESNET = "pytorch.resnet50.fp32.noxla.b2"


@pytest.fixture(scope="module")
def workflow(tmp_path_factory) -> WorkflowCopy:
    """The module's own copy of the workflow and of dlperf, which the tests below edit (and
    restore): the repository's files never change under tests run beside them (pytest-xdist)."""
    return WorkflowCopy.make(tmp_path_factory.mktemp("workflow"))


@pytest.fixture(scope="module")
def done(tmp_path_factory, workflow) -> Path:
    """The tiny suite, run once for the module by its copy of the workflow: use that copy
    (`workflow`) on it, whose code inputs are the ones its tables and reports were made with."""
    workdir = tmp_path_factory.mktemp("tiny")
    shutil.copy(TINY_SUITE, workdir / "config.yaml")
    workflow.snakemake(workdir, "--cores", "2", "--configfile", "config.yaml")
    return workdir


def read(workdir: Path, name: str) -> pd.DataFrame:
    return pd.read_csv(workdir / "results" / "tables" / name, sep="\t")


def test_dry_run_plans_every_job_and_runs_none(tmp_path):
    shutil.copy(TINY_SUITE, tmp_path / "config.yaml")
    jobs = planned_jobs(tmp_path, "--configfile", "config.yaml")
    assert len(jobs["run_cell"]) == 6 * 2  # 6 cells x 2 repeats
    assert "cell=pytorch.resnet50.fp32.noxla.b2.1n2g, repeat=2" in jobs["run_cell"]
    assert len(jobs["tables"]) == len(jobs["report"]) == 1
    assert not (tmp_path / "results").exists()


def test_throughput_speedup_and_statuses(done):
    cells = read(done, "cells.tsv").set_index("cell_id")
    runs = read(done, "runs.tsv")
    assert cells.loc[f"{RESNET}.1n1g", "status"] == "ok"
    assert cells.loc[f"{RESNET}.1n2g", "runs_ok"] == 2
    one = runs[runs.cell_id == f"{RESNET}.1n1g"].throughput_samples_per_s.median()
    two = runs[runs.cell_id == f"{RESNET}.1n2g"].throughput_samples_per_s.median()
    assert cells.loc[f"{RESNET}.1n2g", "throughput_median"] == pytest.approx(two, rel=1e-5)
    assert cells.loc[f"{RESNET}.1n2g", "speedup"] == pytest.approx(two / one, rel=1e-4)
    assert cells.loc[f"{RESNET}.1n2g", "efficiency"] == pytest.approx(two / one / 2, rel=1e-4)
    assert not pd.isna(cells.loc["pytorch.bert_base.fp32.noxla.b2.1n1g", "ci_low"])
    assert cells.loc["pytorch.bert_base.amp.noxla.b2.1n1g", "status"] == "ok"
    assert cells.loc["pytorch.resnet50.fp32.noxla.b256.1n1g", "status"] == "oom"
    assert cells.loc["pytorch.bert_base.fp32.noxla.b2-broken.1n1g", "status"] == "failed"
    broken = runs[runs.cell_id == "pytorch.bert_base.fp32.noxla.b2-broken.1n1g"].iloc[0]
    assert "exit code 1" in broken.status_detail and "not a multiple" in broken.status_detail


def test_run_figure_traces_back_to_log_lines(done):
    runs = read(done, "runs.tsv")
    run = runs[(runs.cell_id == f"{RESNET}.1n2g") & (runs.repeat == 1)].iloc[0]
    assert run.method == "timestamps"
    assert (run.window_first_step, run.window_last_step) == (3, 7)
    samples, slowest = 0, 0.0
    for trace in run.trace.split():  # "path:first-last" per rank
        path, lines = trace.rsplit(":", 1)
        first, last = map(int, lines.split("-"))
        text = Path(path if os.path.isabs(path) else done / path).read_text().splitlines()
        fields = [dict(re.findall(r"(\w+)=(\S+)", text[i - 1])) for i in range(first - 1, last + 1)]
        samples += sum(float(f["samples"]) for f in fields[1:])
        slowest = max(slowest, float(fields[-1]["end"]) - float(fields[0]["end"]))
    assert samples == 2 * 2 * 5
    assert run.throughput_samples_per_s == pytest.approx(samples / slowest, rel=1e-5)
    with gzip.open(done / "results/tables/steps.tsv.gz", "rt") as f:
        steps = pd.read_csv(f, sep="\t")
    # the steps table holds each rank's steps up to the window's end, no further (issue 20.14:
    # a log is read only as far as the window reaches)
    assert len(steps[(steps.cell_id == run.cell_id) & (steps.repeat == 1)]) == 2 * (2 + 5)


def test_mfu_memory_busbw_and_ceiling_trace_back_to_log_lines(done):
    runs = read(done, "runs.tsv").set_index(["cell_id", "repeat"])
    run = runs.loc[(f"{RESNET}.1n2g", 1)]
    log = {  # "rank0.log:12" -> that line's fields
        where: dict(re.findall(r"(\w+)=(\S+)", line))
        for name in ("rank0.log", "rank1.log")
        for n, line in enumerate(
            (done / f"results/runs/{RESNET}.1n2g/r1/{name}").read_text().splitlines(), 1
        )
        if (where := f"{name}:{n}") in run.explain_trace.split(",")
    }
    flops = next(f for f in log.values() if "per_sample" in f)
    peak = next(f for f in log.values() if "measured_tflops" in f)
    comm = next(f for f in log.values() if "busbw_gb_s" in f)
    memory = [f for f in log.values() if "peak_rss_mb" in f]
    assert run.flops_method == flops["method"] == "counted_FlopCounterMode"
    assert run.flops_per_sample == pytest.approx(float(flops["per_sample"]), rel=1e-5)
    per_device = run.flops_per_sample * run.throughput_samples_per_s / 2 / 1e12
    assert run.achieved_tflops == pytest.approx(per_device, rel=1e-4)
    assert run.peak_tflops == pytest.approx(float(peak["measured_tflops"]), rel=1e-4)
    source = "measured fp32 GEMM on this device"
    if "below the achieved rate" in run.peak_source:
        # beside other work the calibration can run slower than the training did: then no MFU,
        # and the peak's source says why (never an MFU over 100%), as in test_cross_framework
        assert run.peak_source.startswith(f"{source} below the achieved rate")
        assert run.achieved_tflops >= run.peak_tflops * (1 - 1e-5) and pd.isna(run.mfu_pct)
    else:
        assert run.mfu_pct == pytest.approx(100 * per_device / run.peak_tflops, rel=1e-3)
        assert 0 < run.mfu_pct < 100 and run.peak_source == source
    assert len(memory) == 2  # every rank's
    assert run.peak_mem_mib == max(float(m["peak_rss_mb"]) for m in memory)
    assert (comm["backend"], comm["world"]) == ("gloo", "2")
    assert run.comm_bytes == int(comm["bytes"]) and run.busbw_gb_s > 0
    assert run.energy_detail == "no NVML power counter: a CPU run"
    assert pd.isna(run.energy_j_per_sample)  # n/a with its reason, never 0
    cells = read(done, "cells.tsv").set_index("cell_id")
    wide, one = cells.loc[f"{RESNET}.1n2g"], cells.loc[f"{RESNET}.1n1g"]
    ok = runs.loc[f"{RESNET}.1n2g"]
    assert wide.busbw_gb_s == pytest.approx(ok.busbw_gb_s.median(), rel=1e-5)
    t1 = 2 / one.throughput_median  # the 1n1g step time: batch 2 per device
    comm_s = ok.comm_bytes.median() * (2 * 1 / 2) / (wide.busbw_gb_s * 1e9)
    assert wide.speedup_ceiling == pytest.approx(2 * t1 / (t1 + comm_s), rel=1e-4)
    assert wide.ceiling_model.startswith("no overlap")
    assert pd.isna(one.speedup_ceiling)  # one device: nothing to all-reduce


def test_manifest_records_the_run(done):
    manifest = json.loads((done / f"results/runs/{RESNET}.1n2g/r1/manifest.json").read_text())
    assert manifest["status"] == "ok"
    assert manifest["allocation"]["tasks_per_node"] == 2
    assert [t["task"] for t in manifest["tasks"]] == [0, 1]
    assert manifest["tasks"][0]["command"][2:4] == ["-m", "dlperf.workloads.torch_train"]
    assert "--batch-size" in manifest["tasks"][1]["command"]
    for task in manifest["tasks"]:  # each log as its run left it (issue 20.1)
        log = done / f"results/runs/{RESNET}.1n2g/r1" / task["log"]
        assert task["log_bytes"] == log.stat().st_size > 0
        assert task["log_sha256"] == hashlib.sha256(log.read_bytes()).hexdigest()
    node = next(iter(manifest["nodes"].values()))
    assert node["packages"]["torch"].startswith("2.")
    assert node["cpu_model"] and node["python"]
    assert manifest["started_at"] <= manifest["ended_at"] <= manifest["noticed_at"]
    per_run = json.loads((done / f"results/json/{RESNET}.1n2g/r1.json").read_text())
    assert len(per_run["step_time_ms"]) == 5
    assert per_run["percentiles_ms"]["p50_ms"] == pytest.approx(sorted(per_run["step_time_ms"])[2])


def test_reports_render_in_both_languages(done):
    for lang in ("en", "zh"):
        for ext in ("md", "html"):
            assert (done / f"results/report/report.{lang}.{ext}").stat().st_size > 0
    assert "OOM" in (done / "results/report/report.en.md").read_text()


def test_snakemake_commands_work_as_typed(done, workflow):
    """Issue 20.18: with threads as a share of the cores, `--report` and `--summary` stopped with
    "Workflow requires a total number of cores"; the workflow profile now sets them."""
    for args in (["--summary"], ["--dag"], ["--list-changes", "params"], ["--report", "r.html"]):
        proc = workflow.snakemake(done, *args, "--configfile", "config.yaml")
        assert "requires a total number of cores" not in proc.stderr
    assert (done / "r.html").stat().st_size > 10_000  # Snakemake's report, with the reports in it
    dry = workflow.snakemake(done, "-n", "--configfile", "config.yaml")
    assert "Nothing to be done" in dry.stdout + dry.stderr


def test_changing_one_case_reruns_only_its_runs_and_downstream(done, workflow):
    config = yaml.safe_load((done / "config.yaml").read_text())
    config["cases"][1]["options"]["seq_len"] = 24
    (done / "changed.yaml").write_text(yaml.safe_dump(config))
    jobs = workflow.planned_jobs(done, "--configfile", "changed.yaml")
    rerun = sorted({w.split(",")[0] for w in jobs["run_cell"]})
    assert rerun == [
        "cell=pytorch.bert_base.amp.noxla.b2.1n1g",
        "cell=pytorch.bert_base.fp32.noxla.b2.1n1g",
    ]
    assert len(jobs["run_cell"]) == 4 and "tables" in jobs and "report" in jobs


def test_switching_backend_and_time_limit_reruns_no_run(done, workflow):
    """Not what is measured: no run is redone. The report states them, so it is re-rendered;
    the time limit is a planned duration, so the plan is remade."""
    jobs = workflow.planned_jobs(
        done, "--configfile", "config.yaml", "--config", "time_limit_min=9", "wait_grace_s=5"
    )
    assert set(jobs) == {"plan", "report", "all"}


def test_editing_harness_code_reruns_no_measured_run(done, workflow):
    """Real edits (Snakemake 9 ignores a bare touch when the checksum is unchanged), the run
    rule's shell line among them: Snakemake's code trigger redid every run for it (off in
    profiles/default). dlperf's own environment file too, though its software-env trigger only
    fires under --sdm conda, which this machine does not run. The edits are the module's copy's
    (`workflow`), never the repository's files, which the other worker's tests run."""
    edited = [
        workflow.root / path
        for path in (
            "src/dlperf/launch/submit.py",
            "src/dlperf/parse/builtin.py",
            "src/dlperf/report/templates/report.md.j2",
            "workflow/scripts/report.py",
            "rules/run.smk",
            "envs/dlperf.yaml",
        )
    ]
    saved = {p: (p.read_bytes(), p.stat()) for p in edited}
    shell_end = b' 2>&1"\n'
    assert saved[workflow.root / "rules/run.smk"][0].count(shell_end) == 1
    try:
        for path in edited:
            content = saved[path][0]
            if path.suffix == ".smk":  # the shell line itself (a rule file's new line is none)
                content = content.replace(shell_end, b' 2>&1 "\n')
            path.write_bytes(content + b"\n")
        jobs = workflow.planned_jobs(done, "--configfile", "config.yaml")
    finally:
        for path, (content, st) in saved.items():
            path.write_bytes(content)
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert "run_cell" not in jobs
    assert set(jobs) == {"plan", "tables", "report", "all"}  # each runs the parser (its imports)


def test_editing_the_workload_reruns_its_runs(done, workflow):
    """What ran is the workload's code: an edit of it (or of a dlperf module it imports) redoes
    every run of its framework, as a changed option does. The edit is the module's copy's."""
    path = workflow.root / "src/dlperf/workloads/common.py"
    content, st = path.read_bytes(), path.stat()
    try:
        path.write_bytes(content + b"\n# edited\n")
        jobs = workflow.planned_jobs(done, "--configfile", "config.yaml")
    finally:
        path.write_bytes(content)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert len(jobs["run_cell"]) == 6 * 2  # every run of the tiny suite (all PyTorch)
    assert workflow.planned_jobs(done, "--configfile", "config.yaml") == {}  # restored


def test_interrupted_run_is_the_only_one_redone(tmp_path):
    config = yaml.safe_load(TINY_SUITE.read_text())
    config["cases"] = config["cases"][:1]
    config["cases"][0]["layouts"] = ["1n1g"]
    config["window"] = {"warmup": 2, "measure": 200}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    run_dir = tmp_path / f"results/runs/{RESNET}.1n1g"
    targets = [f"results/runs/{RESNET}.1n1g/r{k}/manifest.json" for k in (1, 2)]
    snakemake(tmp_path, targets[0], "--cores", "2", "--configfile", "config.yaml")  # repeat 1 done
    cmd = [*SNAKEMAKE, "-s", str(ROOT / "Snakefile"), *targets, "--cores", "2"]
    cmd += ["--configfile", "config.yaml"]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        cwd=tmp_path,
    )
    workload = None
    try:  # interrupt repeat 2 while it trains: held stopped there, it cannot finish meanwhile
        workload = _stopped_once_it_trains(run_dir / "r2/rank0.log", proc)
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        _continue_once_killed(workload)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        if workload is not None and _alive(workload):
            os.killpg(workload, signal.SIGKILL)  # stopped or not
    finished = run_dir / "r1/manifest.json"
    assert finished.exists() and not (run_dir / "r2/manifest.json").exists()
    deadline = time.time() + 30
    while _running_interrupted_workloads() and time.time() < deadline:
        time.sleep(0.5)
    assert _running_interrupted_workloads() == [], "the interrupted workload was left running"
    kept = finished.stat().st_mtime_ns
    jobs = planned_jobs(tmp_path, *targets, "--configfile", "config.yaml")
    assert jobs["run_cell"] == [f"cell={RESNET}.1n1g, repeat=2"]
    snakemake(tmp_path, *targets, "--cores", "2", "--configfile", "config.yaml")
    assert finished.stat().st_mtime_ns == kept
    assert json.loads((run_dir / "r2/manifest.json").read_text())["status"] == "ok"


def _has_steps(log: Path) -> bool:
    return log.exists() and "dlperf-step" in log.read_text(errors="replace")


def _stopped_once_it_trains(log: Path, proc: subprocess.Popen) -> int:
    """The workload writing `log` (its stdout; the harness starts it in a process group of its
    own, whose id is its pid), stopped (SIGSTOP to that group) with a step in its log. It runs
    only in slices between two looks at the log, each taken while it is stopped: however long a
    loaded machine delays this test, the workload cannot train to its end unseen."""
    deadline = time.time() + 240
    workload = None
    while True:
        assert time.time() < deadline and proc.poll() is None, "repeat 2 never trained"
        workload = workload or _writer_of(log)
        if workload is not None:
            assert os.getpgid(workload) == workload, "the workload is not in a group of its own"
            os.killpg(workload, signal.SIGSTOP)
            while not _stopped(workload):  # a signal takes effect once its process is scheduled
                assert time.time() < deadline, "the workload never stopped"
                time.sleep(0.01)
            if _has_steps(log):
                return workload
            os.killpg(workload, signal.SIGCONT)
        time.sleep(0.05)


def _continue_once_killed(workload: int) -> None:
    """Let the stopped workload go once the harness has signalled it to end (a stopped process
    takes no signal but SIGKILL: the harness's SIGTERM waits, pending) or has killed it. It
    resumes only to die, before its next step."""
    deadline = time.time() + 60
    while _alive(workload) and not _pending_signals(workload) & ~STOP_AND_CONTINUE:
        assert time.time() < deadline, "the harness never ended the interrupted workload"
        time.sleep(0.05)
    try:
        os.killpg(workload, signal.SIGCONT)
    except ProcessLookupError:
        pass


def _writer_of(log: Path) -> int | None:
    """The process whose standard output is `log`, if one runs."""
    log = log.resolve()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and Path(os.readlink(entry / "fd" / "1")) == log:
                return int(entry.name)
        except OSError:  # gone, or not ours to read
            continue
    return None


STOP_AND_CONTINUE = 1 << (signal.SIGSTOP - 1) | 1 << (signal.SIGCONT - 1)


def _stopped(pid: int) -> bool:
    """Whether every thread of the process is stopped (state T), or the process is gone."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return True
    for task in tasks:
        try:
            state = (task / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:  # a thread that ended meanwhile
            continue
        if state not in ("T", "Z", "X"):
            return False
    return True


def _pending_signals(pid: int) -> int:
    """The signals pending for the process (its ShdPnd mask: bit n-1 for signal n); 0 once gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    return int(re.search(r"^ShdPnd:\s*([0-9a-f]+)", status, re.M)[1], 16)


def _alive(pid: int) -> bool:
    """Whether the process runs, or is stopped (a zombie, dead but not yet reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _running_interrupted_workloads() -> list[str]:
    out = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [
        line
        for line in out.splitlines()
        if "dlperf.workloads.torch_train" in line and "--steps 204" in line
    ]


def test_config_error_stops_before_any_job(tmp_path):
    config = yaml.safe_load(TINY_SUITE.read_text())
    config["cases"][0]["batch_size"] = [0]
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    proc = snakemake(tmp_path, "--cores", "1", "--configfile", "config.yaml", check=False)
    assert proc.returncode != 0
    assert "cases[0].batch_size[0]" in proc.stdout + proc.stderr
    assert not (tmp_path / "results").exists()


# --- trust: bad input and faults are statuses or clear errors, never a wrong or missing report ---


def test_a_suite_where_nothing_succeeded_still_reports_why(tmp_path):
    config = yaml.safe_load(TINY_SUITE.read_text())
    config["repeats"] = 1
    config["cases"] = config["cases"][2:]  # a real OOM and a real crash, nothing else
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(config))
    snakemake(tmp_path, "--cores", "2", "--config", "suite=suite.yaml")
    assert (tmp_path / "results/plots").is_dir()
    text = (tmp_path / "results/report/report.en.md").read_text()
    assert "from 2 runs (0 succeeded)" in text
    assert "Nothing succeeded: no run gave a figure" in text
    assert "not a multiple of the number of attention heads" in text and "out of memory" in text
    assert "没有一次运行成功" in (tmp_path / "results/report/report.zh.html").read_text()


def test_an_impossible_local_layout_is_refused_before_any_job(tmp_path):
    config = yaml.safe_load(TINY_SUITE.read_text())
    config["cases"][0]["layouts"] = ["1n1g", "1n999g"]
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(config))
    proc = snakemake(tmp_path, "-n", "--cores", "2", "--config", "suite=suite.yaml", check=False)
    assert proc.returncode != 0
    assert "layout 1n999g runs 999 ranks, one per device; this machine has" in proc.stdout
    assert not (tmp_path / "results").exists()


def test_syntax_and_schema_errors_name_the_suite_file_and_line(tmp_path):
    (tmp_path / "bad.yaml").write_text("repeats: 3\ncases:\n  - framework: pytorch\n   model: [\n")
    proc = snakemake(tmp_path, "-n", "--cores", "1", "--config", "suite=bad.yaml", check=False)
    assert proc.returncode != 0 and "bad.yaml:4: not valid YAML" in proc.stdout
    config = yaml.safe_load(TINY_SUITE.read_text())
    config["cases"][1]["options"]["threads"] = "abc"
    (tmp_path / "typed.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    proc = snakemake(tmp_path, "-n", "--cores", "1", "--config", "suite=typed.yaml", check=False)
    assert proc.returncode != 0
    assert "typed.yaml:" in proc.stdout
    assert "cases[1].options.threads: 'abc' is not of type 'integer'" in proc.stdout
    proc = snakemake(
        tmp_path, "-n", "--cores", "1", "--config", "suite=typed.yaml", "repeats=0", check=False
    )
    assert "--config: repeats: 0 is less than the minimum of 1" in proc.stdout


def test_dlperf_check_and_snakemake_plan_the_same_suite(tmp_path):
    """A suite without `repeats` gets the schema's 7 in both tools (the default suite has 3)."""
    config = yaml.safe_load(TINY_SUITE.read_text())
    del config["repeats"]
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(config))
    check = subprocess.run(
        [*SNAKEMAKE[:1], "-m", "dlperf", "check", "suite.yaml"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    ).stdout
    plan = "6 cells x 7 repeats = 42 runs (1n1g: 35, 1n2g: 7)"
    assert plan in check
    for args in (["--config", "suite=suite.yaml"], ["--configfile", "suite.yaml"]):
        assert f"dlperf plan: {plan}" in snakemake(tmp_path, "-n", "--cores", "1", *args).stdout


@pytest.mark.parametrize("victim", ["snakemake", "submitter"])
def test_a_killed_run_leaves_no_process_behind(tmp_path, victim):
    """SIGKILL (nothing can clean up in the killed process) to Snakemake or to the run's
    submitter: the submitter cancels its run, and the workload dies with it."""
    config = yaml.safe_load(TINY_SUITE.read_text())
    config["cases"] = config["cases"][:1]
    config["cases"][0]["layouts"] = ["1n2g"]
    config["window"] = {"warmup": 2, "measure": 4000}
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(config))
    run_dir = tmp_path / f"results/runs/{RESNET}.1n2g/r1"
    cmd = [
        *SNAKEMAKE,
        "-s",
        str(ROOT / "Snakefile"),
        "--cores",
        "2",
        "--config",
        "suite=suite.yaml",
    ]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 240
        while not (_has_steps(run_dir / "rank0.log") and _has_steps(run_dir / "rank1.log")):
            assert time.time() < deadline and proc.poll() is None, "the run never started"
            time.sleep(0.2)
        assert len(_workloads("--steps 4004")) >= 2
        submitter = _submitters(tmp_path)
        assert len(submitter) >= 1
        os.kill(proc.pid if victim == "snakemake" else submitter[-1], signal.SIGKILL)
        deadline = time.time() + 30
        while (_workloads("--steps 4004") or _submitters(tmp_path)) and time.time() < deadline:
            time.sleep(0.5)
        assert _workloads("--steps 4004") == [], "a workload outlived the killed run"
        assert _submitters(tmp_path) == [], "a submitter outlived Snakemake"
    finally:
        proc.kill()
        proc.wait()


def _submitters(workdir: Path) -> list[int]:
    """This workflow's submitters (those of other work on the machine run elsewhere)."""
    shells = _pids("bash -c")
    return [
        p for p in _pids("-m dlperf run-cell") if p not in shells and _cwd(p) == workdir.resolve()
    ]


def _cwd(pid: int) -> Path | None:
    try:
        return Path(os.readlink(f"/proc/{pid}/cwd"))
    except OSError:  # gone, or not ours to read
        return None


def _pids(marker: str) -> list[int]:
    out = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [
        int(line.split()[0])
        for line in out.splitlines()[1:]
        if marker in line and "ps -eo" not in line
    ]


def _workloads(marker: str) -> list[int]:
    return [p for p in _pids("dlperf.workloads.torch_train") if p in _pids(marker)]


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "baselines[0].path: no such file 'base.tsv'"),
        (bytes(range(256)) * 8, "base.tsv"),
        (b"", "base.tsv: not a readable table"),
        (b"a\tb\n1\t2\n", "base.tsv has no cell_id column"),
        (b"cell_id\tthroughput_median\n", "base.tsv has a header and no rows"),
    ],
)
def test_a_missing_or_malformed_baseline_is_an_error_before_anything_runs(
    tmp_path, content, message
):
    """Issue 20.6 and 9: a missing baseline froze the report (exit 0, 'Nothing to be done'); a
    malformed one failed the report rule, which had deleted the reports already made."""
    config = yaml.safe_load(TINY_SUITE.read_text())
    config["baselines"] = [{"name": "DLPerf", "path": "base.tsv"}]
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    if content is not None:
        (tmp_path / "base.tsv").write_bytes(content)
    proc = snakemake(tmp_path, "-n", "--cores", "2", "--configfile", "config.yaml", check=False)
    assert proc.returncode != 0
    assert message in proc.stderr + proc.stdout
    assert "Traceback" not in proc.stderr + proc.stdout
    assert not (tmp_path / "results").exists()


@pytest.mark.integration
def test_a_skip_the_suite_decides_queues_no_job(tmp_path):
    """Review: a cell skipped for a reason the suite alone decides (JAX without XLA, an upstream
    source without its data_dir) queued for its whole allocation, on a cluster, built its
    framework's environment, and only then recorded `skipped` on the node. It is recorded by
    the submitter: no job, no environment, no search."""
    suite = {
        "repeats": 1,
        "device": "cpu",
        "cases": [
            {"framework": "tensorflow2", "model": "resnet50", "batch_size": [2],
             "layouts": ["1n1g", "1n2g"], "options": {"release": "current"}},
        ],
    }  # fmt: skip
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite))
    # an earlier attempt's files, an upstream trainer's checkpoint among them (review: a TF1
    # Estimator restores from its model_dir and would train no step of the redo): all gone
    earlier = tmp_path / "results/runs/tensorflow2.resnet50.fp32.noxla.b2.1n1g/r1"
    (earlier / "tf_output").mkdir(parents=True)
    (earlier / "tf_output" / "model.ckpt-100.index").write_text("")
    (earlier / "rank0.log").write_text("an earlier attempt\n")
    # a run folder that cannot be cleared (here a symlink, which rmtree refuses; root's files,
    # NFS's .nfs*): the run's status says so (it crashed with FileExistsError on every attempt)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    linked = tmp_path / "results/runs/tensorflow2.resnet50.fp32.noxla.b2.1n2g/r1"
    linked.parent.mkdir(parents=True)
    linked.symlink_to(elsewhere)
    snakemake(tmp_path, "--cores", "2", "--config", "suite=suite.yaml")
    assert not (earlier / "tf_output").exists() and not (earlier / "rank0.log").exists()
    cleared = json.loads((linked / "manifest.json").read_text())
    assert cleared["status"] == "failed"
    assert (
        f"an earlier attempt's files in {linked.relative_to(tmp_path)} cannot be removed"
        in (cleared["status_detail"])
    )
    linked.unlink()  # the user's fix; the run is redone
    (tmp_path / "elsewhere/manifest.json").unlink()
    snakemake(tmp_path, "--cores", "2", "--config", "suite=suite.yaml")
    for layout in ("1n1g", "1n2g"):
        run = tmp_path / f"results/runs/tensorflow2.resnet50.fp32.noxla.b2.{layout}/r1"
        manifest = json.loads((run / "manifest.json").read_text())
        assert manifest["status"] == "skipped" and manifest["job_state"] == "NOT_SUBMITTED"
        assert manifest["status_detail"].startswith("tensorflow/models' current ResNet-50")
        assert not (run / "submitit").exists()
    assert not (tmp_path / ".dlperf").exists()  # no environment was built
    cells = pd.read_csv(tmp_path / "results/tables/cells.tsv", sep="\t")
    assert set(cells["status"]) == {"skipped"}
