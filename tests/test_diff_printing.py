"""The numbers `dlperf diff` prints: a level or threshold as set, figures in the report's units."""

from __future__ import annotations

import json

import pandas as pd
from test_compare import BASE, CELL, runs_table

from dlperf.cli import main


def test_the_level_and_threshold_print_as_set(tmp_path, capsys):
    """Review: --alpha 0.001 headed a 99.9% interval 'ci100%', and --threshold 0.0025 read
    'slower beyond the 0.2% threshold'."""
    a = runs_table(tmp_path / "a.tsv", CELL, BASE * 2)
    b = runs_table(tmp_path / "b.tsv", CELL, [v * 0.99 for v in BASE * 2])
    args = ["diff", str(a), str(b), "--alpha", "0.001", "--threshold", "0.0025"]
    assert main(args) == 1
    out = capsys.readouterr().out
    assert out.split()[6] == "ci99.9%", out
    assert "p=0.000502 < 0.001; slower beyond the 0.25% threshold" in out
    assert "regression = significantly slower by more than 0.25%" in out
    assert main(["diff", str(a), str(b)]) == 0  # the defaults: 1 % is within 5 %
    out = capsys.readouterr().out
    assert out.split()[6] == "ci95%" and "more than 5%" in out, out


def test_figures_print_as_the_report_prints_them(tmp_path, capsys):
    """Review: every figure printed to 4 significant digits: 12345.68 samples/s read '1.235e+04'
    on both sides of a 0.04 % change whose ratio read '1', and the report prints '12345.68'."""
    a = runs_table(tmp_path / "a.tsv", CELL, [12345.678 + k for k in range(7)])
    b = runs_table(tmp_path / "b.tsv", CELL, [12350.678 + k for k in range(7)])
    main(["diff", str(a), str(b)])
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith(CELL))
    assert line.split()[3:6] == ["12348.68", "12353.68", "1.0004"], line
    for name, value, p50 in (("a", 12345.678, 2.5921), ("b", 12350.2, 2.5934)):
        run = {"throughput_samples_per_s": value, "percentiles_ms": {"p50_ms": p50}}
        (tmp_path / f"{name}.json").write_text(json.dumps(run))
    main(["diff", str(tmp_path / "a.json"), str(tmp_path / "b.json")])
    rows = {x.split()[0]: x.split()[1:] for x in capsys.readouterr().out.splitlines()[1:] if x}
    assert rows["throughput_samples_per_s"] == ["12345.68", "12350.20", "1.0004"]
    assert rows["p50_ms"] == ["2.592", "2.593", "1.0005"]
    assert rows["p95_ms"] == ["n/a", "n/a", "n/a"]
    cells = ["cell_id", "throughput_median", "status"]
    for name, value in (("a", 12345.678), ("b", 12350.2)):
        pd.DataFrame([[CELL, value, "ok"]], columns=cells).to_csv(
            tmp_path / f"{name}.tsv", sep="\t", index=False
        )
    main(["diff", str(tmp_path / "a.tsv"), str(tmp_path / "b.tsv")])
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith(CELL))
    assert line.split() == [CELL, "12345.68", "12350.20", "ok", "ok", "1.0004"]
