"""What `dlperf diff` says beside a verdict or a ratio, never read bare: what the cells table
flags about a cell's runs, a cell one side lacks, two sides timed by other methods."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from test_compare import BASE, CELL
from test_tables import CELL as RUN_CELL
from test_tables import WINDOW, rank_log, write_run

from dlperf.compare.diff import diff_cells, diff_runs, diff_runs_tables
from dlperf.measure.runs import runs_table


def _runs(values: list[float], **columns) -> pd.DataFrame:
    rows = [
        {"cell_id": CELL, "repeat": k, "status": "ok", "throughput_samples_per_s": v} | columns
        for k, v in enumerate(values, 1)
    ]
    return pd.DataFrame(rows)


def test_a_faster_b_whose_losses_were_nan_says_so_beside_its_verdict():
    """Review: B's runs, every window step's loss nan (fp16 steps a grad scaler skipped: faster
    because they did not train), read 'faster, p=0.000583 < 0.05' and nothing else, though the
    cells table flags them."""
    a = _runs(BASE, nonfinite_loss_steps=0.0)
    b = _runs([v * 1.3 for v in BASE], nonfinite_loss_steps=100.0)
    row = diff_runs_tables(a, b).iloc[0]
    assert row["verdict"] == "faster"
    assert row["reason"] == (
        "p=0.000583 < 0.05; B: loss nan or inf in 700 window steps (r1, r2, r3, r4, r5, r6, r7): "
        "steps that may not have trained"
    )
    assert diff_runs_tables(a, a).iloc[0]["reason"] == "p=1 >= 0.05"


def test_a_stalled_run_of_a_is_said_beside_the_verdict():
    """A's third run held one 15 s step among 6 ms ones: its figure is the cells table's stalled
    run, and the diff that compares it says so."""
    stall = {"longest_step_ms": 6.0, "p50_ms": 6.0, "window_time_s": 0.6}
    a = _runs(BASE, **stall)
    a.loc[2, ["longest_step_ms", "window_time_s"]] = [15000.0, 15.6]
    row = diff_runs_tables(a, _runs(BASE, **stall)).iloc[0]
    assert row["reason"] == (
        "p=1 >= 0.05; A: r3 stalled: one window step took 15.0 s (its median 6.0 ms), 96% of the "
        "window"
    )


def test_two_run_jsons_say_which_side_logged_nan_losses(tmp_path):
    """Review: a run's JSON did not record its window's nan or inf losses, so the diff of a fine
    run and a diverged one showed their ratios with no note."""
    nan = dict.fromkeys(range(1, 10), "nan")
    manifests = [
        write_run(tmp_path, {"rank0.log": rank_log(0), "rank1.log": rank_log(1)}, 1),
        write_run(tmp_path, {"rank0.log": rank_log(0, losses=nan), "rank1.log": rank_log(1)}, 2),
    ]
    runs_table(manifests, WINDOW, tmp_path / "json")
    a, b = (tmp_path / "json" / RUN_CELL.id / f"r{k}.json" for k in (1, 2))
    assert diff_runs(a, b)[1] == [
        f"B: loss nan or inf in {WINDOW.measure} window steps (r2): steps that may not have trained"
    ]
    assert diff_runs(a, a)[1] == []


def test_a_cells_diff_names_the_side_a_cell_is_missing_from(tmp_path):
    """Review: a cell of one cells table only had n/a beside it and no reason (the column was
    left out where no cell had one); a results diff says 'only in A'."""
    cols = ["cell_id", "throughput_median", "status"]
    for name, rows in (
        ("a", [[CELL, 100.0, "ok"], ["x.1n1g", 5.0, "ok"]]),
        ("b", [[CELL, 98.0, "ok"]]),
    ):
        pd.DataFrame(rows, columns=cols).to_csv(tmp_path / f"{name}.tsv", sep="\t", index=False)
    a, b = tmp_path / "a.tsv", tmp_path / "b.tsv"
    assert diff_cells(a, b).set_index("cell_id")["reason"].to_dict() == {
        CELL: "",
        "x.1n1g": "only in A",
    }
    assert diff_cells(b, a).set_index("cell_id").loc["x.1n1g", "reason"] == "only in B"


@pytest.mark.parametrize("kind", ["runs", "cells", "run_json"])
def test_two_sides_timed_by_other_methods_are_not_comparable(tmp_path, kind):
    """Review: PaddleNLP's runs are timed by the log prefix's timestamps, or without the prefix by
    the printed avg_batch_cost, which leaves out the wait for the GPU: B's 10 % 'faster' (p <
    0.05) was that change of method."""
    methods = {"a": "timestamps", "b": "step_times"}
    if kind == "runs":
        a = _runs(BASE, method=methods["a"])
        row = diff_runs_tables(a, _runs([v * 1.1 for v in BASE], method=methods["b"])).iloc[0]
        assert (row["verdict"], row["regression"]) == ("n/a", False)
        assert row["reason"] == "not comparable: method A timestamps, B step_times"
        assert diff_runs_tables(a, a).iloc[0]["verdict"] == "same"
    elif kind == "cells":
        cols = ["cell_id", "throughput_median", "status", "method"]
        for name, value in (("a", 100.0), ("b", 110.0)):
            table = pd.DataFrame([[CELL, value, "ok", methods[name]]], columns=cols)
            table.to_csv(tmp_path / f"{name}.tsv", sep="\t", index=False)
        row = diff_cells(tmp_path / "a.tsv", tmp_path / "b.tsv").iloc[0]
        assert row["reason"] == "not comparable: method A timestamps, B step_times"
    else:
        for name, value in (("a", 100.0), ("b", 110.0)):
            run = {"throughput_samples_per_s": value, "percentiles_ms": {}, "method": methods[name]}
            (tmp_path / f"{name}.json").write_text(json.dumps(run))
        notes = diff_runs(tmp_path / "a.json", tmp_path / "b.json")[1]
        assert notes == ['not comparable: method A "timestamps", B "step_times"']


def test_a_cells_diff_says_what_either_table_flags_the_cell_with(tmp_path):
    """Review: B's cell, flagged in its cells table for a nan loss in every window step, read
    '1.3' and no reason in a diff of the two cells tables."""
    nan = "loss nan or inf in 700 window steps (r1, r2, r3, r4, r5, r6, r7): steps that may not"
    cols = ["cell_id", "throughput_median", "status", "flags"]
    for name, value, flags in (("a", 100.0, ""), ("b", 130.0, nan)):
        table = pd.DataFrame([[CELL, value, "ok", flags]], columns=cols)
        table.to_csv(tmp_path / f"{name}.tsv", sep="\t", index=False)
    row = diff_cells(tmp_path / "a.tsv", tmp_path / "b.tsv").iloc[0]
    assert (row["b_over_a"], row["reason"]) == (1.3, f"B: {nan}")
    assert diff_cells(tmp_path / "a.tsv", tmp_path / "a.tsv").iloc[0]["reason"] == ""
