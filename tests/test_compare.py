"""A/B diff of two runs' JSON and of two cells tables."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from dlperf.cli import main
from dlperf.compare import diff_cells, diff_runs


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
    table = diff_runs(a, b).set_index("metric")
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
