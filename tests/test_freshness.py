"""Every figure depends on everything it is computed from: the runs' manifests and raw logs, the
window and the report settings. After any change (or loss) the next invocation recomputes what it
feeds, or redoes the run, with no --forcerun: nothing is ever shown stale."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from base64 import urlsafe_b64encode
from pathlib import Path

import pandas as pd
import pytest
import yaml
from workflow_helpers import ROOT, SNAKEMAKE, TINY_SUITE, planned_jobs, snakemake

from dlperf.workloads import code_digest

pytestmark = pytest.mark.integration
RESNET = "pytorch.resnet50.fp32.noxla.b2"


def tiny_suite(cases: slice = slice(0, 1)) -> dict:
    config = yaml.safe_load(TINY_SUITE.read_text())
    config["cases"] = config["cases"][cases]
    return config


@pytest.fixture(scope="module")
def measured(tmp_path_factory) -> Path:
    """The tiny suite's ResNet cells (1n1g, 1n2g; 2 repeats), run once for the module."""
    workdir = tmp_path_factory.mktemp("measured")
    (workdir / "suite.yaml").write_text(yaml.safe_dump(tiny_suite()))
    snakemake(workdir, "--cores", "2", "--config", "suite=suite.yaml")
    return workdir


@pytest.fixture
def copy(measured, tmp_path) -> Path:
    """A copy of the measured folder, Snakemake's records of what it ran included."""
    target = tmp_path / "copy"
    shutil.copytree(measured, target, symlinks=True, ignore=shutil.ignore_patterns("locks"))
    for marker in (target / "results/.made").iterdir():
        marker.touch()  # a copy's files are all changed now (their ctime): made after them
    return target


def table(workdir: Path, name: str) -> pd.DataFrame:
    return pd.read_csv(workdir / "results" / "tables" / name, sep="\t")


def run_row(workdir: Path, cell: str, repeat: int) -> pd.Series:
    runs = table(workdir, "runs.tsv")
    return runs[(runs.cell_id == cell) & (runs.repeat == repeat)].iloc[0]


def write_suite(workdir: Path, config: dict) -> None:
    (workdir / "suite.yaml").write_text(yaml.safe_dump(config))


def test_up_to_date_plans_nothing(measured):
    assert planned_jobs(measured, "--config", "suite=suite.yaml") == {}


def test_a_window_of_the_same_length_rebuilds_the_tables_not_the_runs(copy):
    config = tiny_suite()
    config["window"] = {"warmup": 3, "measure": 4}  # 2 + 5 before: the runs ran the same steps
    write_suite(copy, config)
    assert set(planned_jobs(copy, "--config", "suite=suite.yaml")) == {"tables", "report", "all"}
    snakemake(copy, "--cores", "2", "--config", "suite=suite.yaml")
    row = run_row(copy, f"{RESNET}.1n1g", 1)
    assert (row.window_first_step, row.window_last_step) == (4, 7)
    assert (
        "skips the first 3 logged steps and measures the next 4"
        in (copy / "results/report/report.en.md").read_text()
    )


def test_report_settings_rerender_the_report_only(copy):
    config = tiny_suite()
    config["report"] = {"title": "Retitled", "footnotes": {"*.1n2g": "two ranks"}}
    write_suite(copy, config)
    assert set(planned_jobs(copy, "--config", "suite=suite.yaml")) == {"report", "all"}
    snakemake(copy, "--cores", "2", "--config", "suite=suite.yaml")
    text = (copy / "results/report/report.en.md").read_text()
    assert text.startswith("# Retitled") and "two ranks" in text


def test_a_language_no_longer_asked_for_leaves_no_report_behind(copy):
    """Review: languages [en] with a new window re-rendered report.en.* and left report.zh.*
    with the old window and medians beside it, never to be updated."""
    assert (copy / "results/report/report.zh.md").exists()
    config = tiny_suite() | {"report": {"languages": ["en"]}}
    write_suite(copy, config)
    snakemake(copy, "--cores", "2", "--config", "suite=suite.yaml")
    left = sorted(p.name for p in (copy / "results/report").glob("report.*"))
    assert left == ["report.en.html", "report.en.md"]


