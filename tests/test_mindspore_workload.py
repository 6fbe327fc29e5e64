"""The built-in MindSpore workload (MindCV ResNet-50, MindFormers BERT) and its adapter: what only
it states. What every built-in workload keeps (steps, FLOPs and memory lines, two ranks, a typo,
an out-of-memory) is test_workload_contract.py's, on the same runs (conftest.WorkloadRuns), in the
environment the workflow builds from envs/mindspore.txt."""

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

MODULE = "dlperf.workloads.mindspore_train"
PARAMS = {
    "resnet50": "23528522",
    "bert_base": "44194",
}  # MindCV's resnet50 at 10 classes: torchvision's count


def check_config(config: dict[str, str], model: str, graph: bool, amp: bool) -> None:
    assert (config["mindspore"], config["mindcv"], config["mindformers"]) == (
        "2.7.2", "0.3.0", "1.3.2",
    )  # fmt: skip
    assert config["mode"] == ("GRAPH_MODE" if graph else "PYNATIVE_MODE")
    assert config["amp_dtype"] == ("float16" if amp else "none")
    assert config["params"] == PARAMS[model]
    if model == "bert_base":
        assert '"num_hidden_layers":1' in config["model_config"]
        assert f'"compute_dtype":"{"Float16" if amp else "Float32"}"' in config["model_config"]


@pytest.mark.integration
@pytest.mark.frameworks
@pytest.mark.parametrize("model", ["resnet50", "bert_base"])
def test_config_line_states_versions_mode_and_model(
    model: str, workload_runs: WorkloadRuns
) -> None:
    run = workload_runs.tiny("mindspore_builtin", model).check_ok()
    check_config(run.config(), model, graph=False, amp=False)


@pytest.mark.integration
@pytest.mark.frameworks
def test_bert_trains_in_graph_mode_with_amp(workload_runs: WorkloadRuns) -> None:
    """The xla column on (GRAPH_MODE) and amp (float16, MindFormers' compute_dtype), in one run:
    the contract's runs are PYNATIVE_MODE and fp32."""
    adapter = get_adapter("mindspore_builtin")
    graph_amp = Cell("mindspore_builtin", "bert_base", "amp", True, 2, Layout(1, 1))
    run = workload_runs.run("mindspore_builtin", graph_amp, adapter.tiny["bert_base"]).check_ok()
    records = run.records()
    assert [r.step for r in records] == [1, 2, 3]
    assert {r.samples for r in records} == {2}
    check_config(run.config(), "bert_base", graph=True, amp=True)
    (memory,) = run.lines(logline.MEMORY)
    assert memory["rank"] == "0" and float(memory["peak_rss_mb"]) > 0


def test_adapter_command_and_features() -> None:
    adapter = get_adapter("mindspore_builtin")
    cell = Cell("mindspore_builtin", "bert_base", "fp32", True, 8, Layout(1, 2))
    ctx = TaskContext(
        cell=cell, options=adapter.resolved_options({}), steps=12, device="cpu", rank=0,
        node_rank=0, nodes=1, gpus_per_node=2, master_addr="127.0.0.1", master_port=29500,
        run_dir=Path("."), python="/envs/mindspore/bin/python",
    )  # fmt: skip
    command = adapter.command(ctx)
    assert command[:4] == ["/envs/mindspore/bin/python", "-u", "-m", MODULE]
    assert command[-1] == "--graph-mode"
    eager = Cell("mindspore_builtin", "bert_base", "fp32", False, 8, Layout(1, 2))
    assert "--graph-mode" not in adapter.command(ctx.__class__(**{**ctx.__dict__, "cell": eager}))
    assert adapter.requirements == "envs/mindspore.txt"
    assert is_oom("RuntimeError: Allocate output memory failed, alloc node:Default/Conv2D")
    assert is_oom("Device(id:0) memory isn't enough and alloc failed, kernel name: x")


@pytest.mark.parametrize(
    "model_config",
    ['{"model_type": "gpt3"}', '{"n_layers": 2}', '{"model_type": "llama", "n_layers": 2}'],
)
def test_the_gpt_workload_refuses_a_model_config_as_dlperf_check_does(model_config: str) -> None:
    """One rule, the workload's own (model_config_problem), says which GPT keys and families
    there are: dlperf check and the workload read the same words. Review: gpt_settings kept a
    copy of the family check and its own key check, which said another thing of a typo."""
    import argparse
    import json

    from dlperf.workloads import mindspore_networks

    args = argparse.Namespace(model="gpt", model_config=model_config, seq_len=32)
    problem = mindspore_networks.model_config_problem("gpt", json.loads(model_config))
    assert problem
    with pytest.raises(SystemExit) as err:
        mindspore_networks.gpt_settings(args)
    assert str(err.value) == f"dlperf: {problem}"


@pytest.mark.parametrize(
    ("model", "precision", "on_gpu", "capability", "context", "want", "matmul_want"),
    [  # MindSpore's defaults: conv_allow_tf32 true, matmul_allow_tf32 false
        ("resnet50", "fp32", True, (9, 0), {}, "tf32", "fp32"),
        ("bert_base", "fp32", True, (8, 0), {}, "fp32", "fp32"),
        ("gpt", "fp32", True, (9, 0), {"matmul_allow_tf32": True}, "tf32", "tf32"),
        ("resnet50", "fp32", True, (9, 0), {"conv_allow_tf32": False}, "fp32", "fp32"),
        ("resnet50", "fp32", True, (7, 0), {}, "fp32", "fp32"),  # a V100 has no TF32
        ("resnet50", "fp32", False, None, {}, "fp32", "fp32"),
        ("resnet50", "amp", True, (9, 0), {}, "fp16", "fp16"),
    ],
)
def test_an_fp32_cells_products_run_in_tf32_as_mindspores_context_allows(
    model: str,
    precision: str,
    on_gpu: bool,
    capability: tuple | None,
    context: dict,
    want: str,
    matmul_want: str,
) -> None:
    from types import SimpleNamespace

    from dlperf.workloads.mindspore_train import math_of

    settings = {"conv_allow_tf32": True, "matmul_allow_tf32": False, "device_id": 0} | context
    ms = SimpleNamespace(
        get_context=settings.__getitem__,
        hal=SimpleNamespace(get_device_capability=lambda device_id: capability),
    )
    args = SimpleNamespace(model=model, precision=precision)
    assert math_of(args, ms, on_gpu) == want
    assert math_of(args, ms, on_gpu, "matmul") == matmul_want
