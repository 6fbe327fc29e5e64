"""Layouts, cells and their ids."""

from __future__ import annotations

import re

import pytest

from dlperf.matrix import CELL_ID_RE, Cell, Layout, expand_case


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
