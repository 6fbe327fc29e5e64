"""The built-in JAX workload (KerasHub models on Keras 3's JAX backend) and its adapter `jax`.

The workload tests run the real module for a few steps at toy sizes, in the environment the
workflow builds from envs/jax.txt, and read its lines with the built-in parser. XLA's slowest
optimisation passes are switched off for them (XLA_FLAGS): compiling is most of their time.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from workflow_helpers import framework_python, run_ranks, workload_env

from dlperf import flops, logline
from dlperf.adapters import TaskContext, get_adapter
from dlperf.errors import ConfigError
from dlperf.matrix import Cell, Layout
from dlperf.parse.builtin import parse_builtin_logs

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
        "--seq-len", "16", "--max-predictions", "4",
        "--model-config",
        '{"num_hidden_layers": 1, "hidden_size": 64, "num_attention_heads": 2,'
        ' "intermediate_size": 128, "vocab_size": 512, "max_position_embeddings": 32}',
    ],
    "gpt": ["--seq-len", "32", "--model-config", json.dumps(GPT2_TINY)],
}  # fmt: skip
FAST_COMPILE = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"


def workload(model: str, batch: int, steps: int) -> list[str]:
    command = [
        framework_python("jax"), "-u", "-m", "dlperf.workloads.jax_train", "--model", model,
        "--batch-size", str(batch), "--steps", str(steps), "--device", "cpu", *TINY[model],
    ]  # fmt: skip
    return command


def run_env(**extra: str) -> dict[str, str]:
    return workload_env(XLA_FLAGS=FAST_COMPILE, KERAS_BACKEND="jax", **extra)


@pytest.mark.parametrize("model", ["resnet50", "bert_base"])
def test_workload_lines_parse(model: str, tmp_path: Path) -> None:
    log = tmp_path / "rank0.log"
    with open(log, "w") as out:
        proc = subprocess.run(
            workload(model, 2, 3), stdout=out, stderr=subprocess.STDOUT, env=run_env(), timeout=300
        )
    text = log.read_text()
    assert proc.returncode == 0, text[-3000:]
    config = next(line for line in text.splitlines() if line.startswith("dlperf-config "))
    assert f"model={model}" in config and "device=cpu" in config and "jax=" in config
    assert "keras_hub=" in config and "model_config={" in config
    records = parse_builtin_logs([log]).records
    assert [r.step for r in records] == [1, 2, 3]
    assert {r.rank for r in records} == {0}
    assert all(r.samples == 2 for r in records)
    assert all(r.time_s >= r.start_s for r in records)
    assert records[1].start_s >= records[0].time_s


def lines(text: str, kind: str) -> list[dict[str, str]]:
    parsed = [logline.parse_line(line) for line in text.splitlines()]
    return [fields for k, fields in filter(None, parsed) if k == kind]


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


@pytest.mark.parametrize(
    ("config", "precision"), [(GPT2_TINY, "fp32"), (LLAMA_TINY, "amp")], ids=["gpt2", "llama"]
)
def test_gpt_trains_with_the_decoder_flops(config: dict[str, int | str], precision: str) -> None:
    """KerasHub's GPT-2 (fp32) and Llama (amp: mixed_bfloat16) at toy sizes: finite next-token
    losses, dlperf.flops' decoder formula on the flops line, and the parameters it counts."""
    # the last --model-config wins (argparse)
    command = [
        *workload("gpt", 2, 3),
        "--model-config",
        json.dumps(config),
        "--precision",
        precision,
    ]
    proc = subprocess.run(
        command, capture_output=True, text=True, env=run_env(), timeout=300, check=False
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    losses = [float(fields["loss"]) for fields in lines(proc.stdout, logline.STEP)]
    assert len(losses) == 3 and all(math.isfinite(x) for x in losses)
    assert abs(losses[0] - math.log(1000)) < 0.5  # random init: about uniform over the vocabulary
    (stated,) = lines(proc.stdout, logline.FLOPS)
    expected = flops.decoder_training_flops_per_sequence(flops.DecoderShape.from_config(config), 32)
    assert float(stated["per_sample"]) == pytest.approx(expected, rel=1e-5)
    assert stated["math"] == ("bf16" if precision == "amp" else "fp32")
    (fields,) = lines(proc.stdout, logline.CONFIG)
    assert fields["model"] == "gpt" and int(fields["params"]) == keras_hub_gpt_params(config)
    family = json.loads(fields["model_config"])["model_type"]
    assert family == config.get("model_type", "gpt2")


def test_gpt_model_config_typo_is_refused() -> None:
    command = [*workload("gpt", 2, 1), "--model-config", '{"n_layers": 2}']
    proc = subprocess.run(
        command, capture_output=True, text=True, env=run_env(), timeout=300, check=False
    )
    assert proc.returncode != 0
    assert "unknown gpt (gpt2) model_config key 'n_layers'" in proc.stderr


def test_workload_two_processes(tmp_path: Path) -> None:
    """Data parallel over two processes (jax.distributed, gloo): both ranks log every step."""
    logs = run_ranks(workload("bert_base", 2, 3), tmp_path, env=run_env)
    assert "world_size=2" in logs[0].read_text()
    records = parse_builtin_logs(logs).records
    assert sorted((r.rank, r.step) for r in records) == [(k, i) for k in (0, 1) for i in (1, 2, 3)]
    assert all(r.samples == 2 for r in records)


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
    assert adapter.skip_reason(cell(precision="amp"), options) is None  # amp_on_cpu: run
    base = {"framework": "jax", "model": "bert_base", "batch_size": [8], "layouts": ["1n1g"]}
    adapter.check_case(base | {"xla": [False, True]})
    with pytest.raises(ConfigError, match=r"^\.xla: "):
        adapter.check_case(base | {"xla": [False]})
    with pytest.raises(ConfigError, match=r"^\.options\.depth: "):
        adapter.check_case(base | {"xla": [True], "options": {"depth": 3}})
    adapter.check_case(base | {"model": "gpt", "xla": [True], "options": {"seq_len": 64}})
