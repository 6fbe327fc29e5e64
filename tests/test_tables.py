"""A run's row is right or visibly not ok: silent ranks, unreadable logs and manifests."""

from __future__ import annotations

import gzip
import json
import math
import tracemalloc
from pathlib import Path

import pandas as pd
import pytest

from dlperf import logline
from dlperf.i18n import english
from dlperf.matrix import Cell, CellSpec
from dlperf.measure import runs as runs_module
from dlperf.measure.runs import read_run, runs_table
from dlperf.measure.stats import Window
from dlperf.measure.tables import cells_table, planned_cells
from dlperf.measure.variance import VarianceSettings
from dlperf.parse.builtin import parse_builtin_logs
from dlperf.parse.facts import parse_facts
from dlperf.paths import MaxBatchPaths, RunPaths

CELL = Cell.parse("pytorch.resnet50.fp32.noxla.b4.1n2g")
WINDOW = Window(warmup=2, measure=5)


def rank_log(
    rank: int, steps: int = 9, step_s: float = 0.1, samples: int = 4, losses: dict | None = None
) -> str:
    """A rank's log; `losses`: step -> the loss its line logs (none logged where not given)."""
    lines = [logline.format_line(logline.CONFIG, model="resnet50", model_config="{}")]
    for step in range(1, steps + 1):
        start, end = 100 + (step - 1) * step_s, 100 + step * step_s
        loss = {"loss": (losses or {})[step]} if step in (losses or {}) else {}
        lines.append(
            logline.format_line(
                logline.STEP,
                rank=rank,
                step=step,
                samples=samples,
                start=f"{start:.6f}",
                end=f"{end:.6f}",
                **loss,
            )
        )
    return "\n".join(lines) + "\n"


def write_run(root: Path, logs: dict[str, str | bytes], repeat: int = 1) -> Path:
    """A finished run as the submitter leaves it: the ranks' logs and an ok manifest."""
    paths = RunPaths(CELL.id, repeat, root)
    paths.dir.mkdir(parents=True)
    for name, text in logs.items():
        target = paths.dir / name
        target.write_bytes(text if isinstance(text, bytes) else text.encode())
    manifest = {
        "cell": CELL.key(),
        "repeat": repeat,
        "status": "ok",
        "status_detail": "",
        "adapter": {"name": "pytorch"},
        "measure": {"options": {}},
        "backend": "local",
        "tasks": [{"task": i, "log": name} for i, name in enumerate(logs)],
    }
    paths.manifest.write_text(json.dumps(manifest))
    return paths.manifest


def test_both_ranks_reporting_give_the_whole_throughput(tmp_path):
    row = read_run(
        write_run(tmp_path, {"rank0.log": rank_log(0), "rank1.log": rank_log(1)}), WINDOW
    ).row
    assert row["status"] == "ok" and row["ranks"] == 2
    assert row["throughput_samples_per_s"] == pytest.approx(2 * 4 / 0.1)


def test_a_silent_rank_is_a_parse_error_naming_its_log(tmp_path):
    """Half the real throughput must never be shown as ok."""
    manifest = write_run(tmp_path, {"rank0.log": rank_log(0), "rank1.log": ""})
    row = read_run(manifest, WINDOW).row
    assert row["status"] == "parse_error"
    assert (
        f"{manifest.parent / 'rank1.log'}: no step records in this rank's log"
        in row["status_detail"]
    )
    assert "1 of 2 launched ranks" in row["status_detail"]
    assert row.get("throughput_samples_per_s") is None


def test_a_rank_left_out_of_the_manifest_is_a_parse_error_naming_it(tmp_path):
    """A 1n2g run whose record lists rank 0's task only would be measured on rank 0 alone: half
    the throughput, shown as ok. The tasks must be the layout's."""
    manifest = write_run(tmp_path, {"rank0.log": rank_log(0), "rank1.log": rank_log(1)})
    data = json.loads(manifest.read_text())
    data["tasks"] = data["tasks"][:1]
    manifest.write_text(json.dumps(data))
    row = read_run(manifest, WINDOW).row
    assert row["status"] == "parse_error"
    assert row["status_detail"].startswith(f"{manifest}: the manifest lists the tasks of ranks [0]")
    assert "a 1n2g run launches ranks [0, 1]" in row["status_detail"]
    assert row.get("throughput_samples_per_s") is None


def test_a_manifest_value_no_check_foresaw_is_that_runs_parse_error_not_a_crash(tmp_path):
    """A value of the right type that still cannot be read (threads 'one') fails deep in a
    property: the run is a parse_error naming the manifest; the tables of the others stand."""
    good = write_run(tmp_path, {"rank0.log": rank_log(0), "rank1.log": rank_log(1)}, repeat=1)
    bad = write_run(tmp_path, {"rank0.log": rank_log(0), "rank1.log": rank_log(1)}, repeat=2)
    data = json.loads(bad.read_text())
    data["measure"] = {"options": {"threads": "one"}, "device": "cpu"}
    bad.write_text(json.dumps(data))
    runs, _steps = runs_table([good, bad], WINDOW, tmp_path / "json")
    by_repeat = runs.set_index("repeat")
    assert by_repeat.loc[1, "status"] == "ok"
    assert by_repeat.loc[2, "status"] == "parse_error"
    assert by_repeat.loc[2, "status_detail"].startswith(
        f"{bad}: the manifest holds a value dlperf cannot read (ValueError("
    )


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda lines, i: lines.__setitem__(i, "W1125 warning: " + lines[i]), "run into by other"),
        (lambda lines, i: lines.__setitem__(i, "\ufeff" + lines[i]), "run into by other"),
        (lambda lines, i: lines.pop(i), "step 6 follows its step 4"),
        (lambda lines, i: lines.insert(i, lines[i - 1]), "step 4 follows its step 4"),
    ],
)
def test_a_lost_or_repeated_step_line_is_a_parse_error_naming_it(tmp_path, edit, message):
    """A step line lost to other output run into it (or deleted, or repeated) would shift the
    window over other steps: 17% off, shown as ok."""
    lines = rank_log(0).splitlines()
    edit(lines, 5)  # line 6: step 5, inside the window
    manifest = write_run(tmp_path, {"rank0.log": "\n".join(lines) + "\n", "rank1.log": rank_log(1)})
    row = read_run(manifest, WINDOW).row
    assert row["status"] == "parse_error"
    assert f"{manifest.parent / 'rank0.log'}:" in row["status_detail"]
    assert message in row["status_detail"]


