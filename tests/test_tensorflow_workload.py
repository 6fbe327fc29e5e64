"""The built-in TensorFlow 2 workload (KerasHub models on Keras 3's TensorFlow backend) and its
adapter `tensorflow`, run for real in the environment the workflow builds from envs/tensorflow.txt."""

from __future__ import annotations

import argparse
import json
import math
import subprocess
from pathlib import Path

import pytest
from workflow_helpers import framework_python, run_ranks, workload_env

from dlperf import flops, logline
from dlperf.adapters import TaskContext, get_adapter
from dlperf.matrix import Cell, Layout
from dlperf.parse.builtin import parse_builtin_logs
from dlperf.workloads import tf_train

# GPT at toy sizes, in transformers' GPT2Config and LlamaConfig names (as the pytorch workload's)
GPT2_TINY = {"n_layer": 2, "n_embd": 64, "n_head": 4, "vocab_size": 1000}
LLAMA_TINY = {
    "model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
    "num_key_value_heads": 2, "intermediate_size": 172, "vocab_size": 1000,
}  # fmt: skip
TINY = {
    "resnet50": [
        "--image-size", "32", "--num-classes", "10",
        "--model-config", '{"stackwise_num_blocks": [1, 1, 1, 1]}',
    ],
    "bert_base": [
        "--seq-len", "16", "--max-predictions", "4", "--model-config",
        '{"num_hidden_layers": 1, "hidden_size": 64, "num_attention_heads": 2,'
        ' "intermediate_size": 128, "vocab_size": 512, "max_position_embeddings": 32}',
    ],
    "gpt": ["--seq-len", "32", "--model-config", json.dumps(GPT2_TINY)],
}  # fmt: skip
# count_params() of these toy models: the same on the JAX backend (the same KerasHub models; its
# test derives GPT's from dlperf.flops' DecoderShape.matmul_params)
PARAMS = {"resnet50": "8055754", "bert_base": "77634", "gpt2": "229632", "llama": "218944"}


def workload(model: str, *flags: str, batch: int = 2, steps: int = 3) -> list[str]:
    return [
        framework_python("tensorflow"), "-u", "-m", "dlperf.workloads.tf_train",
        "--model", model, "--batch-size", str(batch), "--steps", str(steps), "--device", "cpu",
        *TINY[model], *flags,
    ]  # fmt: skip


def config_line(log: Path) -> dict[str, str]:
    lines = [logline.parse_line(line) for line in log.read_text().splitlines()]
    return next(fields for kind, fields in filter(None, lines) if kind == logline.CONFIG)


def run(command: list[str], log: Path, **env: str) -> int:
    with open(log, "w") as out:
        return subprocess.run(
            command, stdout=out, stderr=subprocess.STDOUT, env=workload_env(**env), timeout=300
        ).returncode


@pytest.mark.parametrize(("model", "flags"), [("resnet50", []), ("bert_base", ["--jit-compile"])])
def test_workload_lines_parse(model: str, flags: list[str], tmp_path: Path) -> None:
    log = tmp_path / "rank0.log"
    assert run(workload(model, "--threads", "1", *flags), log) == 0, log.read_text()[-3000:]
    parsed = parse_builtin_logs([log])
    assert [r.step for r in parsed.records] == [1, 2, 3]
    assert {r.samples for r in parsed.records} == {2} and {r.rank for r in parsed.records} == {0}
    config = config_line(log)
    assert (config["tensorflow"], config["keras"], config["keras_hub"]) == (
        "2.21.0",
        "3.15.1",
        "0.32.0",
    )
    assert config["device"] == "cpu" and config["amp_dtype"] == "none"
    assert config["xla"] == ("jit_compile" if flags else "none")
    assert config["params"] == PARAMS[model]
    if model == "bert_base":
        assert '"num_layers":1' in config["model_config"]
    else:
        assert '"stackwise_num_blocks":[1,1,1,1]' in config["model_config"]
    assert "dlperf-memory rank=0 peak_rss_mb=" in log.read_text()


@pytest.mark.parametrize(
    ("config", "flags"),
    [(GPT2_TINY, ["--jit-compile"]), (LLAMA_TINY, ["--precision", "amp"])],
    ids=["gpt2", "llama"],
)
def test_gpt_trains_with_the_decoder_flops(
    config: dict[str, int | str], flags: list[str], tmp_path: Path
) -> None:
    """KerasHub's GPT-2 (fp32, jit_compile) and Llama (amp: mixed_bfloat16 on a CPU) at toy
    sizes: finite next-token losses and dlperf.flops' decoder formula on the flops line."""
    log = tmp_path / "rank0.log"
    command = workload("gpt", "--threads", "1", "--model-config", json.dumps(config), *flags)
    assert run(command, log) == 0, log.read_text()[-3000:]  # the last --model-config wins
    parsed = [logline.parse_line(line) for line in log.read_text().splitlines()]
    steps = [fields for kind, fields in filter(None, parsed) if kind == logline.STEP]
    losses = [float(fields["loss"]) for fields in steps]
    assert len(losses) == 3 and all(math.isfinite(x) for x in losses)
    assert abs(losses[0] - math.log(1000)) < 0.5  # random init: about uniform over the vocabulary
    (stated,) = [fields for kind, fields in filter(None, parsed) if kind == logline.FLOPS]
    expected = flops.decoder_training_flops_per_sequence(flops.DecoderShape.from_config(config), 32)
    assert float(stated["per_sample"]) == pytest.approx(expected, rel=1e-5)
    assert stated["math"] == ("bf16" if "amp" in flags else "fp32")
    family = str(config.get("model_type", "gpt2"))
    assert config_line(log)["params"] == PARAMS[family]
    assert json.loads(config_line(log)["model_config"])["model_type"] == family


def test_gpt_model_config_typo_is_refused(tmp_path: Path) -> None:
    log = tmp_path / "rank0.log"
    command = workload("gpt", "--model-config", '{"model_type": "llama", "num_heads": 4}', steps=1)
    assert run(command, log) != 0
    assert "unknown gpt (llama) model_config key 'num_heads'" in log.read_text()


def test_two_processes_train_data_parallel_with_multiworkermirroredstrategy(tmp_path: Path) -> None:
    logs = run_ranks(workload("bert_base"), tmp_path)  # workers listen on port + 1 and + 2
    records = parse_builtin_logs(logs).records
    assert sorted((r.rank, r.step) for r in records) == [(k, i) for k in (0, 1) for i in (1, 2, 3)]
    assert config_line(logs[0])["world_size"] == "2"


def test_out_of_memory_is_recognised(tmp_path: Path) -> None:
    """A batch past a 3 GiB address-space cap: TensorFlow's CPU allocator refuses a tensor."""
    log = tmp_path / "rank0.log"
    command = [
        framework_python("tensorflow"), "-u", "-m", "dlperf.workloads.tf_train",
        "--model", "resnet50", "--batch-size", "64", "--steps", "2", "--device", "cpu",
        "--threads", "1", "--memory-limit-gb", "3", "--num-classes", "10",
        "--model-config", '{"stackwise_num_blocks": [1, 1, 1, 1]}',
    ]  # fmt: skip
    assert run(command, log) != 0
    text = log.read_text()
    assert "OOM when allocating tensor" in text, text[-1500:]
    assert get_adapter("tensorflow").is_oom(text)


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
    assert adapter.is_oom(
        "RESOURCE_EXHAUSTED: OOM when allocating tensor with shape[64,56,56,256] and type float"
    )
