"""The built-in JAX workload (KerasHub models on Keras 3's JAX backend) and its adapter `jax`.

The workload tests run the real module for a few steps at toy sizes, in the environment the
workflow builds from envs/jax.txt, and read its lines with the built-in parser. XLA's slowest
optimisation passes are switched off for them (XLA_FLAGS): compiling is most of their time.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from workflow_helpers import framework_python, run_ranks, workload_env

from dlperf.adapters import TaskContext, get_adapter
from dlperf.errors import ConfigError
from dlperf.matrix import Cell, Layout
from dlperf.parse.builtin import parse_builtin_logs

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
