"""The CLI's answer to bad input: an error naming the file, option or key (exit 2, no
traceback), and nothing already measured deleted or overwritten."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dlperf.cli import main

V1_TSV = Path(__file__).resolve().parents[1] / "config/baselines/dlperf_v1.0.tsv"
CELL = {
    "framework": "pytorch",
    "model": "resnet50",
    "precision": "fp32",
    "xla": False,
    "batch_size": 2,
    "layout": "1n1g",
}
MEASURE = {"cell": CELL, "device": "cpu", "options": {}, "steps": 4}
HARNESS = {"backend": "local", "site": {}, "time_limit_min": 1, "wait_grace_s": 1}


def _run_cell(manifest, measure=MEASURE, harness=HARNESS):
    return main(
        [
            "run-cell",
            "--measure",
            measure if isinstance(measure, str) else json.dumps(measure),
            "--harness",
            harness if isinstance(harness, str) else json.dumps(harness),
            "--manifest",
            str(manifest),
        ]
    )


def test_run_cell_refuses_a_manifest_already_there_and_keeps_the_run(tmp_path, capsys):
    """Review: run-cell rmtree'd the run's folder and retracted its figures whenever called, on
    the word that Snakemake had removed the manifest first; a hand-typed call on a measured run
    destroyed it. Now the CLI refuses a manifest that exists, and the folder stays."""
    run = tmp_path / "results" / "runs" / "pytorch.resnet50.fp32.noxla.b2.1n1g" / "r1"
    run.mkdir(parents=True)
    manifest = run / "manifest.json"
    manifest.write_text(json.dumps({"status": "ok"}))
    (run / "task0.log").write_text("measured\n")
    assert _run_cell(manifest) == 2
    err = capsys.readouterr().err
    assert f"--manifest {manifest}: already measured (status ok); delete it to redo" in err
    assert manifest.is_file() and (run / "task0.log").read_text() == "measured\n"


@pytest.mark.parametrize(
    ("measure", "harness", "message"),
    [
        ("{not json", HARNESS, "run-cell --measure: not JSON:"),
        ("[1]", HARNESS, "run-cell --measure: not a JSON object: [1]"),
        ({"cell": CELL, "device": "cpu"}, HARNESS, "run-cell --measure: no key 'options', 'steps'"),
        ({**MEASURE, "cell": {"model": "x"}}, HARNESS, "run-cell --measure's cell: no cell of"),
        (MEASURE, "{", "run-cell --harness: not JSON:"),
        (MEASURE, {"backend": "local"}, "run-cell --harness: Harness.__init__() missing 3"),
        (
            MEASURE,
            {**HARNESS, "sitee": {}},
            "run-cell --harness: Harness.__init__() got an unexpected keyword argument 'sitee'",
        ),
    ],
)
def test_run_cell_names_the_option_of_malformed_json_or_a_missing_key(
    tmp_path, capsys, measure, harness, message
):
    """Review: malformed --measure/--harness JSON, or one without a key run_cell reads, ended
    in a JSONDecodeError, KeyError or TypeError traceback instead of an error naming the option."""
    manifest = tmp_path / "runs" / "pytorch.resnet50.fp32.noxla.b2.1n1g" / "r1" / "manifest.json"
    assert _run_cell(manifest, measure, harness) == 2
    assert message in capsys.readouterr().err
    assert not manifest.parent.exists()


@pytest.mark.parametrize("out", [".", "report", "report/en", "plots"])
def test_report_refuses_an_out_in_a_workflow_results_folder(tmp_path, capsys, out):
    """Review: `dlperf report CELLS --out results/report` (or `--out results`) overwrote the
    workflow's measured report with a cells-only one, silently. An --out that is a results
    folder (runs/ and tables/cells.tsv), or one or two levels inside one, is refused."""
    results = tmp_path / "results"
    (results / "runs").mkdir(parents=True)
    (results / "tables").mkdir()
    (results / "tables" / "cells.tsv").write_text("cell\n")
    (results / "report").mkdir()
    measured = results / "report" / "report.en.md"
    measured.write_text("measured\n")
    assert main(["report", str(V1_TSV), "--out", str(results / out)]) == 2
    err = capsys.readouterr().err
    assert "the workflow's results folder" in err and "give another folder" in err
    assert measured.read_text() == "measured\n"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--cases", "1,x"], "--cases: 'x' is not a whole number of at least 1"),
        (["--cases", "99"], "--cases [99]: the suite has cases 1 to"),
        (["--repeats", "0"], "--repeats: '0' is not a whole number of at least 1"),
        (["--budget-s", "nan"], "--budget-s: 'nan' is not a finite number"),
        (["--budget-s", "0"], "--budget-s: 0 must be above 0"),
        (["--suite", "{suite}"], "bad.yaml"),
    ],
)
def test_gpu_proof_refuses_bad_options_with_exit_2_naming_them(tmp_path, capsys, options, message):
    """Review: gpu-proof ran before the CLI's ConfigError handling and read its options loosely:
    `--cases 1,x` was a ValueError traceback, a bad --suite a ConfigError traceback, `--repeats 0`
    an error naming an internal suite.check.yaml, `--cases 99` exit 1, and `--budget-s nan`
    switched the budget off (no time compares below NaN). Each is now exit 2 naming the option."""
    suite = tmp_path / "bad.yaml"
    suite.write_text("repeats: 1\nrepeats: 2\n")
    options = [o.format(suite=suite) for o in options]
    argv = ["gpu-proof", "--out", str(tmp_path / "out"), "--work", str(tmp_path / "w"), "--tiny"]
    try:
        code = main([*argv, *options])
    except SystemExit as exit_:  # argparse's own error
        code = exit_.code
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


BAD_OPTION = """cases:
  - framework: pytorch
    model: resnet50
    batch_size: [8]
    layouts: [1n1g]
    options:
      threads: abc
