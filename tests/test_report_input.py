"""`dlperf report` and the report rule on bad tables: a clear error naming the file, line and
column (exit 2), never a traceback or a silently wrong figure, and nothing already made deleted."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from dlperf.cli import main
from dlperf.errors import ConfigError
from dlperf.measure.tables import CELL_TABLE_COLUMNS, write_table
from dlperf.report.load import load_baseline, load_cells

ONE = "pytorch.resnet50.fp32.noxla.b8.1n1g"
TWO = "pytorch.resnet50.fp32.noxla.b8.1n2g"
HEADER = "cell_id\tstatus\tthroughput_median\tthroughput_min\tthroughput_max\n"


def typed(tmp_path: Path, *rows: str, header: str = HEADER, name: str = "cells.tsv") -> Path:
    """A cells table typed in: a header and tab-separated rows."""
    path = tmp_path / name
    path.write_text(header + "".join(row + "\n" for row in rows))
    return path


def report(tmp_path: Path, table: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """Run `dlperf report`, expect exit 2 and one line on stderr; that line."""
    out = tmp_path / "out"
    assert main(["report", str(table), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_a_median_outside_its_spread_or_negative_names_file_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """C2: matplotlib's 'yerr must not contain negative values' before; now the row at fault."""
    outside = typed(tmp_path, f"{ONE}\tok\t100\t90\t110", f"{TWO}\tok\t250\t180\t200")
    err = report(tmp_path, outside, capsys)
    assert err.startswith(f"dlperf: {outside}:3: column throughput_median: 250 lies outside")
    negative = typed(tmp_path, f"{ONE}\tok\t-5\t\t", name="negative.tsv")
    err = report(tmp_path, negative, capsys)
    assert err == f"dlperf: {negative}:2: column throughput_median: -5 is negative"
    # the report rule reads the measured table through load_cells: the same error, nothing drawn
    with pytest.raises(ConfigError, match=rf"^{outside}:3: column throughput_median: "):
        load_cells(outside, [])
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("longer", [2, 3])
def test_a_row_with_more_fields_than_the_header_names_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], longer: int
) -> None:
    """Review: a first row one field too long made pandas take its cell id as an index and shift
    every field a column left: "column throughput_median: 'ok' is not a number"."""
    rows = [f"{ONE}\tok\t100\t90\t110", f"{TWO}\tok\t180\t170\t190"]
    rows[longer - 2] += "\textra"
    table = typed(tmp_path, *rows)
    assert report(tmp_path, table, capsys) == (
        f"dlperf: {table}:{longer}: more fields than the header"
        if longer == 2
        else f"dlperf: {table}:3: not a readable table: Error tokenizing data. C error: "
        "Expected 5 fields in line 3, saw 6"
    )


def test_a_report_already_made_is_kept_when_a_table_is_bad(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    (out / "plots").mkdir(parents=True)
    (out / "report.en.md").write_text("the last good report\n")
    (out / "plots" / "old.png").write_bytes(b"png")
    bad = typed(tmp_path, f"{ONE}\tok\t100\t120\t130")
    assert main(["report", str(bad), "--out", str(out)]) == 2
    assert f"{bad}:2: column throughput_median" in capsys.readouterr().err
    assert (out / "report.en.md").read_text() == "the last good report\n"
    assert (out / "plots" / "old.png").read_bytes() == b"png"


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("status", "OK", "'OK' is not a dlperf status (ok, oom,"),
        ("status", "great", "'great' is not a dlperf status"),
        ("throughput_median", "fast", "'fast' is not a number"),
        ("throughput_median", "inf", "inf is not a finite number"),
        ("throughput_min", "-1", "-1 is negative"),
        ("speedup", "-2", "-2 is negative"),
        ("runs_ok", "2.5", "2.5 is not a whole number"),
        ("devices", "0", "0 is below 1"),
        ("ci_level", "95", "95 is above 1"),
        ("xla", "maybe", "'maybe' is not one of"),
        ("unstable", "sometimes", "'sometimes' is not one of"),
    ],
)
def test_every_column_the_report_reads_is_checked_for_its_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], column: str, value: str, message: str
) -> None:
    """C3: a typed-in table's values, as `dlperf report`'s help invites; 'OK' was a
    CatalogError, 'fast' a TypeError."""
    columns = ["cell_id", "status", "throughput_median"]
    columns += [column] if column not in columns else []
    good = {"cell_id": ONE, "status": "ok", "throughput_median": "100"}
    bad = {"cell_id": TWO, "status": "ok", "throughput_median": "190"} | {column: value}
    rows = ["\t".join(row.get(c, "") for c in columns) for row in (good, bad)]
    table = typed(tmp_path, *rows, header="\t".join(columns) + "\n")
    err = report(tmp_path, table, capsys)
    assert err.startswith(f"dlperf: {table}:3: column {column}: "), err
    assert message in err, err