@pytest.mark.parametrize("began, status", [(99.5, "ok"), (1000.0, "parse_error")])
def test_steps_stamped_outside_their_tasks_run_are_a_parse_error_naming_the_log(
    tmp_path, began, status
):
    """Another run's log copied in with the record's fingerprint recomputed still parses: its
    steps are stamped outside the run the harness timed (its window: 100.0 to 100.7)."""
    manifest = write_run(tmp_path, {"rank0.log": rank_log(0), "rank1.log": rank_log(1)})
    data = json.loads(manifest.read_text())
    for task in data["tasks"]:
        task |= {"started_at": began, "ended_at": began + 2.0}
    manifest.write_text(json.dumps(data))
    row = read_run(manifest, WINDOW).row
    assert row["status"] == status
    if status == "parse_error":
        assert row["status_detail"].startswith(
            f"{manifest.parent / 'rank0.log'}: this log's steps are stamped 100.000000 to "
            "100.700000, outside its task's run (1000.000000 to 1002.000000"
        )


@pytest.mark.parametrize("samples", ["2000", "4 samples=400", "4_0"])
def test_a_step_of_another_batch_size_than_trained_is_a_parse_error(tmp_path, samples):
    """`samples=` is the rank's batch (b4 here): a line saying otherwise (edited, a key given
    twice, digits Python reads with an underscore) would scale the throughput."""
    log = rank_log(0).replace("step=5 samples=4 ", f"step=5 samples={samples} ")
    manifest = write_run(tmp_path, {"rank0.log": log, "rank1.log": rank_log(1)})
    row = read_run(manifest, WINDOW).row
    assert row["status"] == "parse_error"
    assert f"{manifest.parent / 'rank0.log'}:6: step 5 of rank 0 counts" in row["status_detail"]
    assert "but the rank trained batches of 4" in row["status_detail"]


def test_a_log_of_random_bytes_names_the_file(tmp_path):
    noise = bytes(range(256)) * 40
    manifest = write_run(tmp_path, {"rank0.log": noise, "rank1.log": noise})
    row = read_run(manifest, WINDOW).row
    assert row["status"] == "parse_error"
    assert f"no step records in {manifest.parent / 'rank0.log'}, " in row["status_detail"]


def test_a_garbage_manifest_is_that_runs_parse_error_and_the_others_stay(tmp_path):
    good = write_run(tmp_path, {"rank0.log": rank_log(0), "rank1.log": rank_log(1)}, repeat=1)
    bad = write_run(tmp_path, {"rank0.log": rank_log(0), "rank1.log": rank_log(1)}, repeat=2)
    bad.write_text('{"cell": {"cell_id": \n garbage')
    runs, _steps = runs_table([good, bad], WINDOW, tmp_path / "json")
    by_repeat = runs.set_index("repeat")
    assert by_repeat.loc[1, "status"] == "ok"
    assert by_repeat.loc[2, "status"] == "parse_error"
    assert by_repeat.loc[2, "cell_id"] == CELL.id
    assert f"{bad}:2: the manifest is not valid JSON" in by_repeat.loc[2, "status_detail"]
    assert "delete it to redo the run" in by_repeat.loc[2, "status_detail"]


def test_runs_read_by_several_processes_give_the_same_tables_and_jsons(tmp_path, monkeypatch):
    """Three tasks of two runs on two processes: the same rows in the manifests' order (a bad run
    among them), the same steps, the same JSON files, as one process gives."""
    monkeypatch.setattr(runs_module, "RUNS_PER_CHUNK", 2)
    manifests = [
        write_run(tmp_path, {"rank0.log": rank_log(0, step_s=0.1 * r), "rank1.log": rank_log(1)}, r)
        for r in range(1, 7)
    ]
    manifests[3].write_text("garbage")
    one = runs_table(manifests, WINDOW, tmp_path / "one")
    two = runs_table(manifests, WINDOW, tmp_path / "two", workers=2)
    pd.testing.assert_frame_equal(one[0], two[0])
    pd.testing.assert_frame_equal(one[1], two[1])
    assert list(two[0]["status"]) == ["ok"] * 3 + ["parse_error"] + ["ok"] * 2
    files = sorted(p.relative_to(tmp_path / "one") for p in (tmp_path / "one").rglob("*.json"))
    assert len(files) == 5
    for name in files:
        assert (tmp_path / "one" / name).read_text() == (tmp_path / "two" / name).read_text()


def test_one_run_at_4_1_beside_two_at_57_is_flagged_and_kept_in_the_median(tmp_path):
    """Two ranks x 4 samples per step: step times of 8/57 s and 8/4.1 s give 57 and 4.1 samples/s."""
    seconds = {1: 8 / 57.0, 2: 8 / 4.1, 3: 8 / 57.0}
    manifests = [
        write_run(
            tmp_path,
            {"rank0.log": rank_log(0, step_s=s), "rank1.log": rank_log(1, step_s=s)},
            repeat=k,
        )
        for k, s in seconds.items()
    ]
    variance = VarianceSettings(outlier_mads=3, max_cv=0.10)
    runs, _steps = runs_table(manifests, WINDOW, variance=variance)
    by_repeat = runs.set_index("repeat")
    assert by_repeat["throughput_samples_per_s"].round(3).tolist() == [57.0, 4.1, 57.0]
    assert by_repeat["outlier"].tolist() == [False, True, False]
    assert by_repeat.loc[2, "outlier_detail"].startswith("4.1 vs median 57.0 samples/s")
    scale = float(by_repeat.loc[2, "outlier_detail"].rsplit("scale ", 1)[1])
    assert by_repeat["outlier_z"].tolist() == pytest.approx([0.0, (4.1 - 57.0) / scale, 0.0], 0.02)
    assert by_repeat["batch_size_resolved"].tolist() == [4, 4, 4]
    planned = planned_cells([CellSpec(CELL, {})])
    cell = cells_table(runs, planned, WINDOW, 3, variance).iloc[0]
    assert cell["throughput_median"] == pytest.approx(57.0, rel=1e-5)  # the outlier stays in
    assert cell["runs_ok"] == 3 and cell["outlier_runs"] == 1 and cell["unstable"]
    assert cell["flags"] == "unstable: CV 77.6% > 10%; outlier r2: 4.1 vs median 57.0 samples/s"
    assert cell["batch_size_resolved"] == 4


