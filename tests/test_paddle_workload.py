"""The built-in PaddlePaddle workload (paddle.vision ResNet-50, PaddleNLP BERT) and its adapter,
run for real in the environment the workflow builds from envs/paddlepaddle.txt."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from workflow_helpers import framework_python, run_ranks, workload_env

from dlperf import logline
from dlperf.adapters import TaskContext, get_adapter
from dlperf.matrix import Cell, Layout
from dlperf.parse.builtin import parse_builtin_logs

TINY = {
    "resnet50": ["--image-size", "32", "--num-classes", "10"],
    "bert_base": [
        "--seq-len", "16", "--max-predictions", "3", "--model-config",
        '{"num_hidden_layers": 1, "hidden_size": 32, "num_attention_heads": 2,'
        ' "intermediate_size": 64, "vocab_size": 512}',
    ],
}  # fmt: skip


def workload(model: str, *flags: str, batch: int = 2, steps: int = 3) -> list[str]:
    return [
        framework_python("paddlepaddle"), "-u", "-m", "dlperf.workloads.paddle_train",
        "--model", model, "--batch-size", str(batch), "--steps", str(steps), "--device", "cpu",
        "--threads", "1", *TINY[model], *flags,
    ]  # fmt: skip


def config_line(log: Path) -> dict[str, str]:
    lines = [logline.parse_line(line) for line in log.read_text().splitlines()]
    return next(fields for kind, fields in filter(None, lines) if kind == logline.CONFIG)


def run(command: list[str], log: Path, **env: str) -> int:
    with open(log, "w") as out:
        return subprocess.run(
            command, stdout=out, stderr=subprocess.STDOUT, env=workload_env(**env), timeout=300
        ).returncode


@pytest.mark.parametrize(("model", "flags"), [("resnet50", []), ("bert_base", ["--to-static"])])
def test_workload_lines_parse(model: str, flags: list[str], tmp_path: Path) -> None:
    log = tmp_path / "rank0.log"
    assert run(workload(model, *flags), log) == 0, log.read_text()[-2000:]
    parsed = parse_builtin_logs([log])
    assert [r.step for r in parsed.records] == [1, 2, 3]
    assert {r.samples for r in parsed.records} == {2}
    config = config_line(log)
    assert config["paddle"] == "3.3.1" and config["to_static"] == str(bool(flags))
    if model == "bert_base":
        assert '"num_hidden_layers":1' in config["model_config"]
        assert config["paddlenlp"] == "2.8.1"
    else:
        assert config["params"] == "23581642"  # paddle.vision resnet50 with 10 classes
    assert "dlperf-memory rank=0 peak_rss_mb=" in log.read_text()


def test_a_model_config_typo_stops_the_run_naming_the_key(tmp_path: Path) -> None:
    """Issue 20.10: PaddleNLP's BertConfig took `num_hiden_layers` and trained 12 layers."""
    log = tmp_path / "rank0.log"
    typo = ["--model-config", '{"num_hiden_layers": 1}']
    assert run(workload("bert_base", *typo), log) != 0
    assert (
        "model_config: num_hiden_layers: not a field of PaddleNLP's BertConfig" in log.read_text()
    )


def test_two_processes_train_data_parallel_over_gloo(tmp_path: Path) -> None:
    logs = run_ranks(workload("bert_base", steps=3), tmp_path)
    parsed = parse_builtin_logs(logs)
    assert sorted({r.rank for r in parsed.records}) == [0, 1]
    assert config_line(logs[0])["world_size"] == "2"


def test_out_of_memory_is_recognised(tmp_path: Path) -> None:
    log = tmp_path / "rank0.log"
    command = [
        framework_python("paddlepaddle"), "-u", "-m", "dlperf.workloads.paddle_train",
        "--model", "resnet50", "--batch-size", "64", "--steps", "2", "--device", "cpu",
        "--threads", "1", "--memory-limit-gb", "1.5",
    ]  # fmt: skip
    assert run(command, log) != 0
    assert get_adapter("paddlepaddle").is_oom(log.read_text()), log.read_text()[-1500:]


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
    assert adapter.is_oom("MemoryError: (ResourceExhausted) Fail to alloc memory of 205520896 size")