def test_good_values_of_every_kind_pass(tmp_path: Path) -> None:
    table = typed(
        tmp_path,
        f"{ONE}\tok\t100\t1\t1\t0.95\tfalse\tTrue",
        f"{TWO}\toom\t\t\t2\t\tnoxla\t",
        header="cell_id\tstatus\tthroughput_median\truns_ok\tdevices\tci_level\txla\tunstable\n",
    )
    frame = load_baseline("typed", table)
    assert list(frame["status"]) == ["ok", "oom"] and frame["throughput_median"].iloc[0] == 100


def test_the_line_is_the_files_line_past_blank_lines_and_quoted_newlines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = typed(
        tmp_path,
        f'{ONE}\tok\t100\t"a note\nover two lines"',
        "",
        f"{TWO}\tfast\t200\t",
        header="cell_id\tstatus\tthroughput_median\tnote\n",
    )
    assert report(tmp_path, table, capsys).startswith(f"dlperf: {table}:5: column status: ")


def test_a_cell_on_two_lines_names_both(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """M4: the last row used to win silently."""
    table = typed(tmp_path, f"{ONE}\tok\t100\t\t", f"{TWO}\tok\t190\t\t", f"{ONE}\tok\t90\t\t")
    err = report(tmp_path, table, capsys)
    assert err.startswith(f"dlperf: {table}:4: column cell_id: '{ONE}' again (first on line 2)")
    with pytest.raises(ConfigError, match=r":4: column cell_id: .* again \(first on line 2\)"):
        load_cells(table, [])


def test_a_layout_size_that_is_not_the_cell_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """devices divides the speedup into the efficiency: 4 for a 1n2g cell was a wrong figure."""
    header = "cell_id\tstatus\tthroughput_median\tdevices\n"
    table = typed(tmp_path, f"{ONE}\tok\t100\t1", f"{TWO}\tok\t190\t4", header=header)
    err = report(tmp_path, table, capsys)
    assert err.startswith(f"dlperf: {table}:3: column devices: 4 is not its cell id's 2"), err


@pytest.mark.parametrize(
    ("column", "given", "own"),
    [("layout", "1n8g", "1n2g"), ("batch_size", "16", "8"), ("precision", "amp", "fp32"),
     ("xla", "true", "noxla")],
)  # fmt: skip
def test_a_cell_value_that_is_not_the_cell_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], column: str, given: str, own: str
) -> None:
    """A 1n2g row typed with layout 1n8g was shown in the 1n8g column at its own 1n2g speedup
    and efficiency (devices from the id): a figure under another cell's heading, rc 0."""
    header = f"cell_id\tstatus\tthroughput_median\t{column}\n"
    table = typed(tmp_path, f"{ONE}\tok\t100\t", f"{TWO}\tok\t190\t{given}", header=header)
    err = report(tmp_path, table, capsys)
    assert err.startswith(f"dlperf: {table}:3: column {column}: "), err
    assert f"is not its cell id's {own} ({TWO})" in err, err
    assert not (tmp_path / "out").exists()


def test_cell_values_written_as_the_cell_id_says_pass(tmp_path: Path) -> None:
    """The same values as dlperf and hand-typed tables write them: 8 or 8.0, True or xla, AMP."""
    header = "cell_id\tstatus\tthroughput_median\tlayout\tbatch_size\tprecision\txla\n"
    amp = "pytorch.resnet50.amp.xla.b8.1n2g"
    table = typed(
        tmp_path,
        f"{ONE}\tok\t100\t1n1g\t8.0\tfp32\tFalse",
        f"{amp}\tok\t1\t\t8\tAMP\txla",
        header=header,
    )
    frame = load_baseline("old", table)
    assert list(frame["layout"]) == ["1n1g", "1n2g"]
    assert list(frame["batch_size"].astype(float)) == [8.0, 8.0]


def test_a_runs_table_as_a_baseline_is_checked_too(tmp_path: Path) -> None:
    runs = tmp_path / "runs.tsv"
    runs.write_text(
        f"cell_id\trepeat\tstatus\tthroughput_samples_per_s\n{ONE}\t1\tok\t10\n{ONE}\t2\tOK\t12\n"
    )
    with pytest.raises(ConfigError, match=rf"^{runs}:3: column status: 'OK' is not a dlperf"):
        load_baseline("old", runs)
    runs.write_text(
        f"cell_id\trepeat\tstatus\tthroughput_samples_per_s\n{ONE}\t1\tok\t10\n{ONE}\t2\tok\t\n"
    )
    with pytest.raises(ConfigError, match=rf"^{runs}:3: column throughput_samples_per_s: empty"):
        load_baseline("old", runs)