def test_a_nan_or_inf_loss_in_the_window_flags_the_run_and_its_cell(tmp_path):
    """Review: a run whose every step logged loss=nan was an ok figure with no flag, though its
    steps may not have trained (fp16 steps a grad scaler skips; a diverged run). The window's
    non-finite losses are counted per run (a step once, whichever of its ranks logged one) and
    flag the cell; a warm-up step's (WINDOW skips 2) and a finite loss do not count, and a log
    with no loss reads nan."""
    fine = {step: 6.9 for step in range(1, 10)}
    diverged = fine | {1: "nan", 4: "nan", 5: "inf", 6: "-inf"}  # step 1 is warm-up
    manifests = [
        write_run(tmp_path, {"rank0.log": rank_log(0, losses=fine), "rank1.log": rank_log(1)}, 1),
        write_run(
            tmp_path,
            {
                "rank0.log": rank_log(0, losses=diverged),
                "rank1.log": rank_log(1, losses={4: "nan"}),
            },
            2,
        ),
        write_run(tmp_path, {"rank0.log": rank_log(0), "rank1.log": rank_log(1)}, 3),
    ]
    runs, _ = runs_table(manifests, WINDOW)
    assert runs["status"].tolist() == ["ok"] * 3
    assert runs["nonfinite_loss_steps"].tolist()[:2] == [0, 3]  # steps 4, 5 and 6
    assert pd.isna(runs.loc[2, "nonfinite_loss_steps"])
    cell = cells_table(runs, planned_cells([CellSpec(CELL, {})]), WINDOW, 3).iloc[0]
    assert cell["flags"] == (
        "loss nan or inf in 3 window steps (r2): steps that may not have trained"
    )


def test_a_step_whose_every_rank_logged_a_nan_loss_counts_once(tmp_path):
    """Review: the non-finite losses of a run were added up over its ranks, so a diverged 1n2g
    run (every step nan on both ranks) read 'loss nan or inf in 10 window steps' of a 5-step
    window. A window step counts once, whichever and however many of its ranks logged one."""
    nan = dict.fromkeys(range(1, 10), "nan")
    manifest = write_run(
        tmp_path, {"rank0.log": rank_log(0, losses=nan), "rank1.log": rank_log(1, losses=nan)}
    )
    runs, _ = runs_table([manifest], WINDOW)
    assert runs.loc[0, "nonfinite_loss_steps"] == WINDOW.measure == 5
    cell = cells_table(runs, planned_cells([CellSpec(CELL, {})]), WINDOW, 1).iloc[0]
    assert cell["flags"] == (
        "loss nan or inf in 5 window steps (r1): steps that may not have trained"
    )


def test_an_unreadable_loss_is_a_parse_error_naming_the_line(tmp_path):
    manifest = write_run(
        tmp_path, {"rank0.log": rank_log(0, losses={3: "abc"}), "rank1.log": rank_log(1)}
    )
    row = read_run(manifest, WINDOW).row
    assert row["status"] == "parse_error"
    assert row["status_detail"] == f"{manifest.parent / 'rank0.log'}:4: unreadable loss 'abc'"


def write_max_run(root: Path, cell: Cell, repeat: int, batch: int) -> Path:
    """An ok run of a `max` cell that trained at `batch` (its step lines say so)."""
    paths = RunPaths(cell.id, repeat, root)
    paths.dir.mkdir(parents=True)
    (paths.dir / "rank0.log").write_text(rank_log(0, samples=batch))
    manifest = {
        "cell": cell.key(),
        "repeat": repeat,
        "status": "ok",
        "batch_size_resolved": batch,
        "adapter": {"name": "pytorch"},
        "measure": {"options": {}},
        "tasks": [{"task": 0, "log": "rank0.log"}],
    }
    paths.manifest.write_text(json.dumps(manifest))
    return paths.manifest


def test_a_max_cell_parses_and_reports_the_batch_size_its_search_found(tmp_path):
    cell = Cell.parse("pytorch.resnet50.fp32.noxla.bmax.1n1g")
    runs, _ = runs_table([write_max_run(tmp_path, cell, 1, 48)], WINDOW)
    assert runs.loc[0, "status"] == "ok"
    assert runs.loc[0, "batch_size"] == "max" and runs.loc[0, "batch_size_resolved"] == 48
    assert runs.loc[0, "throughput_samples_per_s"] == pytest.approx(480)  # 48 per 0.1 s
    cells = cells_table(runs, planned_cells([CellSpec(cell, {})]), WINDOW, 1)
    assert cells.loc[0, "batch_size_resolved"] == 48 and cells.loc[0, "flags"] == ""


def test_a_max_run_at_another_value_than_its_search_holds_is_stale_not_pooled(tmp_path):
    """A search result changed after the cell's runs (its mtime kept, so read before the redo):
    the run at the old value is `stale` naming the result, and the cell's median is the runs at
    the value the result holds, alone."""
    cell = Cell.parse("pytorch.resnet50.fp32.noxla.bmax.1n1g")
    result = MaxBatchPaths(cell.id, tmp_path).result
    result.parent.mkdir(parents=True)
    probes = [{"value": 64, "status": "ok", "full_length": True}]
    result.write_text(json.dumps({"status": "ok", "value": 64, "detail": "", "probes": probes}))
    manifests = [write_max_run(tmp_path, cell, 1, 48), write_max_run(tmp_path, cell, 2, 64)]
    runs, _ = runs_table(manifests, WINDOW)
    assert runs["status"].tolist() == ["stale", "ok"]
    assert (
        f"trained at batch_size=48; its search ({result}) now holds 64"
        in runs.loc[0, "status_detail"]
    )
    cells = cells_table(runs, planned_cells([CellSpec(cell, {})]), WINDOW, 2)
    assert cells.loc[0, "throughput_median"] == pytest.approx(640)
    assert cells.loc[0, "batch_size_resolved"] == 64 and cells.loc[0, "flags"] == ""
    assert cells.loc[0, "runs_ok"] == 1


