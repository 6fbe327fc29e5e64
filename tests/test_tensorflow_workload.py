"""The built-in TensorFlow 2 workload (KerasHub models on Keras 3's TensorFlow backend) and its
adapter `tensorflow`: what only it states. What every built-in workload keeps (steps, FLOPs and
memory lines, two ranks, a typo, an out-of-memory) is test_workload_contract.py's, on the same runs
(conftest.WorkloadRuns), in the environment the workflow builds from envs/tensorflow.txt."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from dlperf import flops, logline
from dlperf.adapters import TaskContext, get_adapter
from dlperf.launch.oom import is_oom
from dlperf.matrix import Cell, Layout
from dlperf.workloads import keras_config, tf_train

if TYPE_CHECKING:
    from conftest import WorkloadRuns

# Llama at toy sizes (grouped-query attention), in transformers' LlamaConfig names, as the pytorch
# workload's; GPT-2's are the adapter's tiny configuration
LLAMA_TINY = {
    "model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
    "num_key_value_heads": 2, "intermediate_size": 172, "vocab_size": 1000,
}  # fmt: skip
# count_params() of the toy models: the same on the JAX backend (the same KerasHub models; its
# test derives GPT's from dlperf.flops' DecoderShape.matmul_params)
PARAMS = {"resnet50": "8055754", "bert_base": "77634", "gpt2": "229632", "llama": "218944"}


@pytest.mark.integration
@pytest.mark.frameworks
@pytest.mark.parametrize("model", ["resnet50", "bert_base"])
def test_config_line_states_versions_and_model(model: str, workload_runs: WorkloadRuns) -> None:
    config = workload_runs.tiny("tensorflow", model).check_ok().config()
    assert (config["tensorflow"], config["keras"], config["keras_hub"]) == (
        "2.21.0",
        "3.15.1",
        "0.32.0",
    )
    assert config["device"] == "cpu" and config["amp_dtype"] == "none"
    assert config["xla"] == "none"  # jit_compile: test_gpt_trains_with_the_decoder_flops[llama]
    assert config["params"] == PARAMS[model]
    if model == "bert_base":
        assert '"num_layers":1' in config["model_config"]
    else:
        assert '"stackwise_num_blocks":[1,1,1,1]' in config["model_config"]


@pytest.mark.integration
@pytest.mark.frameworks
@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_gpt_trains_with_the_decoder_flops(family: str, workload_runs: WorkloadRuns) -> None:
    """KerasHub's GPT-2 (fp32: the contract's run of the tiny configuration) and Llama (amp:
    mixed_bfloat16 on a CPU, under tf.function(jit_compile=True)) at toy sizes: finite
    next-token losses and dlperf.flops' decoder formula on the flops line."""
    adapter = get_adapter("tensorflow")
    if family == "gpt2":
        run = workload_runs.tiny("tensorflow", "gpt")
    else:
        amp_xla = Cell("tensorflow", "gpt", "amp", True, 2, Layout(1, 1))
        tiny = adapter.tiny["gpt"]
        run = workload_runs.run("tensorflow", amp_xla, tiny | {"model_config": LLAMA_TINY})
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
    assert fields["params"] == PARAMS[family]
    assert json.loads(fields["model_config"])["model_type"] == family
    assert fields["xla"] == ("jit_compile" if run.cell.xla else "none")


def test_gpt_model_config_typo_is_refused() -> None:
    """The check the workload makes before it trains (the contract runs a BERT typo end to end)."""
    with pytest.raises(SystemExit, match=r"unknown gpt \(llama\) model_config key 'num_heads'"):
        keras_config.model_hyperparameters("gpt", {"model_type": "llama", "num_heads": 4})


@pytest.mark.integration
@pytest.mark.frameworks
def test_out_of_memory_is_tensorflows_allocator(workload_runs: WorkloadRuns) -> None:
    """The contract's out-of-memory run: TensorFlow's CPU allocator refuses a tensor."""
    text = workload_runs.oom("tensorflow").text()
    assert "OOM when allocating tensor" in text, text[-1500:]


def test_tf_config_names_every_worker() -> None:
    args = argparse.Namespace(worker_hosts="node0,node1")
    config = tf_train.tf_config(args, rank=3, world=4, local_world=2)
    assert config == {
        "cluster": {"worker": ["node0:29501", "node0:29502", "node1:29503", "node1:29504"]},
        "task": {"type": "worker", "index": 3},
    }


def test_adapter_command_and_features() -> None:
    adapter = get_adapter("tensorflow")
    cell = Cell("tensorflow", "bert_base", "fp32", True, 8, Layout(1, 2))
    ctx = TaskContext(
        cell=cell, options=adapter.resolved_options({}), steps=12, device="cpu", rank=0,
        node_rank=0, nodes=1, gpus_per_node=2, master_addr="127.0.0.1", master_port=29500,
        run_dir=Path("."), python="/envs/tf/bin/python",
    )  # fmt: skip
    command = adapter.command(ctx)
    assert command[:4] == ["/envs/tf/bin/python", "-u", "-m", "dlperf.workloads.tf_train"]
    assert command[-1] == "--jit-compile"
    off = Cell("tensorflow", "bert_base", "fp32", False, 8, Layout(1, 2))
    assert "--jit-compile" not in adapter.command(ctx.__class__(**{**ctx.__dict__, "cell": off}))
    two_nodes = ctx.__class__(
        **{**ctx.__dict__, "cell": off, "nodes": 2, "hosts": ("node0", "node1")}
    )
    assert adapter.command(two_nodes)[-2:] == ["--worker-hosts", "node0,node1"]
    assert adapter.requirements == "envs/tensorflow.txt"
    adapter.check_case(
        {"framework": "tensorflow", "model": "gpt", "batch_size": [4], "layouts": ["1n2g"]}
    )
    assert adapter.skip_reason(cell, ctx.options) is None  # every layout runs, xla on and off
    assert is_oom(
        "RESOURCE_EXHAUSTED: OOM when allocating tensor with shape[64,56,56,256] and type float"
    )
