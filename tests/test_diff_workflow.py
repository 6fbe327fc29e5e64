"""`dlperf diff` on two real results folders: the same tiny suite twice, B with a 32x longer sequence
(about 10x slower on an idle machine, so a loaded one keeps it apart) and one more environment
variable. Bad arguments give a message, never a traceback."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from workflow_helpers import snakemake, write_config

pytestmark = pytest.mark.integration
CELL = "pytorch.bert_base.fp32.noxla.b2.1n1g"


def suite(seq_len: int, env: dict[str, str]) -> dict:
    return {
        "name": "diff",
        "repeats": 5,  # 5 vs 5: two runs out of order still give p = 0.032 < 0.05
        "window": {"warmup": 2, "measure": 20},  # not a few ms that one preemption doubles
        "device": "cpu",
        "time_limit_min": 3,
        "report": {"languages": ["en"]},
        "site": {"env": env},
        "cases": [
            {
                "framework": "pytorch",
                "model": "bert_base",
                "batch_size": [2],
                "layouts": ["1n1g"],
                "options": {
                    "seq_len": seq_len,
                    "max_predictions": 3,
                    "threads": 1,
                    "model_config": {
                        "num_hidden_layers": 2,
                        "hidden_size": 64,
                        "num_attention_heads": 2,
                        "intermediate_size": 128,
                        "vocab_size": 512,
                    },
                },
            }
        ],
    }


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> tuple[Path, Path]:
    a, b = tmp_path_factory.mktemp("a"), tmp_path_factory.mktemp("b")
    write_config(a, suite(16, {}))
    write_config(b, suite(512, {"OMP_WAIT_POLICY": "PASSIVE"}))
    for workdir in (a, b):
        snakemake(workdir, "--cores", "2", "--configfile", "config.yaml")
    return a / "results", b / "results"


def diff(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "dlperf", "diff", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_diff_of_two_real_folders_shows_the_environment_then_the_regression(folders):
    a, b = folders
    proc = diff(a, b)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # a significant slow-down
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("environment (5 run manifests in A, 5 in B): ")
    header = next(i for i, x in enumerate(lines) if x.lstrip().startswith("cell_id"))
    env = "\n".join(lines[:header])
    assert "2 differences (A -> B)" in lines[0]
    assert re.search(r"measure\[pytorch.bert_base\].options.seq_len +16 -> 512", env)
    assert re.search(r"site.env.OMP_WAIT_POLICY +\(absent\) -> PASSIVE", env)
    assert "node.host" not in env and "workload[pytorch].torch" not in env  # the same on both
    row = next(x for x in lines if x.startswith(CELL))
    assert " 5 " in row and "slower REGRESSION" in row
    assert f"regressions: {CELL}" in proc.stdout
    same = diff(a, a)
    assert same.returncode == 0 and "no differences" in same.stdout
    assert "0 faster, 0 slower, 1 same" in same.stdout


def test_the_manifests_record_what_the_environment_section_compares(folders):
    import json

    a, _b = folders
    manifest = json.loads((a / f"runs/{CELL}/r1/manifest.json").read_text())
    assert manifest["site"]["env"] == {} and "partition" not in manifest["site"]
    node = next(iter(manifest["nodes"].values()))
    assert isinstance(node["env"], dict) and "CUDA_VISIBLE_DEVICES" not in node["env"]
    log = (a / f"runs/{CELL}/r1/rank0.log").read_text()
    assert "nccl=none" in log and "cudnn=" in log  # on CPU: said, not left out


@pytest.mark.parametrize(
    "bad, message",
    [
        (
            "runs/" + CELL,
            "is the folder of one cell (r<k>/manifest.json); expected a results folder",
        ),
        ("runs/" + CELL + "/r1", "is the folder of one run (manifest.json)"),
        ("tables", "is a tables folder; give its parent"),
        ("tables/nothing.tsv", "no such file or folder"),
        ("runs", "is a runs folder (<cell>/r<k>/); give its parent"),
    ],
)
def test_bad_arguments_name_the_path_and_what_was_expected(folders, bad, message):
    a, b = folders
    proc = diff(a / bad, b)
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert str(a / bad) in proc.stderr


def test_a_folder_whose_tables_were_never_made_says_so(folders, tmp_path):
    a, _b = folders
    (tmp_path / "tables").mkdir()
    proc = diff(a, tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"{tmp_path / 'tables' / 'runs.tsv'}: no such file; expected a runs table" in proc.stderr
