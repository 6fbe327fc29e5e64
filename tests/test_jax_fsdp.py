"""The JAX workload's sharding: fsdp for GPT (jax_fsdp.make_fsdp_step): one jax.jit step over the
global batch, every trainable and optimizer variable split over the mesh's data axis, XLA
gathering each weight where a layer uses it. Two ranks as the harness starts them (gloo on the
CPU), in the environment the workflow builds from envs/jax.txt, against ddp's step on the same
model and data; and the adapter, which accepts fsdp for gpt only.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from workflow_helpers import framework_python, run_ranks, workload_env

from dlperf import logline
from dlperf.adapters import get_adapter
from dlperf.cli import main as dlperf_main
from dlperf.errors import ConfigError

FAST_COMPILE = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"
QUIET = ["--device", "cpu", "--threads", "1", "--calibrate-s", "0"]
# GPT-2 at toy size; no dropout: ddp draws each rank's mask for its own batch, fsdp one mask for
# the global batch, and the two runs are compared step by step. Every variable has an even axis
# (or is a scalar of the optimizer's), so two ranks hold exactly half the parameters each.
TINY_GPT = [
    "--seq-len", "16", "--model-config",
    '{"n_layer": 2, "n_embd": 32, "n_head": 2, "vocab_size": 128, "n_positions": 32, '
    '"resid_pdrop": 0}',
]  # fmt: skip
FP32_BYTES = 4


def jax_env(**extra: str) -> dict[str, str]:
    return workload_env(KERAS_BACKEND="jax", XLA_FLAGS=FAST_COMPILE, **extra)


def gpt_command(sharding: str, steps: int) -> list[str]:
    return [
        framework_python("jax"), "-u", "-m", "dlperf.workloads.jax_train", "--model", "gpt",
        "--batch-size", "2", "--steps", str(steps), *QUIET, *TINY_GPT, "--sharding", sharding,
    ]  # fmt: skip


def lines(text: str, kind: str) -> list[dict[str, str]]:
    parsed = (logline.parse_line(line) for line in text.splitlines())
    return [fields for found in parsed if found and found[0] == kind for fields in [found[1]]]


@pytest.mark.integration
@pytest.mark.frameworks
def test_gpt_with_fsdp_trains_as_ddp_does_holding_half_the_parameters(tmp_path: Path) -> None:
    """Two gloo ranks, 3 steps, ddp then fsdp: every rank's loss, step by step, is ddp's (the
    step lines print 4 decimals, so two equal fp32 losses may print 1e-4 apart; summing the
    gradients in another order moves a loss of ~4.85 by ~1e-6), and each rank holds half the
    parameter bytes under fsdp, all of them under ddp (the config line states rank 0's, each
    rank's memory line its own)."""
    losses: dict[str, list[list[float]]] = {}
    held: dict[str, list[int]] = {}
    for sharding in ("ddp", "fsdp"):
        folder = tmp_path / sharding
        folder.mkdir()
        texts = [
            log.read_text() for log in run_ranks(gpt_command(sharding, 3), folder, env=jax_env)
        ]
        losses[sharding] = [[float(s["loss"]) for s in lines(text, logline.STEP)] for text in texts]
        (config,) = lines(texts[0], logline.CONFIG)
        assert (config["sharding"], config["world_size"]) == (sharding, "2")
        whole = int(config["params"]) * FP32_BYTES
        held[sharding] = [int(lines(text, logline.MEMORY)[0]["param_bytes"]) for text in texts]
        assert int(config["param_bytes"]) == held[sharding][0]
    assert held == {"ddp": [whole, whole], "fsdp": [whole // 2, whole // 2]}
    ddp, fsdp = losses["ddp"], losses["fsdp"]
    assert [len(rank) for rank in fsdp] == [3, 3]
    for ddp_rank, fsdp_rank in zip(ddp, fsdp, strict=True):
        assert fsdp_rank == pytest.approx(ddp_rank, abs=1.1e-4)
        assert fsdp_rank[0] > fsdp_rank[1] > fsdp_rank[2]  # it trains
    assert fsdp[0] != fsdp[1]  # each rank's line is its own batch's loss, as ddp's


@pytest.mark.integration
@pytest.mark.frameworks
def test_gpt_with_fsdp_on_one_rank_is_ddp() -> None:
    """One rank has nothing to shard: the plain step, every parameter held, sharding none (as the
    PyTorch workload states it)."""
    proc = subprocess.run(
        gpt_command("fsdp", 1), capture_output=True, text=True, env=jax_env(), timeout=300
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    (config,) = lines(proc.stdout, logline.CONFIG)
    assert (config["sharding"], config["world_size"]) == ("none", "1")
    assert int(config["param_bytes"]) == int(config["params"]) * FP32_BYTES
    assert len(lines(proc.stdout, logline.STEP)) == 1


def test_jax_adapter_accepts_fsdp_for_gpt_only(capsys: pytest.CaptureFixture[str]) -> None:
    adapter = get_adapter("jax")
    case = {
        "framework": "jax", "model": "gpt", "precision": ["fp32"], "xla": [True],
        "batch_size": [2], "layouts": ["1n2g"], "options": {"sharding": "fsdp"},
    }  # fmt: skip
    adapter.check_case(case)
    adapter.check_case(case | {"options": {}, "sweep": {"sharding": ["ddp", "fsdp"]}})
    for model in ("resnet50", "bert_base", "wide_deep", "insightface"):
        with pytest.raises(
            ConfigError,
            match=rf"^\.options\.sharding: jax trains {model} with ddp only: it shards gpt only$",
        ):
            adapter.check_case(case | {"model": model})
    assert dlperf_main(["adapters"]) == 0
    out = capsys.readouterr().out
    jax_entry = out[out.index("\njax: ") :].split("\n  options: ")[0]
    assert "\n  sharding fsdp: gpt (others: ddp only)" in jax_entry