def test_a_deleted_manifest_is_redone(copy):
    (copy / f"results/runs/{RESNET}.1n2g/r2/manifest.json").unlink()
    jobs = planned_jobs(copy, "--config", "suite=suite.yaml")
    assert jobs["run_cell"] == [f"cell={RESNET}.1n2g, repeat=2"]
    assert {"tables", "report"} <= set(jobs)


def test_a_run_measured_by_other_workload_code_is_redone(copy):
    """A run's params carry its workload's code digest (recorded in its manifest): a run that
    Snakemake recorded with another digest, as after an edit of the workload, is redone."""
    output = f"results/runs/{RESNET}.1n2g/r2/manifest.json"
    code = json.loads((copy / output).read_text())["measure"]["workload_code"]
    assert code == code_digest("dlperf.workloads.torch_train")
    record = copy / ".snakemake" / "metadata" / urlsafe_b64encode(output.encode()).decode()
    record.write_text(record.read_text().replace(code, "0" * len(code)))  # measured before an edit
    jobs = planned_jobs(copy, "--config", "suite=suite.yaml")
    assert jobs["run_cell"] == [f"cell={RESNET}.1n2g, repeat=2"]


def test_with_snakemakes_records_lost_a_changed_option_still_redoes_its_cells(copy):
    """Issue 20.4: after `rm -rf .snakemake` (a fresh clone of the results, a new machine) a
    changed option reran nothing and the report kept the old figure. The runs' records say what
    they measured: the changed cell's runs are redone, the other cell's are not."""
    shutil.rmtree(copy / ".snakemake")
    assert planned_jobs(copy, "--config", "suite=suite.yaml") == {}
    config = tiny_suite()
    config["cases"][0]["layouts"] = ["1n1g"]  # the 1n2g cell leaves the suite: not redone
    config["cases"][0]["options"]["image_size"] = 24
    write_suite(copy, config)
    jobs = planned_jobs(copy, "--config", "suite=suite.yaml")
    assert sorted(jobs["run_cell"]) == [f"cell={RESNET}.1n1g, repeat={r}" for r in (1, 2)]
    snakemake(copy, "--cores", "2", "--config", "suite=suite.yaml")
    manifest = json.loads((copy / f"results/runs/{RESNET}.1n1g/r1/manifest.json").read_text())
    assert manifest["measure"]["options"]["image_size"] == 24
    assert run_row(copy, f"{RESNET}.1n1g", 1).status == "ok"
    assert planned_jobs(copy, "--config", "suite=suite.yaml") == {}


def test_with_snakemakes_records_lost_a_changed_window_or_title_still_remakes_tables_and_report(
    copy,
):
    """Issue 20.4's class after the runs: with .snakemake gone, a window of the same length or a
    new title gave "Nothing to be done" and the tables and report of the old ones. What each rule
    was made with is marked beside the results, so they are remade, and the runs are not."""
    shutil.rmtree(copy / ".snakemake")
    assert planned_jobs(copy, "--config", "suite=suite.yaml") == {}
    config = tiny_suite()
    config["window"] = {"warmup": 3, "measure": 4}
    write_suite(copy, config)
    assert set(planned_jobs(copy, "--config", "suite=suite.yaml")) == {"tables", "report", "all"}
    asked = planned_jobs(copy, "results/tables/cells.tsv", "--config", "suite=suite.yaml")
    assert set(asked) == {"tables"}  # whatever target asks for them
    snakemake(copy, "--cores", "2", "--config", "suite=suite.yaml")
    row = run_row(copy, f"{RESNET}.1n1g", 1)
    assert (row.window_first_step, row.window_last_step) == (4, 7)
    shutil.rmtree(copy / ".snakemake")
    config["report"] = {"title": "Retitled"}
    write_suite(copy, config)
    assert set(planned_jobs(copy, "--config", "suite=suite.yaml")) == {"report", "all"}
    write_suite(copy, tiny_suite())  # the first window again: its marker predates the tables
    assert set(planned_jobs(copy, "--config", "suite=suite.yaml")) == {"tables", "report", "all"}


