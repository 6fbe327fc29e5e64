"""The built-in JAX workload (KerasHub models on Keras 3's JAX backend) and its adapter `jax`: what
only it states. What every built-in workload keeps (steps, FLOPs and memory lines, two ranks, a
typo, an out-of-memory) is test_workload_contract.py's, on the same runs (conftest.WorkloadRuns),
in the environment the workflow builds from envs/jax.txt.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from dlperf import flops, logline
from dlperf.adapters import TaskContext, get_adapter
from dlperf.errors import ConfigError
from dlperf.matrix import Cell, Layout
from dlperf.workloads import keras_config

if TYPE_CHECKING:
    from conftest import WorkloadRuns

# Llama at toy sizes (grouped-query attention), in transformers' LlamaConfig names, as the pytorch
# workload's; GPT-2's are the adapter's tiny configuration
LLAMA_TINY = {
    "model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
    "num_key_value_heads": 2, "intermediate_size": 172, "vocab_size": 1000,
}  # fmt: skip


@pytest.mark.integration
@pytest.mark.frameworks
@pytest.mark.parametrize("model", ["resnet50", "bert_base"])
def test_config_line_names_jax_and_keras_hub(model: str, workload_runs: WorkloadRuns) -> None:
    config = workload_runs.tiny("jax", model).check_ok().config()
    assert config["jax"] and config["keras_hub"] and config["xla"] == "jit"
    assert config["model_config"].startswith("{")


def keras_hub_gpt_params(config: dict[str, int | str], positions: int = 1024) -> int:
    """count_params() of KerasHub's GPT2CausalLM or LlamaCausalLM of these (transformers) sizes:
    dlperf.flops' matmul weights (the LM head among them) and what they leave out. GPT-2 ties its
    LM head to the token embedding (no V x h more) and adds a position table, biases and layer
    norms; Llama's head is a matrix of its own (untied: the embedding's V x h more), RMSNorms."""
    shape = flops.DecoderShape.from_config(config)
    h, i, layers = shape.hidden_size, shape.intermediate_size, shape.num_layers
    if shape.gated_mlp:
        return shape.matmul_params + shape.vocab_size * h + (2 * layers + 1) * h
    biases_and_norms = layers * (3 * h + h + i + h + 4 * h) + 2 * h
    return shape.matmul_params + positions * h + biases_and_norms


@pytest.mark.integration
@pytest.mark.frameworks
@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_gpt_trains_with_the_decoder_flops(family: str, workload_runs: WorkloadRuns) -> None:
    """KerasHub's GPT-2 (fp32: the contract's run of the tiny configuration) and Llama (amp:
    mixed_bfloat16) at toy sizes: finite next-token losses, dlperf.flops' decoder formula on the
    flops line, and the parameters it counts."""
    adapter = get_adapter("jax")
    if family == "gpt2":
        run = workload_runs.tiny("jax", "gpt")
    else:
        amp = Cell("jax", "gpt", "amp", True, 2, Layout(1, 1))
        run = workload_runs.run("jax", amp, adapter.tiny["gpt"] | {"model_config": LLAMA_TINY})
    run.check_ok()
    config = run.options["model_config"]
    losses = [float(fields["loss"]) for fields in run.lines(logline.STEP)]
    assert len(losses) == 3 and all(math.isfinite(x) for x in losses)
    assert abs(losses[0] - math.log(1000)) < 0.5  # random init: about uniform over the vocabulary
    (stated,) = run.lines(logline.FLOPS)
    shape = flops.DecoderShape.from_config(config)
    expected = flops.decoder_training_flops_per_sequence(shape, run.options["seq_len"])
    assert float(stated["per_sample"]) == pytest.approx(expected, rel=1e-5)
    assert stated["math"] == ("bf16" if run.cell.precision == "amp" else "fp32")
    fields = run.config()
    assert fields["model"] == "gpt" and int(fields["params"]) == keras_hub_gpt_params(config)
    assert json.loads(fields["model_config"])["model_type"] == family


def test_gpt_model_config_typo_is_refused() -> None:
    """The check the workload makes before it trains (the contract runs a BERT typo end to end)."""
    with pytest.raises(SystemExit, match=r"unknown gpt \(gpt2\) model_config key 'n_layers'"):
        keras_config.model_hyperparameters("gpt", {"n_layers": 2})


@pytest.mark.parametrize(
    ("other", "stated"),
    [
        ({}, True),
        ({"block_type": "basic_block"}, False),
        ({"input_conv_kernel_sizes": [3]}, False),
        ({"use_pre_activation": True}, True),  # ResNet v2: the same convolutions
    ],
)
def test_a_resnet_other_than_resnet50s_but_for_its_depths_states_no_flops(
    other: dict, stated: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review: model_config {"block_type": "basic_block"} built a ResNet of basic blocks
    (4916682 parameters, not 8055754, at the contract's depths) and its flops line still gave
    ResNet-50's bottleneck formula (1.79724e+08 per sample at 32 px). Only the depths may
    differ from ResNet-50's for the formula to stand (the JAX and TensorFlow workloads' line)."""
    import argparse

    from dlperf.workloads import keras_models

    overrides = {"depths": [1, 1, 1, 1]} | other
    args = argparse.Namespace(
        model="resnet50", model_config=json.dumps(overrides), image_size=32, num_classes=10,
        explain=True,
    )  # fmt: skip
    keras_models.log_flops(args, keras_models.model_configuration(args), "fp32")
    found = [logline.parse_line(line) for line in capsys.readouterr().out.splitlines()]
    per_sample = [fields["per_sample"] for kind, fields in filter(None, found) if kind == "flops"]
    formula = flops.resnet50_training_flops_per_sample(32, 10, (1, 1, 1, 1))
    assert per_sample == ([f"{formula:.6g}"] if stated else [])


