"""`dlperf plan`'s durations: measured, scaled, limit, from the runs table; bad tables."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlperf.config import validate
from dlperf.paths import MaxBatchPaths
from dlperf.plan.durations import read_runs
from dlperf.plan.jobs import PlanError
from dlperf.plan.maxbatch import Probe, SearchResult
from dlperf.plan.plan import layout_rows, make_plan, plan_text


def write_runs(results: Path, rows: list[dict]) -> None:
    path = results / "tables" / "runs.tsv"
    path.parent.mkdir(parents=True)
    header = ["cell_id", "status", "submitted_at", "started_at", "noticed_at", "workload_wall_s"]
    header += ["batch_size_resolved"] if any("batch_size_resolved" in r for r in rows) else []
    lines = ["\t".join(header)] + ["\t".join(str(r.get(h, "")) for h in header) for r in rows]
    path.write_text("\n".join(lines) + "\n")


def _resnet50_suite(batch_sizes: list) -> dict:
    """One PyTorch ResNet-50 case on 1n1g, one repeat, a 30-minute limit."""
    return validate(
        {"repeats": 1, "time_limit_min": 30,
         "cases": [{"framework": "pytorch", "model": "resnet50", "batch_size": batch_sizes, "layouts": ["1n1g"]}]}
    )  # fmt: skip


def test_a_runs_time_in_the_queue_is_not_its_wall_time(tmp_path):
    """Review: after a Slurm campaign (64 jobs submitted at once, most queued for hours behind
    the campaign's own) each run was planned at 7,505 s though it ran 300 s: its wall time was
    noticed - submitted. It is noticed - started, where the table has the start."""
    t0, cell = 1_700_000_000.0, "pytorch.resnet50.fp32.noxla.b2.1n1g"
    row = {"cell_id": cell, "status": "ok", "submitted_at": t0, "noticed_at": t0 + 7505}
    write_runs(tmp_path, [row | {"started_at": t0 + 7200, "workload_wall_s": 290}])
    (run,) = read_runs(tmp_path)
    assert run.wall_s == pytest.approx(305)
    never_started = tmp_path / "never"
    write_runs(never_started, [row | {"workload_wall_s": ""}])  # no start: submitted it is
    assert read_runs(never_started)[0].wall_s == pytest.approx(7505)


def test_a_runs_table_with_rows_but_no_wall_times_is_an_error_naming_it(tmp_path):
    """Not silently 'no runs measured': its rows would plan every cell at the time limit."""
    path = tmp_path / "tables" / "runs.tsv"
    path.parent.mkdir()
    path.write_text("cell\tthroughput\npytorch.resnet50.fp32.noxla.b2.1n1g\t10\n")
    with pytest.raises(PlanError, match=rf"{path}: rows without the column\(s\) cell_id, status"):
        read_runs(tmp_path)
    path.write_text("\n")  # the tables of a suite with no runs yet
    assert read_runs(tmp_path) == []


def test_duration_sources_measured_scaled_limit(tmp_path):
    config = validate(
        {
            "repeats": 3,
            "time_limit_min": 30,
            "cases": [
                {"framework": "pytorch", "model": "resnet50", "batch_size": [4, 8, 400], "layouts": ["1n1g"]},
                {"framework": "pytorch", "model": "bert_base", "batch_size": [4], "layouts": ["1n1g"]},
            ],
        }
    )  # fmt: skip
    measured = "pytorch.resnet50.fp32.noxla.b4.1n1g"
    t0 = 1_700_000_000.0
    write_runs(
        tmp_path,
        [  # ok runs: walls 100, 120, 200 s; workloads 80, 100, 180 s; the failed run is left out
            {"cell_id": measured, "status": "ok", "submitted_at": t0, "noticed_at": t0 + 100, "workload_wall_s": 80},
            {"cell_id": measured, "status": "ok", "submitted_at": t0, "noticed_at": t0 + 120, "workload_wall_s": 100},
            {"cell_id": measured, "status": "ok", "submitted_at": t0, "noticed_at": t0 + 200, "workload_wall_s": 180},
            {"cell_id": measured, "status": "failed", "submitted_at": t0, "noticed_at": t0 + 5, "workload_wall_s": 1},
        ],
    )  # fmt: skip
    plan = make_plan(config, tmp_path, nodes=1)
    cells = {c.cell_id: c for c in plan.cells}
    assert (cells[measured].duration_source, cells[measured].wall_s) == ("measured", 120)
    scaled = cells["pytorch.resnet50.fp32.noxla.b8.1n1g"]
    assert scaled.duration_source == "scaled"
    assert scaled.wall_s == 20 + 100 * 8 / 4  # start-up 120 - 100, workload 100 s x 8/4
    assert measured in scaled.basis
    capped = cells["pytorch.resnet50.fp32.noxla.b400.1n1g"]  # 100 s x 100 > 30 min: stopped
    assert (capped.duration_source, capped.wall_s) == ("scaled", 20 + 1800)
    other = cells["pytorch.bert_base.fp32.noxla.b4.1n1g"]  # no measured bert_base cell
    assert (other.duration_source, other.wall_s) == ("limit", 1800)
    total = {row["layout"]: row for row in layout_rows(plan)}["total"]
    assert [total[k] for k in ("runs", "measured", "scaled", "limit")] == [12, 3, 6, 3]
    text = plan_text(plan)
    assert "duration_source" in text and "batch per device" in text


def test_a_max_reference_is_scaled_by_the_batch_its_runs_trained(tmp_path):
    """Review: a `batch_size: max` reference whose search found 64 (max_batch_size says 256)
    was scaled by 256: its b128 neighbour was planned at 20 + 100 x 128/256 = 70 s, though
    it trains twice the reference's samples (220 s)."""
    config = _resnet50_suite(["max", 128])
    t0, reference = 1_700_000_000.0, "pytorch.resnet50.fp32.noxla.bmax.1n1g"
    row = {"cell_id": reference, "status": "ok", "submitted_at": t0, "workload_wall_s": 100}
    write_runs(tmp_path, [row | {"noticed_at": t0 + 120, "batch_size_resolved": 64}])
    cells = {c.cell_id: c for c in make_plan(config, tmp_path, nodes=1).cells}
    scaled = cells["pytorch.resnet50.fp32.noxla.b128.1n1g"]
    assert (scaled.duration_source, scaled.wall_s) == ("scaled", 20 + 100 * 128 / 64)
    assert scaled.basis == f"from {reference}: 20 s + 100 s x 128/64"
    write_runs(tmp_path / "no-column", [row | {"noticed_at": t0 + 120}])  # an older table
    cells = {c.cell_id: c for c in make_plan(config, tmp_path / "no-column", nodes=1).cells}
    assert cells["pytorch.resnet50.fp32.noxla.b128.1n1g"].wall_s == 20 + 100 * 128 / 256


def test_an_unmeasured_max_cell_is_scaled_by_what_its_search_found(tmp_path):
    """Review: a `max` cell whose search had found 64 but whose runs had not run yet was planned
    by max_batch_size (256): 20 + 100 x 256/128 = 220 s for runs that train 64 a step."""
    import json

    config = _resnet50_suite(["max", 128])
    t0, searched = 1_700_000_000.0, "pytorch.resnet50.fp32.noxla.bmax.1n1g"
    reference = "pytorch.resnet50.fp32.noxla.b128.1n1g"
    row = {"cell_id": reference, "status": "ok", "submitted_at": t0, "workload_wall_s": 100}
    write_runs(tmp_path, [row | {"noticed_at": t0 + 120, "batch_size_resolved": 128}])
    planned = {c.cell_id: c for c in make_plan(config, tmp_path, nodes=1).cells}[searched]
    assert planned.wall_s == 20 + 100 * 256 / 128  # not searched yet: max_batch_size
    result = SearchResult(
        "ok", 64, "64 fits, 128 runs out of memory", [Probe(64, "ok", "", "m", True)]
    )
    path = MaxBatchPaths(searched, tmp_path).result
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"cell": {"cell_id": searched}} | result.to_dict()))
    planned = {c.cell_id: c for c in make_plan(config, tmp_path, nodes=1).cells}[searched]
    assert (planned.duration_source, planned.wall_s) == ("scaled", 20 + 100 * 64 / 128)
    assert planned.basis == f"from {reference}: 20 s + 100 s x 64/128"