@pytest.mark.parametrize(
    "field,value",
    [("samples", "nan"), ("samples", "1e999"), ("samples", "-4"), ("samples", "0"), ("end", "nan")],
)
def test_an_impossible_step_value_is_that_runs_parse_error_naming_the_line(tmp_path, field, value):
    """Issue 20.8: a non-finite or impossible value never crashes the tables nor gives a figure;
    the other runs keep theirs."""
    good = write_run(tmp_path, {"rank0.log": rank_log(0), "rank1.log": rank_log(1)}, repeat=1)
    lines = rank_log(1).splitlines()
    lines[4] = lines[4].replace(
        f"{field}={logline.parse_line(lines[4])[1][field]}", f"{field}={value}"
    )
    bad = write_run(tmp_path, {"rank0.log": rank_log(0), "rank1.log": "\n".join(lines)}, repeat=2)
    runs, _steps = runs_table([good, bad], WINDOW, tmp_path / "json")
    by_repeat = runs.set_index("repeat")
    assert by_repeat.loc[1, "status"] == "ok"
    assert by_repeat.loc[2, "status"] == "parse_error"
    assert (
        f"{bad.parent / 'rank1.log'}:5: impossible step record" in by_repeat.loc[2, "status_detail"]
    )
    assert pd.isna(by_repeat.loc[2, "throughput_samples_per_s"])


def test_a_log_far_longer_than_its_window_is_read_only_as_far_as_the_window(tmp_path):
    """Issue 20.14: the steps past the window are never read (here garbage there changes
    nothing), the figure is the short log's, facts after the steps are still found, and the steps
    table holds the window's records only."""
    short = write_run(tmp_path, {"rank0.log": rank_log(0), "rank1.log": rank_log(1)}, repeat=1)
    memory = logline.format_line(logline.MEMORY, rank=0, peak_rss_mb=812.5)
    long_logs = {
        f"rank{rank}.log": rank_log(rank, steps=2000) + "dlperf-step rank=x garbage\n" + memory
        for rank in (0, 1)
    }
    long = write_run(tmp_path, long_logs, repeat=2)
    runs, steps = runs_table([short, long], WINDOW, tmp_path / "json")
    by_repeat = runs.set_index("repeat")
    assert list(by_repeat["status"]) == ["ok", "ok"]
    assert by_repeat.loc[2, "throughput_samples_per_s"] == pytest.approx(
        by_repeat.loc[1, "throughput_samples_per_s"]
    )
    assert by_repeat.loc[2, "peak_rss_mib"] == 812.5
    kept = steps[steps["repeat"] == 2].groupby("rank")["step"].max()
    assert kept.to_dict() == {0: WINDOW.warmup + WINDOW.measure, 1: WINDOW.warmup + WINDOW.measure}


def test_parsing_memory_does_not_grow_with_the_log(tmp_path):
    """Issue 20.14: the parse's peak memory for a log 10x longer stays the same (allocations
    counted by tracemalloc, so the machine's load cannot change the figure)."""
    peaks = []
    for steps in (2_000, 20_000):
        log = tmp_path / f"rank0-{steps}.log"
        log.write_text(rank_log(0, steps=steps))
        tracemalloc.start()
        parsed = parse_builtin_logs([log], keep_iterations=WINDOW.warmup + WINDOW.measure)
        facts = parse_facts([log])
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert len(parsed.records) == WINDOW.warmup + WINDOW.measure and not facts.facts
    assert peaks[1] < 1.2 * peaks[0]


def test_a_table_written_aside_is_the_table_and_its_failure_names_the_path(tmp_path):
    from dlperf.measure.tables import write_table, writing_aside

    frame = pd.DataFrame({"cell_id": [CELL.id] * 3, "time_s": [1795500000.123456, 0.1, 2.5e-7]})
    with writing_aside(frame, tmp_path / "aside.tsv.gz"):
        write_table(frame, tmp_path / "here.tsv.gz")
    assert gzip.decompress((tmp_path / "aside.tsv.gz").read_bytes()) == gzip.decompress(
        (tmp_path / "here.tsv.gz").read_bytes()
    )
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(OSError, match=r"file/t.tsv.gz: writing the table failed"):
        with writing_aside(frame, tmp_path / "file" / "t.tsv.gz"):
            pass


def test_stored_tables_keep_every_digit_and_the_planner_reads_their_durations(tmp_path):
    """Issue 20.7: with `%.6g` every epoch time became 1.7955e+09 and a 9.78 s run read 0 s."""
    from dlperf.measure.tables import write_table
    from dlperf.paths import ResultPaths
    from dlperf.plan.durations import read_runs

    t0 = 1795500000.123456
    frame = pd.DataFrame(
        {
            "cell_id": [CELL.id, CELL.id],
            "status": ["ok", "ok"],
            "submitted_at": [t0, t0 + 60.5],
            "noticed_at": [t0 + 9.78, t0 + 71.25],
            "workload_wall_s": [8.123456789, 9.5],
        }
    )
    path = ResultPaths(tmp_path).runs
    path.parent.mkdir(parents=True)
    write_table(frame, path)
    back = pd.read_csv(path, sep="\t")
    assert back[["submitted_at", "noticed_at", "workload_wall_s"]].equals(
        frame[["submitted_at", "noticed_at", "workload_wall_s"]]
    )
    assert [round(run.wall_s, 6) for run in read_runs(tmp_path)] == [9.78, 10.75]


def test_the_planner_reads_a_runs_table_as_utf8_whatever_the_locale(tmp_path):
    """The runs table is UTF-8 (a status detail may quote a log line); read with the csv module,
    it was read in the locale's encoding, and a byte-order mark hid its first column. Times are
    epoch seconds or ISO; a run without a positive wall time is not timed."""
    from dlperf.paths import ResultPaths
    from dlperf.plan.durations import read_runs

    path = ResultPaths(tmp_path).runs
    path.parent.mkdir(parents=True)
    path.write_bytes(
        "\ufeffcell_id\tstatus\tstatus_detail\tsubmitted_at\tnoticed_at\n"
        f"{CELL.id}\tparse_error\tline 3: « 吞吐量 »\t100.0\t112.5\n"
        # ISO times (naive ones are UTC), and rows without a wall time, which are left out
        f"{CELL.id}\tok\t\t2026-11-25T10:00:00\t2026-11-25T10:01:30+00:00\n"
        f"{CELL.id}\tok\t\t\t112.5\n"
        f"{CELL.id}\tok\t\t120.0\t110.0\n".encode()
    )
    assert [(r.cell_id, r.status, r.wall_s) for r in read_runs(tmp_path)] == [
        (CELL.id, "parse_error", 12.5),
        (CELL.id, "ok", 90.0),
    ]