def cell(xla: bool = True, precision: str = "fp32") -> Cell:
    return Cell("jax", "bert_base", precision, xla, 8, Layout(1, 2))


def test_adapter_command() -> None:
    adapter = get_adapter("jax")
    options = adapter.resolved_options({"seq_len": 64, "model_config": {"num_hidden_layers": 2}})
    ctx = TaskContext(
        cell=cell(), options=options, steps=15, device="cpu", rank=1, node_rank=0, nodes=1,
        gpus_per_node=2, master_addr="127.0.0.1", master_port=29500, run_dir=Path("."),
    )  # fmt: skip
    command = adapter.command(ctx)
    assert command[:4] == [sys.executable, "-u", "-m", "dlperf.workloads.jax_train"]  # ctx.python
    flags = dict(zip(command[4::2], command[5::2], strict=True))
    assert flags["--model"] == "bert_base" and flags["--batch-size"] == "8"
    assert flags["--steps"] == "15" and flags["--seq-len"] == "64"
    assert flags["--model-config"] == '{"num_hidden_layers": 2}'


def test_adapter_runs_xla_on_only() -> None:
    adapter = get_adapter("jax")
    options = adapter.resolved_options({"amp_on_cpu": "run"})
    assert adapter.skip_reason(cell(xla=True), options) is None
    assert "XLA" in (adapter.skip_reason(cell(xla=False), options) or "")
    assert adapter.node_skip_reason(cell(precision="amp"), options) is None  # amp_on_cpu: run
    base = {"framework": "jax", "model": "bert_base", "batch_size": [8], "layouts": ["1n1g"]}
    adapter.check_case(base | {"xla": [False, True]})
    with pytest.raises(ConfigError, match=r"^\.xla: "):
        adapter.check_case(base | {"xla": [False]})
    with pytest.raises(ConfigError, match=r"^\.options\.depth: "):
        adapter.check_case(base | {"xla": [True], "options": {"depth": 3}})
    adapter.check_case(base | {"model": "gpt", "xla": [True], "options": {"seq_len": 64}})


def test_jax_allocates_gpu_memory_as_it_needs_it_unless_the_site_says_otherwise(monkeypatch):
    """Review: XLA preallocates 75% of a GPU, so a JAX cell's NVML used memory was the pool."""
    import argparse
    import os

    from dlperf.workloads.jax_train import setup_platform

    for name in ("XLA_PYTHON_CLIENT_PREALLOCATE", "JAX_PLATFORMS", "KERAS_BACKEND"):
        monkeypatch.setenv(name, "")  # recorded, so that what setup_platform sets is undone
        monkeypatch.delenv(name)
    setup_platform(argparse.Namespace(device="cuda", threads=0), 0, 1)
    assert os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "true")
    setup_platform(argparse.Namespace(device="cuda", threads=0), 0, 1)
    assert os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] == "true"