def test_a_failed_runs_time_is_no_reference_for_another_cell(tmp_path):
    """Review: a cell whose runs all failed at start-up (4 and 6 s) was the reference of its
    neighbour, planned at 10 s 'scaled' (0 s + 5 s x 8/4) though it will train for minutes; and
    its own 5 s read 'median of 2 runs' as if they had trained."""
    config = _resnet50_suite([4, 8, 16])
    t0, failed, ok = (
        1_700_000_000.0,
        "pytorch.resnet50.fp32.noxla.b4.1n1g",
        "pytorch.resnet50.fp32.noxla.b16.1n1g",
    )
    row = {"submitted_at": t0, "workload_wall_s": ""}
    write_runs(
        tmp_path,
        [row | {"cell_id": failed, "status": "failed", "noticed_at": t0 + 4},
         row | {"cell_id": failed, "status": "oom", "noticed_at": t0 + 6},
         row | {"cell_id": ok, "status": "ok", "noticed_at": t0 + 160, "workload_wall_s": 140}],
    )  # fmt: skip
    cells = {c.cell_id: c for c in make_plan(config, tmp_path, nodes=1).cells}
    assert (cells[failed].duration_source, cells[failed].wall_s) == ("measured", 5)
    assert cells[failed].basis == "median of 2 runs, none ok (failed, oom)"
    between = cells["pytorch.resnet50.fp32.noxla.b8.1n1g"]  # b4 is likelier, but never trained
    assert (between.duration_source, between.wall_s) == ("scaled", 20 + 140 * 8 / 16)
    assert ok in between.basis
    write_runs(
        tmp_path / "only-failed",
        [row | {"cell_id": failed, "status": "failed", "noticed_at": t0 + 4}],
    )
    cells = {c.cell_id: c for c in make_plan(config, tmp_path / "only-failed", nodes=1).cells}
    assert (cells[ok].duration_source, cells[ok].wall_s) == ("limit", 1800)


