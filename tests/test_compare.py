"""A/B diff of two runs' JSON and of two cells tables."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from dlperf.cli import main
from dlperf.compare.diff import diff_cells, diff_runs


def run_json(path, throughput, p50):
    path.write_text(
        json.dumps(
            {
                "throughput_samples_per_s": throughput,
                "percentiles_ms": {
                    "p50_ms": p50,
                    "p75_ms": p50 * 1.1,
                    "p90_ms": p50 * 1.2,
                    "p95_ms": None,
                },
            }
        )
    )
    return path


def test_diff_runs(tmp_path, capsys):
    a = run_json(tmp_path / "a.json", 100.0, 10.0)
    b = run_json(tmp_path / "b.json", 125.0, 8.0)
    table = diff_runs(a, b)[0].set_index("metric")
    assert table.loc["throughput_samples_per_s", "b_over_a"] == pytest.approx(1.25)
    assert table.loc["p50_ms", "b_over_a"] == pytest.approx(0.8)
    assert math.isnan(table.loc["p95_ms", "b_over_a"])
    assert main(["diff", str(a), str(b)]) == 0
    assert "1.25" in capsys.readouterr().out


def test_diff_cells_keeps_cells_of_either_side(tmp_path):
    cols = ["cell_id", "throughput_median", "status"]
    pd.DataFrame([["x.1n1g", 100.0, "ok"], ["y.1n1g", None, "oom"]], columns=cols).to_csv(
        tmp_path / "a.tsv", sep="\t", index=False
    )
    pd.DataFrame([["x.1n1g", 90.0, "ok"], ["z.1n1g", 5.0, "ok"]], columns=cols).to_csv(
        tmp_path / "b.tsv", sep="\t", index=False
    )
    table = diff_cells(tmp_path / "a.tsv", tmp_path / "b.tsv").set_index("cell_id")
    assert table.loc["x.1n1g", "b_over_a"] == pytest.approx(0.9)
    assert table.loc["y.1n1g", "status_a"] == "oom" and math.isnan(table.loc["y.1n1g", "b_over_a"])
    assert table.loc["z.1n1g", "throughput_b"] == 5.0


# --- two results folders: environment first, a test per cell, exit 1 on a regression ---------

CELL = "pytorch.resnet50.fp32.noxla.b8.1n1g"
OTHER = "pytorch.bert_base.amp.noxla.b8.1n1g"


def manifest(cell_id: str, repeat: int, torch: str, image_size: int = 32) -> dict:
    framework, model = cell_id.split(".")[:2]
    return {
        "schema_version": 1,
        "python": "3.11.7",
        "cell": {"cell_id": cell_id, "framework": framework, "model": model},
        "repeat": repeat,
        "status": "ok",
        "adapter": {"name": "pytorch", "version": "1", "launcher": "per_device"},
        "measure": {"cell": {"cell_id": cell_id}, "options": {"image_size": image_size}},
        "backend": "local",
        "tasks": [],
        "nodes": {
            f"node-{repeat}#node0": {
                "host": f"node-{repeat}",  # differs run to run: never reported
                "cpu_model": "Test CPU 9000",
                "gpus": ["NVIDIA H100 80GB HBM3, 81559 MiB, 550.54"],
                "packages": {"torch": torch, "transformers": "5.23.0"},
            }
        },
    }


def results(root, throughputs: dict[str, list[float]], torch: str = "2.13.0", **kw):
    """A results folder: tables/runs.tsv and runs/<cell>/r<k>/manifest.json."""
    rows = []
    for cell_id, values in throughputs.items():
        for k, value in enumerate(values, 1):
            status = "ok" if math.isfinite(value) else "oom"
            rows.append([cell_id, k, status, value])
            path = root / "runs" / cell_id / f"r{k}" / "manifest.json"
            path.parent.mkdir(parents=True)
            path.write_text(json.dumps(manifest(cell_id, k, torch, **kw)))
    (root / "tables").mkdir(parents=True)
    columns = ["cell_id", "repeat", "status", "throughput_samples_per_s"]
    pd.DataFrame(rows, columns=columns).to_csv(root / "tables/runs.tsv", sep="\t", index=False)
    return root


BASE = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8]


def test_diff_results_environment_first_then_verdicts(tmp_path, capsys):
    a = results(tmp_path / "a" / "results", {CELL: BASE, OTHER: BASE})
    b = results(
        tmp_path / "b",
        {CELL: [v * 0.9 for v in BASE], OTHER: [v * 1.001 for v in BASE]},
        torch="2.14.0",
        image_size=64,
    )
    assert main(["diff", str(tmp_path / "a"), str(b)]) == 1  # A given as its parent
    out = capsys.readouterr().out
    env, table = out.split(CELL, 1)[0], out
    lines = {line.split()[0]: line.split(None, 1)[1] for line in env.splitlines()[1:]}
    assert lines["node.packages.torch"] == "2.13.0 -> 2.14.0"
    assert lines["measure[pytorch.resnet50].options.image_size"] == "32 -> 64"
    assert "host" not in env and "transformers" not in env
    assert "slower REGRESSION" in table and "regressions: " + CELL in table
    assert "1 slower, 1 same" in table
    # within the threshold: a significant slow-down of 10 % is no regression at 15 %
    assert main(["diff", str(a), str(b), "--threshold", "0.15"]) == 0


def test_a_site_setting_the_measure_names_is_one_difference_not_one_per_model(tmp_path, capsys):
    """Review: what a run measures names the site's variables (and setup lines, image) and the
    framework's environment, which the record also states as `site.*` and `environment[...]`:
    one changed NCCL variable printed a line under site and another under every model measured
    (measure[pytorch.resnet50].env..., measure[pytorch.bert_base].env...), and a changed
    environment its key once per model beside environment[pytorch].key."""
    folders = []
    for side, value in (("a", "0"), ("b", "1")):
        root = results(tmp_path / side, {CELL: BASE, OTHER: BASE})
        for path in root.glob("runs/*/r*/manifest.json"):
            data = json.loads(path.read_text())
            data["site"] = {"env": {"NCCL_IB_DISABLE": value}}
            data["environment"] = {"key": f"key{value}", "python": "/e/bin/python"}
            data["measure"] |= {"env": {"NCCL_IB_DISABLE": value}, "environment": f"key{value}"}
            path.write_text(json.dumps(data))
        folders.append(root)
    main(["diff", *map(str, folders)])
    assert capsys.readouterr().out.splitlines()[:3] == [
        "environment (14 run manifests in A, 14 in B): 2 differences (A -> B)",
        "  environment[pytorch].key  key0 -> key1",
        "  site.env.NCCL_IB_DISABLE  0 -> 1",
    ]


def test_diff_results_too_few_runs_and_one_sided_cells(tmp_path, capsys):
    a = results(tmp_path / "a", {CELL: [100.0, math.nan], OTHER: BASE})
    b = results(tmp_path / "b", {CELL: [50.0, 51.0, 52.0]})
    assert main(["diff", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "A has 1 ok run (need >= 2 per side)" in out
    assert "only in A" in out
    # the manifests of the ok runs: A's oom run is no part of its figures
    assert "environment (8 run manifests in A, 3 in B): no differences" in out


def test_a_run_on_disk_the_runs_table_left_out_is_no_part_of_the_diff(tmp_path, capsys):
    """A repeat left from an earlier suite (r8, of another torch and image size, beside a table
    of seven runs) is not read: it made the cell "not comparable" and hid a regression; an
    unreadable one does not stop the diff."""
    a = results(tmp_path / "a", {CELL: BASE})
    b = results(tmp_path / "b", {CELL: [v * 0.8 for v in BASE]})
    left = a / "runs" / CELL / "r8" / "manifest.json"
    left.parent.mkdir()
    left.write_text(json.dumps(manifest(CELL, 8, "2.14.0", image_size=64)))
    (a / "runs" / CELL / "r9").mkdir()
    (a / "runs" / CELL / "r9" / "manifest.json").write_text("{not json")
    assert main(["diff", str(a), str(b)]) == 1
    out = capsys.readouterr().out
    assert "environment (7 run manifests in A, 7 in B): no differences" in out
    assert "slower REGRESSION" in out


def test_diff_bad_arguments_say_what_was_expected(tmp_path, capsys):
    a = results(tmp_path / "a", {CELL: BASE})
    cases = {
        str(a / "runs" / CELL): "is the folder of one cell",
        str(a / "runs" / CELL / "r1"): "is the folder of one run",
        str(a / "tables"): "is a tables folder",
        str(a / "runs"): "is a runs folder",
        str(tmp_path / "missing"): "no such file or folder",
        str(a / "runs" / CELL / "r1" / "manifest.json"): "has no throughput_samples_per_s",
    }
    (tmp_path / "empty").mkdir()
    cases[str(tmp_path / "empty")] = "has no tables/ or results/tables/"
    (tmp_path / "x.txt").write_text("hello")
    cases[str(tmp_path / "x.txt")] = "unknown kind of file"
    (tmp_path / "bad.tsv").write_text("a\tb\n1\t2\n")
    cases[str(tmp_path / "bad.tsv")] = "neither throughput_median nor"
    for path, message in cases.items():
        other = path if path.endswith((".json", ".tsv", ".txt")) else str(a)
        assert main(["diff", other, path]) == 2, path
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"dlperf diff: {path}: ") and message in err, err
        assert len(err.splitlines()) == 1
    manifest = a / "runs" / CELL / "r1" / "manifest.json"
    assert main(["diff", str(a), str(manifest)]) == 2
    assert capsys.readouterr().err == (  # was 'a run json but A is a results'
        f"dlperf diff: {manifest}: is a per-run JSON but {a} is a results folder; "
        "give two of the same kind\n"
    )
    (a / "tables" / "runs.tsv").write_text("cell_id\tstatus\n")
    assert main(["diff", str(a), str(a)]) == 2
    assert "has no column repeat, throughput_samples_per_s" in capsys.readouterr().err


def test_diff_results_without_runs_tables_falls_back_to_cell_medians(tmp_path, capsys):
    cols = ["cell_id", "throughput_median", "status"]
    for side, value in (("a", 100.0), ("b", 80.0)):
        (tmp_path / side / "tables").mkdir(parents=True)
        pd.DataFrame([[CELL, value, "ok"]], columns=cols).to_csv(
            tmp_path / side / "tables" / "cells.tsv", sep="\t", index=False
        )
    assert main(["diff", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert "no run manifests in A" in out and "cell medians only, no test" in out
    assert f"no {tmp_path / 'a/tables/runs.tsv'} nor {tmp_path / 'b/tables/runs.tsv'}:" in out
    assert "0.8" in out


def test_diff_empty_runs_tables(tmp_path, capsys):
    a = results(tmp_path / "a", {})
    assert main(["diff", str(a), str(a)]) == 0
    assert "0 cells: 0 faster" in capsys.readouterr().out


def test_a_b_that_measured_nothing_fails_the_gate(tmp_path, capsys):
    """Review: B's runs table with its header and no row read every cell of A as 'only in A' and
    exited 0, so a CI gate passed a candidate that measured nothing."""
    a = results(tmp_path / "a", {CELL: BASE})
    empty = results(tmp_path / "b", {})
    table_a, table_b = a / "tables" / "runs.tsv", empty / "tables" / "runs.tsv"
    assert main(["diff", str(table_a), str(table_b)]) == 1
    assert "only in A: B's runs table has no runs" in capsys.readouterr().out
    assert main(["diff", str(table_b), str(table_a)]) == 0  # A empty: B's cells are only new


@pytest.mark.parametrize(
    ("status", "value", "message"),
    [
        ("ok", "fast", "column throughput_samples_per_s: 'fast' is not a number"),
        ("ok", "-1", "column throughput_samples_per_s: -1 is negative"),
        ("ok", "", "column throughput_samples_per_s: empty on a run whose status is ok"),
        ("ok", "inf", "column throughput_samples_per_s: inf is not a finite number"),
        ("OK", "99", "column status: 'OK' is not a dlperf status"),
    ],
)
def test_diff_rejects_a_runs_row_it_cannot_use(tmp_path, capsys, status, value, message):
    """M3: 'fast' was left out, -1 used as a sample, an empty ok throughput read as 0 ok runs."""
    a = results(tmp_path / "a", {CELL: BASE})
    b = results(tmp_path / "b", {CELL: BASE})
    table = b / "tables" / "runs.tsv"
    lines = table.read_text().splitlines()
    lines[3] = f"{CELL}\t3\t{status}\t{value}"
    table.write_text("\n".join(lines) + "\n")
    for args in ([str(a), str(b)], [str(a / "tables" / "runs.tsv"), str(table)]):
        assert main(["diff", *args]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"dlperf diff: {table}:4: {message}"), err
        assert len(err.splitlines()) == 1


def test_diff_rejects_bad_cells_table_and_run_json_values(tmp_path, capsys):
    cols = ["cell_id", "throughput_median", "status"]
    good, bad = tmp_path / "a.tsv", tmp_path / "b.tsv"
    pd.DataFrame([[CELL, 100.0, "ok"]], columns=cols).to_csv(good, sep="\t", index=False)
    pd.DataFrame([[OTHER, 5.0, "ok"], [CELL, "fast", "ok"]], columns=cols).to_csv(
        bad, sep="\t", index=False
    )
    assert main(["diff", str(good), str(bad)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"dlperf diff: {bad}:3: column throughput_median: 'fast' is not a number"
    )
    pd.DataFrame([[CELL, 5.0, "ok"], [CELL, 6.0, "ok"]], columns=cols).to_csv(
        bad, sep="\t", index=False
    )
    assert main(["diff", str(good), str(bad)]) == 2
    assert f"{bad}:3: column cell_id: '{CELL}' again (first on line 2)" in capsys.readouterr().err
    a = run_json(tmp_path / "a.json", 100.0, 10.0)
    b = tmp_path / "b.json"
    b.write_text(json.dumps({"throughput_samples_per_s": "fast", "percentiles_ms": {}}))
    assert main(["diff", str(a), str(b)]) == 2
    err = capsys.readouterr().err
    assert f"dlperf diff: {b}: throughput_samples_per_s is 'fast', not a finite number" in err


# --- a cell whose two sides trained or measured something else: no verdict ---------------------

MAX = "pytorch.resnet50.fp32.noxla.bmax.1n1g"


def runs_table(path, cell_id, values, **columns):
    """A runs table of one cell's ok runs, with extra columns (one value for every run)."""
    rows = [
        {"cell_id": cell_id, "repeat": k, "status": "ok", "throughput_samples_per_s": v} | columns
        for k, v in enumerate(values, 1)
    ]
    pd.DataFrame(rows).to_csv(path, sep="\t", index=False)
    return path


