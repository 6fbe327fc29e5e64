"""config/dlperf_v1.yaml: the DLPerf v1.0 report's whole matrix, valid, expandable and plannable."""

from __future__ import annotations

import fnmatch
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from workflow_helpers import dlperf_check

from dlperf.adapters import TaskContext, get_adapter
from dlperf.config import Suite

ROOT = Path(__file__).resolve().parents[1]
SUITE_FILE = ROOT / "config" / "dlperf_v1.yaml"
LAYOUTS = ("1n1g", "1n8g", "2n8g", "4n8g")
# Per layout: ResNet-50 FP32 (8 frameworks) + AMP (7 frameworks, NGC TF with and without XLA)
# + BERT FP32 b32/max (6 columns) + AMP b64/max (7 columns, NGC TF with and without XLA).
PER_LAYOUT = 8 + 8 + 6 * 2 + 7 * 2


def test_protocol(suite: Suite):
    config = suite.config
    assert suite.repeats == 7
    assert config["window"] == {"warmup": 20, "measure": 100}
    assert "backend" not in load_raw()  # the profile (or --config) chooses it


def load_raw() -> dict:
    import yaml

    return yaml.safe_load(SUITE_FILE.read_text())


def test_counts_per_layout(cells: dict):
    per_layout = Counter(spec.cell.layout for spec in cells.values())
    assert {str(k): v for k, v in per_layout.items()} == {layout: PER_LAYOUT for layout in LAYOUTS}
    assert len(cells) == 4 * PER_LAYOUT == 168


def test_every_cell_exists_at_every_layout(cells: dict):
    stems = Counter(cell_id.rsplit(".", 1)[0] for cell_id in cells)
    assert set(stems.values()) == {4}


def test_resnet50_columns(cells: dict):
    fp32 = {
        s.cell.framework
        for s in cells.values()
        if s.cell.model == "resnet50" and s.cell.precision == "fp32"
    }
    assert fp32 == {
        "oneflow",
        "ngc_mxnet",
        "ngc_tensorflow",
        "ngc_pytorch",
        "mxnet_gluoncv",
        "tensorflow2",
        "pytorch_examples",
        "paddle",
    }
    assert all(
        s.cell.batch_size == 128
        for s in cells.values()
        if s.cell.model == "resnet50" and s.cell.precision == "fp32"
    )
    amp = {
        (s.cell.framework, s.cell.batch_size, s.cell.xla)
        for s in cells.values()
        if s.cell.model == "resnet50" and s.cell.precision == "amp"
    }
    assert amp == {
        ("oneflow", 256, False),
        ("ngc_mxnet", 256, False),
        ("ngc_pytorch", 256, False),
        ("mxnet_gluoncv", 256, False),
        ("tensorflow2", 256, False),
        ("ngc_tensorflow", 224, True),
        ("ngc_tensorflow", 224, False),
        ("paddle", 196, False),
    }


@pytest.mark.parametrize(
    "cell_id",
    [
        "ngc_tensorflow.resnet50.amp.xla.b224.4n8g",
        "ngc_tensorflow.resnet50.amp.noxla.b224.4n8g",
        "ngc_tensorflow.resnet50.fp32.noxla.b128.1n1g",
        "paddle.resnet50.amp.noxla.b196.1n1g",
        "pytorch_examples.resnet50.fp32.noxla.b128.2n8g",
        "oneflow.bert_base.fp32.noxla.b32.1n8g",
        "oneflow.bert_base.fp32.noxla.bmax-noclip.4n8g",
        "oneflow.bert_base.amp.noxla.b64-noclip.2n8g",
        "mxnet_gluonnlp.bert_base.fp32.noxla.b32-noclip.2n8g",
        "mxnet_gluonnlp.bert_base.amp.noxla.bmax-noclip.1n1g",
        "ngc_tensorflow.bert_base.amp.xla.bmax.4n8g",
        "ngc_tensorflow.bert_base.amp.noxla.b64.1n1g",
        "ngc_pytorch.bert_base.fp32.noxla.bmax.2n8g",
        "paddle.bert_base.amp.noxla.bmax.1n8g",
    ],
)
def test_specific_cells(cells: dict, cell_id: str):
    assert cell_id in cells