def test_a_rank_log_copied_over_another_is_a_parse_error_naming_it(tmp_path):
    """Issue 20.1: `cp rank0.log rank1.log` gave an ok run at half the real throughput."""
    manifest = write_run(tmp_path, {"rank0.log": rank_log(0), "rank1.log": rank_log(0)})
    row = read_run(manifest, WINDOW).row
    assert row["status"] == "parse_error"
    assert (
        f"{manifest.parent / 'rank1.log'}: this log of rank 1 holds the steps of rank(s) 0"
        in row["status_detail"]
    )
    assert row.get("throughput_samples_per_s") is None


def fingerprinted(manifest: Path) -> Path:
    """The run's manifest with each log's fingerprint, as the submitter records it."""
    from dlperf.launch.taskoutcome import log_fingerprint

    data = json.loads(manifest.read_text())
    for task in data["tasks"]:
        task |= log_fingerprint(manifest.parent / task["log"])
    manifest.write_text(json.dumps(data))
    return manifest


@pytest.mark.parametrize("change", ["another run's log, cp -p", "edited, mtime kept"])
def test_a_log_changed_after_its_run_is_a_parse_error_however_its_mtime_was_kept(tmp_path, change):
    """Issue 20.1: the manifest records each log's size and SHA-256; a log that no longer
    matches (same rank, same mtime) is not this run's measurement."""
    import os
    import shutil

    manifest = fingerprinted(
        write_run(tmp_path, {"rank0.log": rank_log(0), "rank1.log": rank_log(1)})
    )
    assert read_run(manifest, WINDOW).row["status"] == "ok"
    target = manifest.parent / "rank1.log"
    kept = target.stat()
    if change.startswith("another"):
        slower = tmp_path / "other" / "rank1.log"
        slower.parent.mkdir()
        slower.write_text(rank_log(1, step_s=0.2))
        shutil.copy2(slower, target)  # cp -p
    else:  # the same steps, one byte more: a log that parses, but not as its run left it
        target.write_text(target.read_text() + "\n")
    os.utime(target, ns=(kept.st_atime_ns, kept.st_mtime_ns))
    row = read_run(manifest, WINDOW).row
    assert row["status"] == "parse_error"
    assert f"{target}: this log is not the one its run wrote" in row["status_detail"]
    assert row.get("throughput_samples_per_s") is None


@pytest.mark.parametrize("other", ["another cell", "another repeat"])
def test_a_manifest_of_another_run_is_a_parse_error_and_moves_nothing(tmp_path, other):
    """Issue 20.3: a copied manifest moved its measurement into this folder's cell."""
    first = write_run(tmp_path, {"rank0.log": rank_log(0), "rank1.log": rank_log(1)}, repeat=1)
    second = write_run(tmp_path, {"rank0.log": rank_log(0), "rank1.log": rank_log(1)}, repeat=2)
    if other == "another repeat":
        second.write_text(first.read_text())  # repeat 1's manifest copied as repeat 2's
        stated = f"{CELL.id} r1"
    else:
        data = json.loads(second.read_text())
        data["cell"] = Cell.parse("pytorch.resnet50.fp32.noxla.b8.1n2g").key()
        second.write_text(json.dumps(data))
        stated = "pytorch.resnet50.fp32.noxla.b8.1n2g r2"
    runs, _steps = runs_table([first, second], WINDOW, tmp_path / "json")
    assert runs["cell_id"].tolist() == [CELL.id, CELL.id]
    assert runs["repeat"].tolist() == [1, 2]
    assert runs["status"].tolist() == ["ok", "parse_error"]
    detail = runs["status_detail"].iloc[1]
    assert f"{second}: the manifest is of {stated}, not of the run of its folder" in detail
    assert sorted(p.name for p in (tmp_path / "json" / CELL.id).iterdir()) == ["r1.json"]


def test_a_clock_step_inside_the_window_is_a_parse_error_not_a_figure(tmp_path):
    """Issue 20.2: a one-hour clock step gave an ok run at 0.002 samples/s beside a recorded
    workload wall time of 9 s."""
    lines = rank_log(1).splitlines()
    jumped = []
    for line in lines:
        kind, fields = logline.parse_line(line) or ("", {})
        if kind == logline.STEP and int(fields["step"]) >= 5:
            fields = fields | {k: f"{float(fields[k]) + 3600:.6f}" for k in ("start", "end")}
            line = logline.format_line(logline.STEP, **fields)
        jumped.append(line)
    manifest = write_run(
        tmp_path, {"rank0.log": rank_log(0), "rank1.log": "\n".join(jumped) + "\n"}
    )
    data = json.loads(manifest.read_text())
    for task in data["tasks"]:
        task["workload_wall_s"] = 9.0
    manifest.write_text(json.dumps(data))
    row = read_run(manifest, WINDOW).row
    assert row["status"] == "parse_error"
    assert (
        "but the workload ran 9 s (monotonic): the clock the steps were stamped with jumped"
        in (row["status_detail"])
    )
    (manifest.parent / "rank1.log").write_text(rank_log(1))  # the same run without the jump
    assert read_run(manifest, WINDOW).row["status"] == "ok"


def test_run_json_gives_both_percentile_definitions_when_one_rank_hiccups(tmp_path):
    """Issue 20.16: the DDP benchmark pools every rank's step times; the runs table takes the
    rank with the slowest window. Rank 1's fourth measured step takes 0.5 s instead of 0.1 s."""
    hiccup = rank_log(1).splitlines()
    for i, line in enumerate(hiccup):
        kind, fields = logline.parse_line(line) or ("", {})
        if kind == logline.STEP and int(fields["step"]) >= 6:
            shifted = {k: f"{float(fields[k]) + 0.4:.6f}" for k in ("start", "end")}
            hiccup[i] = logline.format_line(logline.STEP, **(fields | shifted))
    manifest = write_run(tmp_path, {"rank0.log": rank_log(0), "rank1.log": "\n".join(hiccup)})
    runs, _steps = runs_table([manifest], WINDOW, tmp_path / "json")
    data = json.loads((tmp_path / "json" / CELL.id / "r1.json").read_text())
    # window: steps 3-7; rank 1's step times 100, 100, 100, 500, 100 ms; rank 0's all 100 ms
    assert data["step_time_ms"] == pytest.approx([100, 100, 100, 500, 100], abs=1e-3)
    assert data["percentiles_of"] == "the steps of the rank with the slowest window"
    assert (data["batch_size_resolved"], data["options_resolved"]) == (CELL.batch_size, {})
    assert data["percentiles_ms"]["p90_ms"] == pytest.approx(340, abs=1e-3)  # of 5 steps
    assert data["percentiles_ms_pooled_ranks"]["p90_ms"] == pytest.approx(140, abs=1e-3)  # of 10
    assert data["percentiles_ms_pooled_ranks"]["p50_ms"] == pytest.approx(100, abs=1e-3)
    assert runs.loc[0, "p90_ms"] == pytest.approx(340, abs=1e-3)
    # what the window measured, beside the configured window: steps 3-7, 2 ranks x 5 x 4
    # samples, over the slowest rank's 0.9 s
    measured = data["window_measured"]
    assert (measured["first_step"], measured["last_step"], measured["samples"]) == (3, 7, 40)
    assert measured["time_s"] == pytest.approx(0.9, abs=1e-6)