def test_a_cell_left_out_of_the_suite_leaves_the_tables_with_snakemakes_records_lost(copy):
    """The tables list the suite's planned cells: a layout dropped from the case, then
    .snakemake/ lost, rebuilds them without its cell (its runs stay on disk, not in any table
    or in the report)."""
    config = tiny_suite()
    config["cases"][0]["layouts"] = ["1n1g"]
    write_suite(copy, config)
    shutil.rmtree(copy / ".snakemake")
    assert {"tables", "report"} <= set(planned_jobs(copy, "--config", "suite=suite.yaml"))
    snakemake(copy, "--cores", "2", "--config", "suite=suite.yaml")
    assert set(table(copy, "cells.tsv").cell_id) == {f"{RESNET}.1n1g"}
    assert set(table(copy, "runs.tsv").cell_id) == {f"{RESNET}.1n1g"}
    report = (copy / "results/report/report.en.md").read_text()
    assert "| 1n1g |" in report and "| 1n2g |" not in report and f"{RESNET}.1n2g" not in report
    assert (copy / f"results/runs/{RESNET}.1n2g/r1/manifest.json").exists()


def test_a_log_or_manifest_copied_over_with_its_mtime_kept_rebuilds_the_tables(copy):
    """`cp -p` (or `touch -r`, `rsync -a`) keeps the mtime Snakemake and the edited logs' param
    go by, not the ctime: the tables are rebuilt, where the run is a parse_error naming it."""
    two = copy / f"results/runs/{RESNET}.1n2g"
    shutil.copy2(two / "r1/rank0.log", two / "r1/rank1.log")
    one = copy / f"results/runs/{RESNET}.1n1g"
    shutil.copy2(one / "r2/manifest.json", one / "r1/manifest.json")
    jobs = planned_jobs(copy, "--config", "suite=suite.yaml")
    assert "run_cell" not in jobs and {"tables", "report"} <= set(jobs)
    snakemake(copy, "--cores", "2", "--config", "suite=suite.yaml")
    copied_log = run_row(copy, f"{RESNET}.1n2g", 1)
    assert copied_log.status == "parse_error" and "rank1.log" in copied_log.status_detail
    copied_manifest = run_row(copy, f"{RESNET}.1n1g", 1)
    assert copied_manifest.status == "parse_error"
    assert "not of the run of its folder" in copied_manifest.status_detail
    # again, with Snakemake's records of the first remake kept (the stamp it consumed then is an
    # input whose checksum .snakemake/ holds: a stamp touched without new content went unseen)
    shutil.copy2(two / "r2/rank0.log", two / "r2/rank1.log")
    assert {"tables", "report"} <= set(planned_jobs(copy, "--config", "suite=suite.yaml"))
    snakemake(copy, "--cores", "2", "--config", "suite=suite.yaml")
    copied_again = run_row(copy, f"{RESNET}.1n2g", 2)
    assert copied_again.status == "parse_error" and "rank1.log" in copied_again.status_detail


def test_a_deleted_log_is_a_parse_error_naming_it(copy):
    """Task logs are watched, not Snakemake outputs (dry runs of big suites stay fast): a deleted
    one rebuilds the tables, where its run is a parse_error saying how to redo it."""
    gone = copy / f"results/runs/{RESNET}.1n2g/r1/rank1.log"
    gone.unlink()
    jobs = planned_jobs(copy, "--config", "suite=suite.yaml")
    assert "run_cell" not in jobs and {"tables", "report"} <= set(jobs)
    snakemake(copy, "--cores", "2", "--config", "suite=suite.yaml")
    row = run_row(copy, f"{RESNET}.1n2g", 1)
    assert row.status == "parse_error"
    assert f"{gone.relative_to(copy)}: this task's log is gone" in row.status_detail
    assert "delete the run's manifest to redo the run" in row.status_detail
    assert planned_jobs(copy, "--config", "suite=suite.yaml") == {}  # settled: nothing to do