def _verdict_line(out: str, cell_id: str) -> str:
    return next(line for line in out.splitlines() if line.strip().startswith(cell_id))


@pytest.mark.parametrize(
    ("column", "value_a", "value_b", "named"),
    [
        ("batch_size_resolved", 4, 2, "batch_size_resolved A 4, B 2"),
        ("options_resolved", '{"seq_len": 512}', '{"seq_len": 256}', "options_resolved A"),
    ],
)
def test_diff_runs_tables_of_other_resolved_settings_give_no_verdict(
    tmp_path, capsys, column, value_a, value_b, named
):
    """A bmax cell whose runs trained at batch 4 in A and 2 in B was 'slower REGRESSION' (exit 1)."""
    a = runs_table(tmp_path / "a.tsv", MAX, BASE, **{column: value_a})
    b = runs_table(tmp_path / "b.tsv", MAX, [v * 0.5 for v in BASE], **{column: value_b})
    assert main(["diff", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    line = _verdict_line(out, MAX)
    assert "REGRESSION" not in out and "slower" not in line and " n/a " in line, out
    assert "not comparable: " in line and named in line, line
    assert "0 slower, 0 same, 1 n/a" in out
    # the same settings on both sides: the slow-down is a regression, as before
    b = runs_table(tmp_path / "b.tsv", MAX, [v * 0.5 for v in BASE], **{column: value_a})
    assert main(["diff", str(a), str(b)]) == 1
    assert "slower REGRESSION" in capsys.readouterr().out


def _measure(root, cell_id, **measure):
    """Add `measure` keys (steps, device) to every manifest of the cell in a results folder."""
    for path in (root / "runs" / cell_id).glob("r*/manifest.json"):
        data = json.loads(path.read_text())
        data["measure"] |= measure
        path.write_text(json.dumps(data))


@pytest.mark.parametrize(
    ("side_a", "side_b", "named"),
    [
        ({"steps": 40}, {"steps": 20}, "steps A 40, B 20"),
        ({"device": "cuda"}, {"device": "cpu"}, "device A cuda, B cpu"),
    ],
)
def test_diff_results_of_other_steps_or_device_give_no_verdict(
    tmp_path, capsys, side_a, side_b, named
):
    a = results(tmp_path / "a", {CELL: BASE, OTHER: BASE})
    b = results(tmp_path / "b", {CELL: [v * 0.5 for v in BASE], OTHER: [v * 0.5 for v in BASE]})
    _measure(a, CELL, **side_a)
    _measure(b, CELL, **side_b)
    assert main(["diff", str(a), str(b)]) == 1  # OTHER: measured alike, slower
    out = capsys.readouterr().out
    line = _verdict_line(out.split("median_a", 1)[1], CELL)
    assert "slower" not in line and "not comparable: " + named in line, line
    assert "regressions: " + OTHER in out and CELL not in out.split("regressions: ")[1]


def test_diff_results_of_another_window_give_no_verdict(tmp_path, capsys):
    a = results(tmp_path / "a", {CELL: BASE})
    b = results(tmp_path / "b", {CELL: [v * 0.5 for v in BASE]})
    for root, last in ((a, 104), (b, 54)):
        table = pd.read_csv(root / "tables" / "runs.tsv", sep="\t")
        table = table.assign(window_first_step=5, window_last_step=last)
        table.to_csv(root / "tables" / "runs.tsv", sep="\t", index=False)
    assert main(["diff", str(a), str(b)]) == 0
    line = _verdict_line(capsys.readouterr().out.split("median_a", 1)[1], CELL)
    assert "not comparable: window A 5-104, B 5-54" in line and "slower" not in line, line


# --- what makes two sides no like for like is said, never a silent ratio ---------------------


def _full_run_json(path, cell_id: str, window: tuple[int, int], throughput: float, p50: float):
    """A per-run JSON with the keys a run's JSON holds besides its figures (cell, window)."""
    framework, model = cell_id.split(".")[:2]
    run = {
        "cell": {"cell_id": cell_id, "framework": framework, "model": model},
        "repeat": 1,
        "status": "ok",
        "window": {"warmup": window[0], "measure": window[1]},
        "throughput_samples_per_s": throughput,
        "percentiles_ms": {"p50_ms": p50, "p75_ms": p50, "p90_ms": p50, "p95_ms": p50},
    }
    path.write_text(json.dumps(run))
    return path


@pytest.mark.parametrize(
    "cell_b, window_b, named",
    [(CELL, (8, 27), "window A"), ("pytorch.bert_base.amp.noxla.b8.1n2g", (5, 30), "cell A")],
)
def test_two_run_jsons_of_another_window_or_cell_are_not_comparable(
    tmp_path, capsys, cell_b, window_b, named
):
    a = _full_run_json(tmp_path / "a.json", CELL, (5, 30), 100.0, 10.0)
    b = _full_run_json(tmp_path / "b.json", cell_b, window_b, 50.0, 20.0)
    assert diff_runs(a, a)[1] == []
    main(["diff", str(a), str(b)])
    out = capsys.readouterr().out
    assert "not comparable: " in out and named in out, out


def test_two_run_jsons_of_a_max_cell_that_trained_other_batches_are_not_comparable(tmp_path):
    """Review: two runs of a bsz=max cell, trained at 256 and 128 per device (the search found
    each its own), were compared with no note."""
    cell = "pytorch.resnet50.fp32.noxla.bmax.1n1g"
    a = _full_run_json(tmp_path / "a.json", cell, (5, 30), 100.0, 10.0)
    b = _full_run_json(tmp_path / "b.json", cell, (5, 30), 95.0, 5.3)
    for path, batch in ((a, 256), (b, 128)):
        path.write_text(json.dumps(json.loads(path.read_text()) | {"batch_size_resolved": batch}))
    assert diff_runs(a, b)[1] == ["not comparable: batch_size_resolved A 256, B 128"]


def test_two_cells_tables_of_another_window_are_not_comparable(tmp_path, capsys):
    cols = ["cell_id", "throughput_median", "status", "window", "batch_size_resolved"]
    for name, window, value in (
        ("a", "skip 5, measure 30", 100.0),
        ("b", "skip 8, measure 27", 50.0),
    ):
        pd.DataFrame([[CELL, value, "ok", window, 8]], columns=cols).to_csv(
            tmp_path / f"{name}.tsv", sep="\t", index=False
        )
    main(["diff", str(tmp_path / "a.tsv"), str(tmp_path / "b.tsv")])
    out = capsys.readouterr().out
    assert "not comparable: window A skip 5, measure 30, B skip 8, measure 27" in out, out


def test_a_cell_ok_in_a_and_all_oom_in_b_is_a_regression_naming_the_status(tmp_path, capsys):
    cols = ["cell_id", "repeat", "status", "throughput_samples_per_s"]
    a, b = tmp_path / "a.tsv", tmp_path / "b.tsv"
    ok = [[CELL, k, "ok", v] for k, v in enumerate(BASE, 1)]
    pd.DataFrame(ok, columns=cols).to_csv(a, sep="\t", index=False)
    oom = [[CELL, k, "oom", None] for k in range(1, 8)]
    pd.DataFrame(oom, columns=cols).to_csv(b, sep="\t", index=False)
    assert main(["diff", str(a), str(b)]) == 1  # a cell that no longer trains fails the gate
    assert "B has no ok run (oom: 7); A has 7" in capsys.readouterr().out


@pytest.mark.parametrize("broken", [4, 6])
def test_a_cell_whose_b_runs_break_more_often_is_a_regression(tmp_path, capsys, broken):
    """Review: 7 ok runs in A, 3 (or 1) ok and 4 (or 6) oom in B passed the gate as "same" (or
    n/a): a cell that trains less often has regressed, whatever its ok runs' speed."""
    cols = ["cell_id", "repeat", "status", "throughput_samples_per_s"]
    a, b = tmp_path / "a.tsv", tmp_path / "b.tsv"
    pd.DataFrame([[CELL, k, "ok", v] for k, v in enumerate(BASE, 1)], columns=cols).to_csv(
        a, sep="\t", index=False
    )
    runs = [[CELL, k, "ok", v] for k, v in enumerate(BASE[: 7 - broken], 1)]
    runs += [[CELL, k, "oom", None] for k in range(8 - broken, 8)]
    pd.DataFrame(runs, columns=cols).to_csv(b, sep="\t", index=False)
    assert main(["diff", str(a), str(b)]) == 1
    assert f"B broke in {broken} of 7 runs (oom: {broken}); A in 0 of 7" in capsys.readouterr().out
    assert main(["diff", str(b), str(a)]) == 0  # B breaking less often than A is no regression
    assert main(["diff", str(b), str(b)]) == 0  # nor breaking as often
    never = [[CELL, k, "skipped", None] for k in range(1, 8)]  # A never trained: B improved
    pd.DataFrame(never, columns=cols).to_csv(a, sep="\t", index=False)
    assert main(["diff", str(a), str(b)]) == 0


def test_a_runs_table_with_a_repeat_twice_is_an_error_naming_its_line(tmp_path, capsys):
    from dlperf.report.load import load_baseline

    cols = ["cell_id", "repeat", "status", "throughput_samples_per_s"]
    rows = [[CELL, k, "ok", v] for k, v in enumerate(BASE, 1)]
    a, b = tmp_path / "a.tsv", tmp_path / "b.tsv"
    pd.DataFrame(rows, columns=cols).to_csv(a, sep="\t", index=False)
    pd.DataFrame(rows + [[CELL, 1, "ok", 50.0]], columns=cols).to_csv(b, sep="\t", index=False)
    assert main(["diff", str(a), str(b)]) == 2
    err = capsys.readouterr().err
    assert f"{b}:9: column repeat: '{CELL}' repeat 1 again (first on line 2)" in err, err
    with pytest.raises(Exception, match=f"{b}:9"):  # a baseline is never pooled twice either
        load_baseline("published", b)


def test_a_long_environment_value_is_shown_where_the_sides_differ(tmp_path, capsys):
    """Review: each side's values were cut to their first 57 characters, so two nodes' GPU lists
    that differ at the eighth GPU (or topologies that differ in one NVLink) printed the same text
    on both sides of the arrow. Both sides are now cut from just before their first difference."""
    gpu = "NVIDIA H100 80GB HBM3, 81559 MiB, 550.54"
    a = results(tmp_path / "a", {CELL: BASE})
    b = results(tmp_path / "b", {CELL: BASE})
    for root, gpus in ((a, [gpu] * 8), (b, [gpu] * 7 + [gpu.replace("81559", "40960")])):
        for path in (root / "runs").glob("*/r*/manifest.json"):
            data = json.loads(path.read_text())
            for node in data["nodes"].values():
                node["gpus"] = gpus
            path.write_text(json.dumps(data))
    main(["diff", str(a), str(b)])
    line = next(x for x in capsys.readouterr().out.splitlines() if "node.gpus" in x)
    shown_a, shown_b = line.split(None, 1)[1].split(" -> ")
    assert shown_a == "...100 80GB HBM3, 81559 MiB, 550.54"
    assert shown_b == "...100 80GB HBM3, 40960 MiB, 550.54"


def test_a_cells_diff_says_when_b_trained_less_often(tmp_path, capsys):
    """Review: two cells tables' diff gave B's median as 'ok' with a plain ratio when 6 of its 7
    runs ran out of memory; it now says how many of each side's runs gave the median."""
    cols = ["cell_id", "throughput_median", "status", "runs_ok", "runs_done", "statuses"]
    a = pd.DataFrame([["x.1n1g", 100.0, "ok", 7, 7, "ok 7"], ["y.1n1g", 50.0, "ok", 3, 3, "ok 3"]])
    b = pd.DataFrame(
        [["x.1n1g", 98.0, "ok", 1, 7, "ok 1, oom 6"], ["y.1n1g", 51.0, "ok", 3, 3, ""]]
    )
    a.set_axis(cols, axis=1).to_csv(tmp_path / "a.tsv", sep="\t", index=False)
    b.set_axis(cols, axis=1).to_csv(tmp_path / "b.tsv", sep="\t", index=False)
    table = diff_cells(tmp_path / "a.tsv", tmp_path / "b.tsv").set_index("cell_id")
    assert table.loc["x.1n1g", "reason"] == "B ok in 1 of 7 runs (ok 1, oom 6); A in 7 of 7"
    assert table.loc["y.1n1g", "reason"] == ""
    assert main(["diff", str(tmp_path / "a.tsv"), str(tmp_path / "b.tsv")]) == 0
    assert "B ok in 1 of 7 runs" in capsys.readouterr().out