def _corrupt(kind: str, rng, run_dir: Path, other: Path) -> None:
    """One forged fault in a finished 2-rank run (`other`: the manifest of another run)."""
    logs = [run_dir / "rank0.log", run_dir / "rank1.log"]
    victim = logs[rng.integers(2)]
    lines = victim.read_text().splitlines()
    if kind == "truncate":
        text = victim.read_text()
        victim.write_text(text[: rng.integers(len(text))])
    elif kind == "duplicate":
        logs[1].write_text(logs[0].read_text())
    elif kind == "swap":
        a, b = logs[0].read_text(), logs[1].read_text()
        logs[0].write_text(b)
        logs[1].write_text(a)
    elif kind in ("non_finite", "clock_step"):
        first = int(rng.integers(1, len(lines)))  # line 0 is the config line
        for i in range(first, len(lines) if kind == "clock_step" else first + 1):
            kind_, fields = logline.parse_line(lines[i]) or ("", {})
            if kind_ != logline.STEP:
                continue
            if kind == "clock_step":
                fields = fields | {k: f"{float(fields[k]) + 3600:.6f}" for k in ("start", "end")}
            else:
                fields = fields | {rng.choice(["samples", "end"]): rng.choice(["nan", "inf", "-1"])}
            lines[i] = logline.format_line(logline.STEP, **fields)
        victim.write_text("\n".join(lines) + "\n")
    elif kind == "manifest":
        (run_dir / "manifest.json").write_text(other.read_text())


@pytest.mark.parametrize("seed", range(40))
def test_forged_faults_give_the_true_figure_or_a_status_naming_the_file(tmp_path, seed):
    """Issue 20: whatever is done to a finished run's logs or manifest, its row is either the
    true figure or a non-ok status that names a file of that run, never another number."""
    import numpy as np

    rng = np.random.default_rng(seed)
    kind = ["truncate", "duplicate", "swap", "non_finite", "clock_step", "manifest"][seed % 6]
    logs = {"rank0.log": rank_log(0), "rank1.log": rank_log(1)}
    other = write_run(tmp_path, logs, repeat=2)
    manifest = write_run(tmp_path, logs, repeat=1)
    data = json.loads(manifest.read_text())
    for task in data["tasks"]:
        task["workload_wall_s"] = 2.0  # the process outlived its 0.9 s of logged steps
    manifest.write_text(json.dumps(data))
    true = read_run(manifest, WINDOW).row["throughput_samples_per_s"]
    _corrupt(kind, rng, manifest.parent, other)
    row = read_run(manifest, WINDOW).row
    if row["status"] == "ok":
        assert row["throughput_samples_per_s"] == pytest.approx(true), kind
    else:
        assert row["status"] == "parse_error", kind
        assert str(manifest.parent) in row["status_detail"], (kind, row["status_detail"])
        assert row.get("throughput_samples_per_s") is None, kind


def test_a_failing_tables_rule_takes_the_reports_down_with_its_tables(tmp_path):
    """Snakemake deletes a failed job's outputs: the reports showing those tables' figures must
    not stay up as if they still stood."""
    from types import SimpleNamespace

    from dlperf.paths import ResultPaths
    from dlperf.workflow import make_tables

    results = ResultPaths(tmp_path / "results")
    report = results.report("en", "md")
    report.parent.mkdir(parents=True)
    report.write_text("# old figures")
    (results.plots / "a.png").parent.mkdir(parents=True)
    (results.plots / "a.png").write_bytes(b"png")
    smk = SimpleNamespace(
        config={},  # no window: the rule fails
        input=SimpleNamespace(manifests=[], adaptive=[]),
        output=SimpleNamespace(cells=str(results.cells)),
        log=[],
        threads=1,
    )
    with pytest.raises(KeyError):
        make_tables(smk)
    assert not report.exists() and not results.plots.exists()
    # another folder's reports stay: the results folder is the one ResultPaths names for the
    # cells table (review: any output's grandparent was taken for it)
    other = ResultPaths(tmp_path / "other").report("en", "md")
    other.parent.mkdir(parents=True)
    other.write_text("# another folder's figures")
    smk.output.cells = str(tmp_path / "other" / "elsewhere" / "cells.tsv")
    with pytest.raises(ValueError, match="not a results folder's cells table"):
        make_tables(smk)
    assert other.exists()


def test_a_max_value_at_its_searchs_ceiling_is_carried_as_a_lower_bound(tmp_path):
    """Every probe fit up to the ceiling: the value is no largest, and the runs and cells tables
    say so (search_ceiling), for the report's "≥"."""
    cell = Cell.parse("pytorch.resnet50.fp32.noxla.bmax.1n1g")
    result = MaxBatchPaths(cell.id, tmp_path).result
    result.parent.mkdir(parents=True)
    probes = [{"value": 64, "status": "ok", "full_length": True}]
    found = {"status": "ok", "value": 64, "detail": "", "probes": probes}
    result.write_text(json.dumps(found | {"at_ceiling": True}))
    manifest = write_max_run(tmp_path, cell, 1, 64)
    runs, _ = runs_table([manifest], WINDOW)
    assert runs.loc[0, "status"] == "ok" and runs.loc[0, "search_ceiling"] == 64
    cells = cells_table(runs, planned_cells([CellSpec(cell, {})]), WINDOW, 1)
    assert cells.loc[0, "search_ceiling"] == 64
    result.write_text(json.dumps(found))  # a value below a size that ran out of memory
    runs, _ = runs_table([manifest], WINDOW)
    assert pd.isna(runs.loc[0, "search_ceiling"])