def test_runs_that_timed_out_under_a_shorter_limit_are_planned_at_the_suites(tmp_path):
    """Review: runs killed at a 5-minute limit were planned at their 5 minutes ('measured')
    after time_limit_min was raised to 30, though the workflow redoes them and each may now run
    30 minutes: the makespan read a sixth of what it may be."""
    config = _resnet50_suite([4, 8])
    t0, short, long = (
        1_700_000_000.0,
        "pytorch.resnet50.fp32.noxla.b4.1n1g",
        "pytorch.resnet50.fp32.noxla.b8.1n1g",
    )
    row = {"submitted_at": t0, "workload_wall_s": "", "status": "timeout"}
    write_runs(tmp_path, [row | {"cell_id": short, "noticed_at": t0 + 305},
                          row | {"cell_id": long, "noticed_at": t0 + 1830}])  # fmt: skip
    plan = make_plan(config, tmp_path, nodes=1)
    cells = {c.cell_id: c for c in plan.cells}
    assert (cells[short].duration_source, cells[short].wall_s) == ("limit", 1800)
    assert (
        cells[short].basis == "time limit 30 min; median of 1 runs, none ok (timeout) after 305 s"
    )
    assert (cells[long].duration_source, cells[long].wall_s) == ("measured", 1830)  # the limit's


def test_an_infinite_time_in_a_runs_table_is_no_duration(tmp_path):
    """Review: noticed_at = inf in a hand-edited runs table crashed `dlperf plan` and every
    Snakemake call (OverflowError in the planner)."""
    config = _resnet50_suite([4])
    cell, t0 = "pytorch.resnet50.fp32.noxla.b4.1n1g", 1_700_000_000.0
    row = {"cell_id": cell, "status": "ok", "submitted_at": t0, "workload_wall_s": 80}
    write_runs(tmp_path, [row | {"noticed_at": float("inf")}, row | {"noticed_at": t0 + 100}])
    (planned,) = make_plan(config, tmp_path, nodes=1).cells
    assert (planned.duration_source, planned.wall_s) == ("measured", 100)


def test_a_workload_longer_than_the_time_limit_now_is_planned_at_the_limit(tmp_path):
    """Review: with time_limit_min lowered to 30, a cell whose ok runs trained 1900 s (100 s
    start-up) was planned at 2000 s 'measured', though the limit now stops its workload at
    1800 s; and its b400 neighbour, scaled from it, was capped at 1800 s, the start-up forgotten
    (the limit stops the workload, not the start-up): 100 times the work planned shorter."""
    config = _resnet50_suite([4, 400, 8])
    t0, long, timed_out = (
        1_700_000_000.0,
        "pytorch.resnet50.fp32.noxla.b4.1n1g",
        "pytorch.resnet50.fp32.noxla.b8.1n1g",
    )
    row = {"submitted_at": t0, "started_at": t0}
    write_runs(
        tmp_path,
        [row | {"cell_id": long, "status": "ok", "noticed_at": t0 + 2000, "workload_wall_s": 1900},
         row | {"cell_id": timed_out, "status": "timeout", "noticed_at": t0 + 690, "workload_wall_s": 600}],
    )  # fmt: skip
    cells = {c.cell_id: c for c in make_plan(config, tmp_path, nodes=1).cells}
    assert (cells[long].duration_source, cells[long].wall_s) == ("limit", 100 + 1800)
    assert cells[long].basis == (
        "time limit 30 min after 100 s start-up; median of 1 runs trained 1900 s, which the "
        "limit cuts short"
    )
    scaled = cells["pytorch.resnet50.fp32.noxla.b400.1n1g"]
    assert (scaled.duration_source, scaled.wall_s) == ("scaled", 100 + 1800)
    assert scaled.basis == (
        f"from {long}: 100 s + 1900 s x 400/4, the workload capped at the time limit (30 min)"
    )
    # timed out at a 10-minute limit after 90 s of start-up: redone, it may train 30 minutes
    assert (cells[timed_out].duration_source, cells[timed_out].wall_s) == ("limit", 90 + 1800)
    assert cells[timed_out].basis == (
        "time limit 30 min after 90 s start-up; median of 1 runs, none ok (timeout) after 690 s"
    )