def test_paddle_amp_uses_dali_and_fp32_does_not(cells: dict):
    assert cells["paddle.resnet50.amp.noxla.b196.1n1g"].options["dali"] is True
    assert cells["paddle.resnet50.fp32.noxla.b128.1n1g"].options.get("dali", False) is False


def test_no_bert_without_clip_except_where_the_report_had_it(cells: dict):
    noclip = {s.cell.framework for s in cells.values() if s.cell.variant == "noclip"}
    assert noclip == {"oneflow", "mxnet_gluonnlp"}
    assert not any(
        s.cell.framework == "mxnet_gluonnlp" and s.cell.variant == "default" for s in cells.values()
    )


def test_max_batch_sizes_are_dlperfs(cells: dict):
    expected = {
        ("oneflow", "fp32", False): 96,
        ("oneflow", "amp", False): 160,
        ("ngc_tensorflow", "fp32", False): 48,
        ("ngc_tensorflow", "amp", False): 64,
        ("ngc_tensorflow", "amp", True): 96,
        ("ngc_pytorch", "fp32", False): 48,
        ("ngc_pytorch", "amp", False): 96,
        ("paddle", "fp32", False): 96,
        ("paddle", "amp", False): 160,
        ("mxnet_gluonnlp", "fp32", False): 64,
        ("mxnet_gluonnlp", "amp", False): 128,
    }
    seen = {}
    for spec in cells.values():
        cell = spec.cell
        if cell.batch_size == "max":
            adapter = get_adapter(cell.framework)
            seen[cell.framework, cell.precision, cell.xla] = adapter.batch_size(
                cell, adapter.resolved_options(spec.options)
            )
    assert seen == expected


def test_every_footnote_names_cells(cells: dict, suite: Suite):
    footnotes = suite.config["report"]["footnotes"]
    assert footnotes
    for pattern in footnotes:
        assert fnmatch.filter(cells, pattern), f"footnote {pattern!r} matches no cell"


def test_every_cell_builds_its_command(
    cells: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("SLURM_JOB_NODELIST", "node[1-4]")
    for spec in cells.values():
        cell = spec.cell
        adapter = get_adapter(cell.framework)
        options = adapter.resolved_options(spec.options)
        assert adapter.skip_reason(cell, options) is None, cell.id
        nodes, gpus = cell.layout.nodes, cell.layout.gpus_per_node
        ctx = TaskContext(
            cell,
            options,
            adapter.steps_for(20, 100),
            "cuda",
            0,
            0,
            nodes,
            gpus,
            "node1",
            29500,
            tmp_path,
        )
        cmd = adapter.command(ctx)
        assert cmd and all(isinstance(a, str) for a in cmd), cell.id


def test_dlperf_check_prints_jobs_per_layout():
    checked = dlperf_check(SUITE_FILE)
    assert checked.returncode == 0, checked.stderr
    out = checked.stdout
    per_layout = ", ".join(f"{layout}: {PER_LAYOUT * 7}" for layout in LAYOUTS)
    assert f"168 cells x 7 repeats = {168 * 7} runs ({per_layout})" in out


def test_snakemake_dry_run_plans_every_run(tmp_path: Path):
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "-s",
        str(ROOT / "Snakefile"),
        "--directory",
        str(tmp_path),
        "-n",
        "--quiet",
        "rules",
        "--configfile",
        str(SUITE_FILE),
        "--config",
        "backend=slurm",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    # Snakemake prints the job table twice
    runs = dict(re.findall(r"^(run_cell)\s+(\d+)$", out, re.M))
    assert runs == {"run_cell": str(168 * 7)}, out[-3000:]
    per_layout = ", ".join(f"{layout}: {PER_LAYOUT * 7}" for layout in LAYOUTS)
    assert f"dlperf plan: 168 cells x 7 repeats = 1176 runs ({per_layout})" in out