"""
BAD_FRAMEWORK = (
    "cases:\n  - {framework: pytorchh, model: resnet50, batch_size: [8], layouts: [1n1g]}\n"
)


@pytest.mark.parametrize(
    ("text", "flags", "message"),
    [
        (BAD_OPTION, [], "{suite}:7: cases[0].options.threads: 'abc' is not of type 'integer'"),
        (BAD_OPTION, ["--tiny"], "{suite}:7: cases[0].options.threads: 'abc' is not of type"),
        (BAD_FRAMEWORK, ["--tiny"], "{suite}:2: cases[0].framework: 'pytorchh' is not one of"),
        (BAD_FRAMEWORK, [], "{suite}:2: cases[0].framework: 'pytorchh' is not one of"),
        ("", ["--repeats", "5000"], "--repeats 5000: repeats: 5000 is greater than the maximum"),
    ],
)
def test_gpu_proof_suite_errors_name_the_users_file_and_line_or_the_flag(
    tmp_path, capsys, text, flags, message
):
    """Review: gpu-proof checked its suite by writing it to <work>/<gpu>/suite.check.yaml and
    loading that, so a mistake in the user's --suite named the scratch file and its line
    (`.../cpu/suite.check.yaml:9: cases[0].options.threads`, the file's line 7), a --tiny run
    with a misspelt framework named no file at all, and `--repeats 5000` named line 2 of the
    scratch file. The file is now checked as written, then as the flags changed it."""
    suite = tmp_path / "mine.yaml"
    suite.write_text(text or BAD_OPTION.replace("threads: abc", "threads: 1"))
    work = tmp_path / "w"
    argv = ["gpu-proof", "--out", str(tmp_path / "out"), "--work", str(work), "--suite", str(suite)]
    assert main([*argv, *flags]) == 2
    err = capsys.readouterr().err
    assert message.format(suite=suite) in err
    assert "suite.check.yaml" not in err and "Traceback" not in err
    assert not list(work.glob("*/suite.check.yaml"))


@pytest.mark.parametrize("inside", [False, True])
def test_gpu_proof_out_that_is_a_file_is_refused_before_any_case(tmp_path, capsys, inside):
    """Review: `gpu-proof --out FILE` ran its cases (112 s for one tiny case here, minutes of a
    GPU session), then ended in a FileExistsError traceback at the first packing. --out is now
    made (or refused, naming it) before any case runs; the file is left as it was."""
    taken = tmp_path / "taken.txt"
    taken.write_text("mine\n")
    out = taken / "proof" if inside else taken
    work = tmp_path / "w"
    argv = ["gpu-proof", "--out", str(out), "--work", str(work), "--tiny", "--budget-s", "1"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    where = f"is inside {taken}, a file" if inside else "is a file"
    assert f"dlperf gpu-proof: --out {out}: {where}; give a folder this user can write" in err
    assert "Traceback" not in err
    assert taken.read_text() == "mine\n"
    assert not list(work.glob("*/results/runs"))


def test_sources_into_a_file_is_an_error_naming_the_path(tmp_path, capsys):
    """Review: `dlperf sources SUITE --into /dev/null` (or any file) ended in a FileExistsError
    traceback; an OSError while placing is now exit 2 naming --into and the path."""
    into = tmp_path / "a_file"
    into.write_text("kept\n")
    suite = Path(__file__).resolve().parents[1] / "config" / "gpu.yaml"
    assert main(["sources", str(suite), "--into", str(into), "--from", "file:///nowhere"]) == 2
    assert f"sources --into {into}: " in capsys.readouterr().err
    assert into.read_text() == "kept\n"


def test_plan_results_given_a_table_says_it_is_a_file(tmp_path, capsys):
    """Was "--results .../tables/cells.tsv: no such folder", of a file that is there."""
    table = tmp_path / "results" / "tables" / "cells.tsv"
    table.parent.mkdir(parents=True)
    table.write_text("cell_id\n")
    with pytest.raises(SystemExit) as exit_:
        main(["plan", "config/config.yaml", "--results", str(table)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert (
        f"argument --results: {table}: is a file; give the results folder (the folder that "
        "holds runs/ and tables/)"
    ) in err


def test_gpu_proof_help_says_its_whole_first_paragraph(capsys):
    """Its description stopped mid-sentence: "..., the plain-loop references beside it, and"."""
    with pytest.raises(SystemExit):
        main(["gpu-proof", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "beside it, and pack the report, tables and logs into at most eight files." in out


@pytest.mark.parametrize("command", ["check", "plan"])
def test_a_missing_suite_names_only_the_suite_as_required(capsys, command):
    """Was "the following arguments are required: config, more": the files merged over the
    suite (a site file) are optional, and `dlperf check suite.yaml` runs without them."""
    with pytest.raises(SystemExit) as exit_:
        main([command])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.rstrip().endswith(
        f"dlperf {command}: error: the following arguments are required: config"
    )


def test_run_cell_that_cannot_write_its_record_says_so_and_keeps_the_logs(
    tmp_path, capsys, monkeypatch
):
    """Review: with results/ on a full disk, a run that trained ended run-cell in an OSError
    traceback ("[Errno 28] No space left on device") from the manifest's write. Now exit 1
    naming the file, saying the run is redone, and its logs stay where they are."""
    import errno

    run = tmp_path / "runs" / "pytorch.resnet50.fp32.noxla.b2.1n1g" / "r1"
    manifest = run / "manifest.json"

    def full_disk(measure, repeat, harness, manifest_path):
        run.mkdir(parents=True)
        (run / "rank0.log").write_text("dlperf-step rank=0 step=1\n")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("dlperf.launch.submit.run_cell", full_disk)
    assert _run_cell(manifest) == 1
    err = capsys.readouterr().err
    assert err.strip() == (
        f"dlperf run-cell: {manifest}: No space left on device; the run has no manifest, so the "
        f"next invocation redoes it (what it logged is in {run} until then)"
    )
    assert (run / "rank0.log").read_text() == "dlperf-step rank=0 step=1\n"