def test_edited_logs_and_manifests_rebuild_the_figures_without_forcerun(copy):
    """A hand-edited log line, a rank log emptied, a manifest overwritten with garbage: each is
    that run's parse_error naming the file (and line); the other runs keep their figures."""
    run_dir = copy / f"results/runs/{RESNET}.1n1g/r2"
    lines = (run_dir / "rank0.log").read_text().splitlines()
    bad = next(i for i, line in enumerate(lines) if "step=4 " in line)
    lines[bad] = "dlperf-step rank=0 step=4 samples=two start=x end=y"
    (run_dir / "rank0.log").write_text("\n".join(lines) + "\n")
    silent = copy / f"results/runs/{RESNET}.1n2g/r1/rank1.log"
    silent.write_text("")
    garbage = copy / f"results/runs/{RESNET}.1n2g/r2/manifest.json"
    garbage.write_text("{ not json")
    assert "run_cell" not in planned_jobs(copy, "--config", "suite=suite.yaml")
    snakemake(copy, "--cores", "2", "--config", "suite=suite.yaml")
    edited = run_row(copy, f"{RESNET}.1n1g", 2)
    assert edited.status == "parse_error"
    assert f"rank0.log:{bad + 1}: unreadable step line" in edited.status_detail
    half = run_row(copy, f"{RESNET}.1n2g", 1)
    assert half.status == "parse_error" and pd.isna(half.throughput_samples_per_s)
    assert f"{silent.relative_to(copy)}: no step records in this rank's log" in half.status_detail
    broken = run_row(copy, f"{RESNET}.1n2g", 2)
    assert broken.status == "parse_error" and "manifest is not valid JSON" in broken.status_detail
    cells = table(copy, "cells.tsv").set_index("cell_id")
    assert cells.loc[f"{RESNET}.1n1g", "runs_ok"] == 1  # the other repeat's figure is kept
    assert cells.loc[f"{RESNET}.1n2g", "status"] == "parse_error"
    assert (copy / "results/report/report.zh.html").exists()


def test_a_run_that_timed_out_is_redone_when_the_limit_grows_and_not_when_it_shrinks(tmp_path):
    """Review: a run that timed out under a 0.3 s limit stayed `timeout` after time_limit_min
    grew (only the plan and the report were remade, stating the new limit beside it)."""
    config = tiny_suite() | {"repeats": 1, "window": {"warmup": 1, "measure": 2}}
    config["cases"][0]["layouts"] = ["1n1g"]
    write_suite(tmp_path, config | {"time_limit_min": 0.005})
    snakemake(tmp_path, "--cores", "2", "--config", "suite=suite.yaml")
    assert run_row(tmp_path, f"{RESNET}.1n1g", 1).status == "timeout"
    write_suite(tmp_path, config | {"time_limit_min": 3})
    jobs = planned_jobs(tmp_path, "--config", "suite=suite.yaml")
    assert jobs["run_cell"] == [f"cell={RESNET}.1n1g, repeat=1"]
    snakemake(tmp_path, "--cores", "2", "--config", "suite=suite.yaml")
    assert run_row(tmp_path, f"{RESNET}.1n1g", 1).status == "ok"
    write_suite(tmp_path, config | {"time_limit_min": 2})  # an ok run stands
    assert "run_cell" not in planned_jobs(tmp_path, "--config", "suite=suite.yaml")