def test_a_table_dlperf_wrote_passes_unchanged(tmp_path: Path) -> None:
    row = dict.fromkeys(CELL_TABLE_COLUMNS, None) | {
        "cell_id": ONE,
        "framework": "pytorch",
        "model": "resnet50",
        "precision": "fp32",
        "xla": False,
        "batch_size": "8",
        "variant": "default",
        "layout": "1n1g",
        "nodes": 1,
        "gpus_per_node": 1,
        "devices": 1,
        "status": "ok",
        "runs_planned": 3,
        "runs_done": 3,
        "runs_ok": 3,
        "throughput_median": 100.0,
        "throughput_min": 98.0,
        "throughput_max": 101.0,
        "throughput_cv": 0.01,
        "ci_low": 98.0,
        "ci_high": 101.0,
        "ci_level": 0.95,
        "unstable": False,
        "outlier_runs": 0,
        "speedup": 1.0,
        "efficiency": 1.0,
    }
    path = tmp_path / "cells.tsv"
    write_table(pd.DataFrame([row], columns=CELL_TABLE_COLUMNS), path)
    cells = load_cells(path, [])
    assert cells["throughput_median"].iloc[0] == 100.0 and cells["status"].iloc[0] == "ok"
    from dlperf.report.tablecheck import check_table

    check_table(pd.read_csv(path, sep="\t"), path)


def test_out_that_is_a_file_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """C4: NotADirectoryError's traceback before; the file is left as it was."""
    table = typed(tmp_path, f"{ONE}\tok\t100\t\t")
    taken = tmp_path / "taken.txt"
    taken.write_text("mine\n")
    assert main(["report", str(table), "--out", str(taken)]) == 2
    assert (
        capsys.readouterr().err.strip()
        == f"dlperf: dlperf report: --out {taken}: is a file; give a folder"
    )
    assert main(["report", str(table), "--out", str(taken / "report")]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err
        == f"dlperf: dlperf report: --out {taken / 'report'}: is inside {taken}, a file; give a folder"
    )
    assert taken.read_text() == "mine\n"


def test_a_folder_given_as_a_table_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Minor: 'no such cells table' for a folder that exists."""
    folder = tmp_path / "results"
    folder.mkdir()
    err = report(tmp_path, folder, capsys)
    assert err.startswith(f"dlperf: dlperf report: {folder}: is a folder; give a cells table")
    (folder / "tables").mkdir()
    typed(folder / "tables", f"{ONE}\tok\t100\t\t")
    err = report(tmp_path, folder, capsys)
    assert err.endswith(f"e.g. {folder / 'tables' / 'cells.tsv'}"), err


@pytest.mark.parametrize(
    ("name", "sep"),
    [("cells.tsv", ","), ("cells.tsv", "  "), ("cells.csv", "\t"), ("cells.csv", ";")],
)
def test_a_table_typed_with_another_separator_says_which_it_needs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, sep: str
) -> None:
    """Was "has no cell_id column; is it a dlperf cells or runs table?" of a table whose header
    reads cell_id first: a .tsv typed with commas, or with spaces for its tabs."""
    header = sep.join(("cell_id", "status", "throughput_median")) + "\n"
    table = typed(tmp_path, sep.join((ONE, "ok", "100")), header=header, name=name)
    needs = "commas" if name.endswith(".csv") else "tabs"
    err = report(tmp_path, table, capsys)
    assert err.startswith(f"dlperf: {table}:1: the header is one field, "), err
    assert err.endswith(f"this table's fields must be separated by {needs} (a .tsv table's by "
                        "tabs, a .csv one's by commas)"), err  # fmt: skip
    if name.endswith(".tsv"):
        from dlperf.cli import main

        assert main(["diff", str(table), str(table)]) == 2
        assert f"{table}:1: the header is one field" in capsys.readouterr().err


def test_a_table_saved_as_utf16_says_to_save_it_as_utf8(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was "not a readable table: 'utf-8' codec can't decode byte 0xff in position 0: invalid
    start byte" of a table a spreadsheet saved as "Unicode text" (UTF-16), saying nothing to do."""
    table = tmp_path / "published.tsv"
    table.write_text(f"{HEADER}{ONE}\tok\t100\t\t\n", encoding="utf-16")
    assert report(tmp_path, table, capsys) == (
        f"dlperf: {table}: not a readable table: not UTF-8 text (invalid start byte at byte 0); "
        "save it as UTF-8"
    )
