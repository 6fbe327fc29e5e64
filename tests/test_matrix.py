"""Layouts, cells and their ids."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from dlperf.matrix import CELL_ID_RE, Cell, Layout, expand_case

ROOT = Path(__file__).resolve().parents[1]


def test_layout_parse_and_devices():
    layout = Layout.parse("4n8g")
    assert (layout.nodes, layout.gpus_per_node, layout.devices) == (4, 8, 32)
    assert str(Layout.parse("12n8g")) == "12n8g"  # DLPerf's path scheme broke past 9 nodes
    with pytest.raises(ValueError, match="not of the form NnGg"):
        Layout.parse("0n8g")


def test_cell_id_is_readable_stable_and_safe():
    cell = Cell("ngc_tensorflow", "resnet50", "amp", True, 224, Layout(2, 8))
    assert cell.id == "ngc_tensorflow.resnet50.amp.xla.b224.2n8g"
    assert re.fullmatch(CELL_ID_RE, cell.id)
    noclip = Cell("oneflow", "bert_base", "fp32", False, "max", Layout(1, 1), "noclip")
    assert noclip.id == "oneflow.bert_base.fp32.noxla.bmax-noclip.1n1g"
    assert re.fullmatch(CELL_ID_RE, noclip.id)
    assert not re.fullmatch(CELL_ID_RE, "../etc.passwd.a.b.c.d")


def test_baseline_is_same_cell_at_1n1g():
    cell = Cell("pytorch", "bert_base", "fp32", False, 32, Layout(4, 8))
    assert cell.baseline.id == "pytorch.bert_base.fp32.noxla.b32.1n1g"


def test_expand_case_is_the_product_with_precision_options():
    case = {
        "framework": "paddle",
        "model": "resnet50",
        "precision": ["fp32", "amp"],
        "xla": [False],
        "batch_size": [128, 196],
        "layouts": ["1n1g", "1n8g", "2n8g"],
        "options": {"a": 1},
        "precision_options": {"amp": {"dali": True}},
    }
    specs = expand_case(case)
    assert len(specs) == 2 * 2 * 3
    amp = next(s for s in specs if s.cell.precision == "amp")
    fp32 = next(s for s in specs if s.cell.precision == "fp32")
    assert amp.options == {"a": 1, "dali": True}
    assert fp32.options == {"a": 1}


def test_apptainer_wraps_the_command_pyxis_does_not():
    from dlperf.launch.task import in_container

    cmd = ["python", "train.py", "--batch-size", "8"]
    assert in_container(cmd, None) == cmd
    assert (
        in_container(cmd, {"runtime": "pyxis", "image": "nvcr.io/nvidia/pytorch:20.03-py3"}) == cmd
    )
    wrapped = in_container(
        cmd, {"runtime": "apptainer", "image": "/sif/pt.sif", "mounts": ["/data:/data"]}
    )
    assert wrapped == ["apptainer", "exec", "--nv", "--bind=/data:/data", "/sif/pt.sif", *cmd]


def test_cell_ids_parse_back_to_their_cell():
    from dlperf.matrix import Cell, Layout

    cell = Cell("pytorch", "bert_base", "amp", True, 64, Layout(2, 8), "noclip")
    assert cell.id == "pytorch.bert_base.amp.xla.b64-noclip.2n8g"
    assert Cell.parse(cell.id) == cell
    assert Cell.parse("oneflow.resnet50.fp32.noxla.bmax.12n8g").layout == Layout(12, 8)
    assert Cell.parse(cell.id).baseline.id == "pytorch.bert_base.amp.xla.b64-noclip.1n1g"
    assert cell.group_id == "bert_base.amp.xla.b64-noclip"
    assert Cell.from_key(cell.key()) == cell
    for bad in ("pytorch.resnet50.fp32.noxla.b8", "../x.a.b.xla.b1.1n1g", "a.b.c.xla.b1.1n1g\n"):
        with pytest.raises(ValueError, match="is not a cell id"):
            Cell.parse(bad)


def test_layouts_sort_by_devices_then_nodes():
    from dlperf.matrix import Layout

    layouts = [Layout.parse(t) for t in ("4n8g", "1n8g", "2n1g", "1n2g", "1n1g", "2n8g")]
    assert [str(x) for x in sorted(layouts)] == ["1n1g", "1n2g", "2n1g", "1n8g", "2n8g", "4n8g"]


def test_the_local_backend_refuses_more_ranks_than_the_machine_has():
    from dlperf.adapters import Launcher
    from dlperf.launch.allocation import AllocationError, LocalMachine, allocate
    from dlperf.matrix import Cell

    site = {"nodes_max": 64, "gpus_per_node_max": 8, "cpus_per_task": 1, "request_gpus": True}
    two_cpus = LocalMachine(2, "CPUs")
    cell = Cell.parse("pytorch.resnet50.fp32.noxla.b8.1n2g")
    assert allocate(cell, Launcher.PER_DEVICE, "local", site, two_cpus).tasks_per_node == 2
    big = Cell.parse("pytorch.resnet50.fp32.noxla.b8.1n999g")
    with pytest.raises(
        AllocationError, match="runs 999 ranks, one per device; this machine has 2 CPUs"
    ):
        allocate(big, Launcher.PER_DEVICE, "local", site, two_cpus)
    assert LocalMachine.probe("cpu").kind == "CPUs"


def test_the_local_backend_hands_its_gpus_to_the_job():
    """submitit's local executor hides every GPU from a job that asks for none (seen on an H100:
    every local CUDA run failed with 'torch sees no CUDA device')."""
    from dlperf.adapters import Launcher
    from dlperf.launch.allocation import LocalMachine, allocate
    from dlperf.matrix import Cell

    site = {"nodes_max": 64, "gpus_per_node_max": 8, "cpus_per_task": 1, "request_gpus": True}
    cell = Cell.parse("pytorch.resnet50.amp.noxla.b256.1n2g")
    on_gpus = allocate(cell, Launcher.PER_DEVICE, "local", site, LocalMachine(2, "GPUs"))
    assert (on_gpus.gpus_per_node, on_gpus.tasks_per_node) == (2, 2)
    on_cpus = allocate(cell, Launcher.PER_DEVICE, "local", site, LocalMachine(2, "CPUs"))
    assert on_cpus.gpus_per_node == 0


def test_the_driver_cuda_version_is_read_from_nvidia_smi_header():
    """The header's first colon is the driver's version (580.159.04 was recorded as the CUDA
    version on an H100 before)."""
    from dlperf.launch.facts import driver_cuda_version

    header = "| NVIDIA-SMI 580.159.04             Driver Version: 580.159.04     CUDA Version: 13.0     |"
    assert driver_cuda_version(header) == "13.0"
    assert driver_cuda_version("no GPU here") is None


def test_node_facts_keep_no_terminal_styling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """`nvidia-smi topo -m` on an H100 (driver 580.159.04) underlined its header with escape
    codes even into a pipe; they reached proof.md and the report as raw bytes."""
    from dlperf.launch.facts import node_facts

    fake = tmp_path / "nvidia-smi"
    fake.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = topo ]; then printf "\\033[4mGPU0\\tCPU Affinity\\033[0m\\nGPU0\\t X \\t0-15\\n"; '
        'else echo "| NVIDIA-SMI 580.159.04  Driver Version: 580.159.04  CUDA Version: 13.0 |"; fi\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    facts = node_facts()
    assert facts["topology"] == "GPU0\tCPU Affinity\nGPU0\t X \t0-15"
    assert facts["cuda_driver_version"] == "13.0"


def test_a_swept_option_names_its_cells_and_sets_their_option():
    """Issue 17.1: each value of a swept option is its own cell, the value readable in the id."""
    case = {
        "framework": "hugectr",
        "model": "wide_deep",
        "precision": ["fp32"],
        "xla": [False],
        "batch_size": [16384],
        "layouts": ["4n8g"],
        "variant": "noclip",
        "options": {"hidden_units_num": 7},
        "sweep": {"vocab_size": [3200000, 6400000], "sample_rate": [0.1]},
    }
    specs = expand_case(case)
    assert [s.id for s in specs] == [
        "hugectr.wide_deep.fp32.noxla.b16384-noclip_vocab_size_3200000_sample_rate_0p1.4n8g",
        "hugectr.wide_deep.fp32.noxla.b16384-noclip_vocab_size_6400000_sample_rate_0p1.4n8g",
    ]
    assert all(re.fullmatch(CELL_ID_RE, s.id) and Cell.parse(s.id) == s.cell for s in specs)
    assert specs[1].options == {"hidden_units_num": 7, "vocab_size": 6400000, "sample_rate": 0.1}
    assert specs[1].swept == {"vocab_size": 6400000, "sample_rate": 0.1}


def test_changing_one_swept_value_changes_only_its_cells_measure():
    """A new value is a new cell; every other value's cell keeps its measure (it is not rerun)."""
    from dlperf.config import load
    from dlperf.launch.measured import measure_digests
    from dlperf.matrix import CellSpec

    def digests(values: list[int]) -> dict[str, str]:
        config = load(
            ROOT / "config" / "config.yaml",
            overrides={"cases": [_sweep_case(values)]},
        )
        specs: list[CellSpec] = [s for case in config["cases"] for s in expand_case(case)]
        return measure_digests(specs, config)

    before, after = digests([10, 20]), digests([10, 30])
    assert set(before) ^ set(after) == {
        "pytorch.resnet50.fp32.noxla.b2-num_classes_20.1n1g",
        "pytorch.resnet50.fp32.noxla.b2-num_classes_30.1n1g",
    }
    same = "pytorch.resnet50.fp32.noxla.b2-num_classes_10.1n1g"
    assert before[same] == after[same]


def _sweep_case(values: list[int]) -> dict:
    return {
        "framework": "pytorch",
        "model": "resnet50",
        "batch_size": [2],
        "layouts": ["1n1g"],
        "sweep": {"num_classes": values},
    }


def test_a_swept_option_is_checked_like_an_option_naming_file_and_line(tmp_path):
    from dlperf.config import load
    from dlperf.errors import ConfigError

    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "name: s\ncases:\n  - framework: pytorch\n    model: resnet50\n    batch_size: [2]\n"
        "    layouts: [1n1g]\n    sweep: {num_classes: [10, 0]}\n"
    )
    with pytest.raises(
        ConfigError, match=r"suite.yaml:7: cases\[0\]\.sweep\.num_classes: 0 is less"
    ):
        load(suite)
    suite.write_text(suite.read_text().replace("num_classes", "num_clases"))
    with pytest.raises(ConfigError, match=r"sweep\.num_clases: unknown option of pytorch"):
        load(suite)