def test_an_interrupted_rerun_of_a_changed_cell_is_redone_next_time(tmp_path):
    """The changed cell is the only job: interrupted, it leaves no manifest; the next invocation
    redoes it instead of reporting the old measurement as up to date."""
    config = tiny_suite()
    config["repeats"] = 1
    config["cases"][0]["layouts"] = ["1n1g"]
    write_suite(tmp_path, config)
    snakemake(tmp_path, "--cores", "2", "--config", "suite=suite.yaml")
    config["cases"][0]["options"]["image_size"] = 24
    config["window"]["measure"] = 4000  # interrupted mid-run, even if this process is starved
    write_suite(tmp_path, config)
    run_dir = tmp_path / f"results/runs/{RESNET}.1n1g/r1"
    # the rerun has started once the old manifest is gone and the new run logs steps (on a loaded
    # machine the old log outlives the manifest for seconds: a signal then came before the job)
    interrupt_once(
        tmp_path,
        lambda since: (
            not (run_dir / "manifest.json").exists() and _new_steps(run_dir / "rank0.log", since)
        ),
    )
    assert not (run_dir / "manifest.json").exists()
    jobs = planned_jobs(tmp_path, "--config", "suite=suite.yaml")
    assert jobs["run_cell"] == [f"cell={RESNET}.1n1g, repeat=1"]
    config["window"]["measure"] = 5
    write_suite(tmp_path, config)
    snakemake(tmp_path, "--cores", "2", "--config", "suite=suite.yaml")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["measure"]["options"]["image_size"] == 24
    assert run_row(tmp_path, f"{RESNET}.1n1g", 1).status == "ok"


def test_an_interrupted_rerun_among_other_runs_leaves_no_table_or_report_of_its_old_figure(copy):
    """Issue 20.5: Ctrl-C while a changed cell reruns, with other runs waiting around it, left the
    tables and the report showing the old figure as ok. A run being redone takes the tables and
    reports that show its old figure away when it starts; the next invocation remakes them."""
    config = tiny_suite()
    config["cases"][0]["options"]["image_size"] = 24
    config["window"]["measure"] = 4000  # interrupted mid-run, even if this process is starved
    write_suite(copy, config)
    interrupt_once(
        copy,
        lambda since: any(
            _new_steps(log, since) for log in copy.glob("results/runs/*/r*/rank0.log")
        ),
    )
    results = copy / "results"
    assert (
        not (results / "tables/runs.tsv").exists() and not (results / "tables/cells.tsv").exists()
    )
    assert not list((results / "report").glob("report.*"))
    jobs = planned_jobs(copy, "--config", "suite=suite.yaml")
    assert len(jobs["run_cell"]) == 4 and {"tables", "report"} <= set(jobs)


def interrupt_once(workdir: Path, started) -> None:
    """Run the workflow in `workdir` and Ctrl-C it (SIGINT to its process group, as a terminal
    does) once `started(since_ns)` says the run to interrupt is under way."""
    since = time.time_ns()
    cmd = [
        *SNAKEMAKE,
        "-s",
        str(ROOT / "Snakefile"),
        "--cores",
        "2",
        "--config",
        "suite=suite.yaml",
    ]
    proc = subprocess.Popen(
        cmd,
        cwd=workdir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.time() + 300
        while not started(since):
            assert time.time() < deadline and proc.poll() is None, "the rerun never started"
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def _text(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def _new_steps(log: Path, since_ns: int) -> bool:
    try:
        return log.stat().st_mtime_ns > since_ns and "dlperf-step" in _text(log)
    except FileNotFoundError:
        return False


def test_files_follow_the_umask(measured):
    mask = os.umask(0)
    os.umask(mask)
    expected = 0o666 & ~mask
    for path in (
        measured / f"results/runs/{RESNET}.1n2g/r1/manifest.json",
        measured / f"results/json/{RESNET}.1n2g/r1.json",
        measured / "results/report/report.en.html",
        measured / "results/tables/runs.tsv",
    ):
        assert path.stat().st_mode & 0o777 == expected, path
