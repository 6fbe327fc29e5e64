"""The numbers `dlperf diff` prints: a level or threshold as set, figures in the report's units."""

from __future__ import annotations

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