def test_the_cells_interval_is_at_the_level_asked():
    """Review: the cells table's interval was always at 0.95 while adaptive repeats stopped on
    one at their own `level`: the interval shown was not the one their rule tested. 8 runs: at
    0.95 the interval is (min, max), coverage 1 - 2/2^8; at 0.90 the next ranks, 1 - 18/2^8."""
    from dlperf.measure.tables import cell_figures

    values = [10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0]
    group = pd.DataFrame(
        {"status": ["ok"] * 8, "throughput_samples_per_s": values, "repeat": range(1, 9)}
    )
    wide = cell_figures(group, 8)
    assert (wide["ci_low"], wide["ci_high"]) == (10.0, 17.0)
    assert wide["ci_level"] == pytest.approx(1 - 2 / 256)
    narrow = cell_figures(group, 8, ci_level=0.90)
    assert (narrow["ci_low"], narrow["ci_high"]) == (11.0, 16.0)
    assert narrow["ci_level"] == pytest.approx(1 - 18 / 256)


def stalled_log(rank: int, stall_step: int = 5, stall_s: float = 3.0) -> str:
    """rank_log, but step `stall_step` took `stall_s` (the job suspended meanwhile)."""
    lines, t = [logline.format_line(logline.CONFIG, model="resnet50", model_config="{}")], 100.0
    for step in range(1, 10):
        took = stall_s if step == stall_step else 0.1
        start, end = f"{t:.6f}", f"{t + took:.6f}"
        lines.append(
            logline.format_line(logline.STEP, rank=rank, step=step, samples=4, start=start, end=end)
        )
        t += took
    return "\n".join(lines) + "\n"


def test_a_stall_inside_the_window_flags_the_run(tmp_path):
    """Review: a workload suspended 15 s (SIGSTOP: Slurm's suspend, gang scheduling, a frozen
    cgroup) inside its window was an ok run with no flag, 12x below the framework's speed. The
    window's longest step is recorded, and one over 20x the median step and 10% of the window
    flags its cell; an ordinary slow step (a GC pause) does not."""
    stalled = write_run(tmp_path, {"rank0.log": stalled_log(0), "rank1.log": stalled_log(1)}, 1)
    hiccup = {"rank0.log": stalled_log(0, stall_s=0.3), "rank1.log": stalled_log(1, stall_s=0.3)}
    runs, _ = runs_table([stalled, write_run(tmp_path, hiccup, 2)], WINDOW)
    assert runs["longest_step_ms"].tolist() == pytest.approx([3000.0, 300.0])
    cell = cells_table(runs, planned_cells([CellSpec(CELL, {})]), WINDOW, 2).iloc[0]
    assert cell["flags"] == (
        "unstable: CV 93.1% > 5%; "
        "r1 stalled: one window step took 3.0 s (its median 100.0 ms), 88% of the window"
    )


def run_on(root: Path, cell: Cell, repeat: int, cpu: str, threads: int = 1) -> Path:
    """An ok CPU run of `cell` whose node reported CPU model `cpu`, `threads` cores per rank."""
    paths = RunPaths(cell.id, repeat, root)
    paths.dir.mkdir(parents=True)
    ranks = cell.layout.gpus_per_node
    for rank in range(ranks):
        (paths.dir / f"rank{rank}.log").write_text(rank_log(rank))
    manifest = {
        "cell": cell.key(),
        "repeat": repeat,
        "status": "ok",
        "adapter": {"name": "pytorch"},
        "measure": {"options": {"threads": threads}, "device": "cpu"},
        "nodes": {"node0#node0": {"cpu_model": cpu, "cpus_usable": 8, "gpus": []}},
        "tasks": [{"task": i, "log": f"rank{i}.log"} for i in range(ranks)],
    }
    paths.manifest.write_text(json.dumps(manifest))
    return paths.manifest


def test_runs_or_a_baseline_on_other_hardware_are_flagged_not_pooled_silently(tmp_path):
    """Review: a campaign resumed on another machine pooled its runs in one median, and divided
    a cell's figure by a 1n1g cell's from another machine, without a word (a 62.9% efficiency,
    no caveat). The runs' hardware is recorded; other hardware or other cores per rank among a
    cell's ok runs, or in its 1n1g cell, flags it."""
    one = Cell.parse("pytorch.resnet50.fp32.noxla.b4.1n1g")
    xeon, epyc = "Intel(R) Xeon(R) Platinum 8480+", "AMD EPYC 9654"
    manifests = [run_on(tmp_path, one, 1, epyc), run_on(tmp_path, one, 2, epyc, threads=2)]
    manifests += [run_on(tmp_path, CELL, k, cpu) for k, cpu in ((1, xeon), (2, xeon), (3, epyc))]
    runs, _ = runs_table(manifests, WINDOW)
    assert runs["hardware"].tolist() == [epyc, epyc, xeon, xeon, epyc]
    specs = [CellSpec(one, {}), CellSpec(CELL, {})]
    cells = cells_table(runs, planned_cells(specs), WINDOW, 3).set_index("cell_id")
    assert cells.loc[one.id, "flags"] == "runs with other cores per rank: 1 (r1), 2 (r2)"
    assert cells.loc[CELL.id, "hardware"] == f"{epyc} | {xeon}"
    assert cells.loc[CELL.id, "flags"] == (
        f"runs on other hardware: {epyc} (r3), {xeon} (r1, r2); its 1n1g cell ran on other "
        f"hardware ({epyc}): the speedup divides figures of two machines"
    )
    assert cells.loc[CELL.id, "baseline_hardware"] == epyc


def test_runs_timed_by_other_methods_are_flagged():
    """Review: a cell whose ok runs were timed by timestamps and by a sum of printed step times
    (an upstream log with and without its timestamp prefix) pooled them in one median, unflagged:
    the second leaves out the time between steps."""
    from dlperf.i18n import english
    from dlperf.measure.runflags import run_flags

    ok = pd.DataFrame(
        {"repeat": [1, 2, 3], "status": "ok", "method": ["timestamps", "step_times", "timestamps"]}
    )
    assert [english(f) for f in run_flags(ok)] == [
        "runs timed by other methods: step_times (r2), timestamps (r1, r3)"
    ]
    assert run_flags(ok.assign(method="timestamps")) == []


