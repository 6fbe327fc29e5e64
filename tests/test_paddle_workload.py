"""The built-in PaddlePaddle workload (paddle.vision ResNet-50, PaddleNLP BERT) and its adapter:
what only it states. What every built-in workload keeps (steps, FLOPs and memory lines, two ranks,
a typo, an out-of-memory) is test_workload_contract.py's, on the same runs
(conftest.WorkloadRuns), in the environment the workflow builds from envs/paddlepaddle.txt."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from dlperf import logline
from dlperf.adapters import TaskContext, get_adapter
from dlperf.launch.oom import is_oom
from dlperf.matrix import Cell, Layout

if TYPE_CHECKING:
    from conftest import WorkloadRuns


@pytest.mark.integration
@pytest.mark.frameworks
@pytest.mark.parametrize("model", ["resnet50", "bert_base"])
def test_config_line_states_versions_and_model(model: str, workload_runs: WorkloadRuns) -> None:
    config = workload_runs.tiny("paddlepaddle", model).check_ok().config()
    assert config["paddle"] == "3.3.1" and config["to_static"] == "False"
    if model == "bert_base":
        assert '"num_hidden_layers":1' in config["model_config"]
        assert config["paddlenlp"] == "2.8.1"
    else:
        assert config["params"] == "23581642"  # paddle.vision resnet50 with 10 classes


@pytest.mark.integration
@pytest.mark.frameworks
def test_bert_trains_under_to_static(workload_runs: WorkloadRuns) -> None:
    """The xla column on: paddle.jit.to_static (the contract's runs are dynamic graph)."""
    adapter = get_adapter("paddlepaddle")
    static = Cell("paddlepaddle", "bert_base", "fp32", True, 2, Layout(1, 1))
    run = workload_runs.run("paddlepaddle", static, adapter.tiny["bert_base"]).check_ok()
    records = run.records()
    assert [r.step for r in records] == [1, 2, 3]
    assert {r.samples for r in records} == {2}
    config = run.config()
    assert config["paddle"] == "3.3.1" and config["to_static"] == "True"
    assert '"num_hidden_layers":1' in config["model_config"]
    assert config["paddlenlp"] == "2.8.1"
    (memory,) = run.lines(logline.MEMORY)
    assert memory["rank"] == "0" and float(memory["peak_rss_mb"]) > 0


@pytest.mark.integration
@pytest.mark.frameworks
def test_a_model_config_typo_names_paddlenlps_config(workload_runs: WorkloadRuns) -> None:
    """Issue 20.10: PaddleNLP's BertConfig took `num_hiden_layers` and trained 12 layers (the
    contract's typo run)."""
    text = workload_runs.typo("paddlepaddle").text()
    assert "model_config: num_hiden_layers: not a field of PaddleNLP's BertConfig" in text


def test_adapter_command_and_features() -> None:
    adapter = get_adapter("paddlepaddle")
    cell = Cell("paddlepaddle", "bert_base", "fp32", True, 8, Layout(1, 2))
    ctx = TaskContext(
        cell=cell, options=adapter.resolved_options({}), steps=12, device="cpu", rank=0,
        node_rank=0, nodes=1, gpus_per_node=2, master_addr="127.0.0.1", master_port=29500,
        run_dir=Path("."), python="/envs/paddle/bin/python",
    )  # fmt: skip
    command = adapter.command(ctx)
    assert command[:4] == ["/envs/paddle/bin/python", "-u", "-m", "dlperf.workloads.paddle_train"]
    assert command[-1] == "--to-static"
    assert "--to-static" not in adapter.command(ctx.__class__(**{**ctx.__dict__, "cell": Cell(
        "paddlepaddle", "bert_base", "fp32", False, 8, Layout(1, 2))}))  # fmt: skip
    assert adapter.requirements == "envs/paddlepaddle.txt"
    assert is_oom("MemoryError: (ResourceExhausted) Fail to alloc memory of 205520896 size")


def test_resnet50_takes_no_model_config_its_flops_would_not_describe() -> None:
    """Review: model_config {"width": 16} reached paddle.vision's resnet50, which trained a
    ResNet of a quarter of the widths (5929546 parameters, not 23581642) under ResNet-50's stated
    FLOPs (5.00589e+08 per sample at 32 px): an MFU 4 times too high. Now refused by
    `dlperf check` and by the workload, naming the key."""
    from types import SimpleNamespace

    from dlperf.workloads import paddle_train

    adapter = get_adapter("paddlepaddle")
    problem = adapter.model_config_problem("resnet50", {"width": 16, "groups": 2})
    assert problem is not None and problem.startswith(
        "resnet50 takes no model_config keys: groups, width"
    )
    assert adapter.model_config_problem("resnet50", {}) is None
    assert adapter.model_config_problem("bert_base", {"num_hidden_layers": 1}) is None
    args = SimpleNamespace(model="resnet50", model_config='{"width": 16}', num_classes=10)
    with pytest.raises(SystemExit, match="dlperf: resnet50 takes no model_config keys: width"):
        paddle_train.build_model(args, paddle=None)  # refused before Paddle is needed


@pytest.mark.parametrize(
    ("model", "precision", "on_gpu", "capability", "switch", "want"),
    [
        ("bert_base", "fp32", True, (9, 0), True, "tf32"),  # Paddle's default on an H100
        ("resnet50", "fp32", True, (8, 0), True, "tf32"),
        ("gpt", "fp32", True, (9, 0), False, "fp32"),  # the cuBLAS switch turned off
        ("bert_base", "fp32", True, (7, 0), True, "fp32"),  # a V100 has no TF32
        ("bert_base", "fp32", False, None, True, "fp32"),
        ("bert_base", "amp", True, (9, 0), True, "fp16"),
        ("bert_base", "amp", False, None, True, "bf16"),
    ],
)
def test_an_fp32_cells_products_run_in_tf32_as_paddles_switches_allow(
    model: str, precision: str, on_gpu: bool, capability: tuple | None, switch: bool, want: str
) -> None:
    from types import SimpleNamespace

    from dlperf.workloads.paddle_train import math_of

    resnet = model == "resnet50"
    core = SimpleNamespace(
        get_cublas_switch=lambda: switch if not resnet else not switch,
        get_cudnn_switch=lambda: switch if resnet else not switch,
    )
    paddle = SimpleNamespace(
        base=SimpleNamespace(core=core),
        device=SimpleNamespace(cuda=SimpleNamespace(get_device_capability=lambda: capability)),
    )
    args = SimpleNamespace(model=model, precision=precision)
    assert math_of(args, paddle, on_gpu) == want


@pytest.mark.parametrize(("cudnn", "cublas", "model", "matmul"), [
    (True, False, "tf32", "fp32"),  # the peak would time fp32 products as ResNet-50's tf32 one
    (True, True, "tf32", "tf32"),
    (False, True, "fp32", "tf32"),
])  # fmt: skip
def test_the_calibrations_products_follow_cublas_whatever_the_model(
    cudnn: bool, cublas: bool, model: str, matmul: str
) -> None:
    """Review: ResNet-50's math follows cuDNN's switch, its calibration's paddle.matmul cuBLAS's;
    with them apart the peak was timed in another precision than the model's (an fp32 peak
    under math=tf32: an MFU about 7 times too high on an H100). The workload now measures a
    peak only where math_of(..., "matmul") equals the model's math."""
    from types import SimpleNamespace

    from dlperf.workloads.paddle_train import math_of

    core = SimpleNamespace(get_cublas_switch=lambda: cublas, get_cudnn_switch=lambda: cudnn)
    paddle = SimpleNamespace(
        base=SimpleNamespace(core=core),
        device=SimpleNamespace(cuda=SimpleNamespace(get_device_capability=lambda: (9, 0))),
    )
    args = SimpleNamespace(model="resnet50", precision="fp32")
    assert (math_of(args, paddle, True), math_of(args, paddle, True, "matmul")) == (model, matmul)