def test_a_speedup_above_the_device_count_is_flagged_not_shown_as_scaling():
    """Review: on a loaded 2-core machine the default suite's 1n1g cells ran 4x slower than
    alone, and the report showed ResNet-50's 1n2g speedup as 8.86 (efficiency 443%) with only a
    CV flag: a figure that no data-parallel run can reach, shown as scaling."""
    from dlperf.measure.tables import add_speedup

    one, two = (
        Cell.parse("pytorch.resnet50.fp32.noxla.b8.1n1g"),
        Cell.parse("pytorch.resnet50.fp32.noxla.b8.1n2g"),
    )
    cells = pd.DataFrame(
        [one.key() | {"cell_id": one.id, "status": "ok", "throughput_median": 2.10},
         two.key() | {"cell_id": two.id, "status": "ok", "throughput_median": 18.63}]
    ).assign(source="measured", flags="")  # fmt: skip
    flagged = add_speedup(cells).set_index("cell_id")
    assert flagged.loc[two.id, "speedup"] == pytest.approx(8.871, abs=1e-3)
    assert flagged.loc[two.id, "flags"] == (
        "speedup 8.87 above its 2 devices: its 1n1g cell ran slower than alone (a busy machine) "
        "or the cells did other work; no scaling figure"
    )
    assert flagged.loc[one.id, "flags"] == ""
    cells.loc[1, "throughput_median"] = 4.41  # 2.10 x 2.1: within the slack, superlinear by cache
    assert add_speedup(cells).set_index("cell_id").loc[two.id, "flags"] == ""


def test_the_hardware_of_a_gpu_run_is_its_nodes_gpus(tmp_path):
    from dlperf.launch.record import RunRecord

    h100 = "NVIDIA H100 80GB HBM3, 81559 MiB, 550.54.15"
    manifest = run_on(tmp_path, CELL, 1, "x")
    record = json.loads(manifest.read_text())
    record["measure"]["device"] = "cuda"
    record["nodes"] = {"a#node0": {"cpu_model": "x", "gpus": [h100] * 8}}
    manifest.write_text(json.dumps(record))
    assert RunRecord.read(manifest).hardware == "NVIDIA H100 80GB HBM3"
    record["nodes"] = {"a#node0": {"cpu_model": "x", "gpus": [h100]}}  # a 1n1g Slurm job's view
    manifest.write_text(json.dumps(record))
    assert RunRecord.read(manifest).hardware == "NVIDIA H100 80GB HBM3"


def test_a_searched_value_that_differs_from_its_1n1g_cells_gives_no_speedup():
    """Review: InsightFace's num_classes_max cell at 1n8g (13.5M classes) was divided by its
    1n1g cell (2M classes): a speedup of two workloads, shown without a flag."""
    from dlperf.measure.tables import add_speedup

    base = "pytorch.insightface.amp.noxla.b64-num_classes_max"
    cells = pd.DataFrame(
        [
            {"cell_id": f"{base}.1n1g", "source": "measured", "status": "ok", "devices": 1,
             "throughput_median": 100.0, "setting": '{"num_classes": 2000000}'},
            {"cell_id": f"{base}.1n8g", "source": "measured", "status": "ok", "devices": 8,
             "throughput_median": 700.0, "setting": '{"num_classes": 13500000}'},
            {"cell_id": f"{base}.2n8g", "source": "measured", "status": "ok", "devices": 16,
             "throughput_median": 1500.0, "setting": '{"num_classes": 2000000}'},
        ]
    )  # fmt: skip
    speedups = add_speedup(cells).set_index("cell_id")["speedup"]
    assert math.isnan(speedups[f"{base}.1n8g"])
    assert speedups[f"{base}.2n8g"] == pytest.approx(15.0)


def test_a_max_cell_that_trained_another_batch_than_its_1n1g_cell_gives_no_speedup():
    """Review: bsz=max searched per layout, 1n1g trained at 256 and 1n8g at 128 per device: a
    speedup of 5.975 (efficiency 0.747) divided two workloads, with no flag."""
    from dlperf.measure.tables import add_speedup

    base = "pytorch.resnet50.fp32.noxla.bmax"
    cells = pd.DataFrame(
        [
            {"cell_id": f"{base}.1n1g", "source": "measured", "status": "ok", "devices": 1,
             "throughput_median": 401.0, "batch_size_resolved": 256},
            {"cell_id": f"{base}.1n8g", "source": "measured", "status": "ok", "devices": 8,
             "throughput_median": 2401.0, "batch_size_resolved": 128},
            {"cell_id": f"{base}.2n8g", "source": "measured", "status": "ok", "devices": 16,
             "throughput_median": 4812.0, "batch_size_resolved": 256},
        ]
    )  # fmt: skip
    speedups = add_speedup(cells).set_index("cell_id")["speedup"]
    assert math.isnan(speedups[f"{base}.1n8g"])
    assert speedups[f"{base}.2n8g"] == pytest.approx(12.0)


def test_a_published_speedup_needs_an_ok_1n1g_cell():
    """Review: a published table's failed 1n1g cell (its number hidden in the report) still gave
    the 1n8g cell a speedup of 6.667, and no caveat said its baseline had failed."""
    from dlperf.measure.tables import add_speedup

    base = "tensorflow.resnet50.fp32.noxla.b128"
    cells = pd.DataFrame(
        [
            {"cell_id": f"{base}.1n1g", "source": "pub", "status": "failed", "devices": 1,
             "throughput_median": 360.0},
            {"cell_id": f"{base}.1n8g", "source": "pub", "status": "ok", "devices": 8,
             "throughput_median": 2400.0},
        ]
    )  # fmt: skip
    out = add_speedup(cells).set_index("cell_id")
    assert math.isnan(out.loc[f"{base}.1n8g", "speedup"])
    assert out.loc[f"{base}.1n8g", "speedup_baseline_cell"] == ""
    from dlperf.report.caveats import caveats

    said = [
        (c.kind, c.cell_id, c.status, english(c.detail))
        for c in caveats(out.reset_index(), pd.DataFrame())
    ]
    assert ("no_speedup_baseline", f"{base}.1n8g", "ok", f"{base}.1n1g (failed)") in said


def test_a_tables_row_is_one_line_whatever_its_texts_say(tmp_path):
    """A traceback in a run's detail was written as a quoted field over several lines: the table
    then read as a hand-written one with an unmatched quote would."""
    from dlperf.measure.tables import write_table

    frame = pd.DataFrame({"cell_id": ["a", "b"], "status_detail": ["x\r\ny\nz", ""], "n": [1, 2]})
    write_table(frame, tmp_path / "runs.tsv")
    assert (tmp_path / "runs.tsv").read_text().splitlines() == [
        "cell_id\tstatus_detail\tn", "a\tx y z\t1", "b\t\t2",
    ]  # fmt: skip
