"""The built-in MXNet workload (GluonCV / GluonNLP models on MXNet 1.9) and its adapter `mxnet`:
what only it states. What every built-in workload keeps (steps, FLOPs and memory lines, two ranks,
a typo, an out-of-memory) is test_workload_contract.py's, on the same runs (conftest.WorkloadRuns).

MXNet needs numpy<1.24, so it never shares dlperf's environment: the runs are in the environment
the workflow builds from envs/mxnet.txt. The unit tests need no MXNet.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from workflow_helpers import framework_python, free_port, workload_env

from dlperf.adapters import TaskContext, get_adapter
from dlperf.launch.oom import is_oom
from dlperf.matrix import Cell, Layout
from dlperf.workloads import mxnet_train

if TYPE_CHECKING:
    from conftest import WorkloadRuns

ROOT = Path(__file__).resolve().parents[1]
# Trainable parameters of the adapter's tiny configuration, by hand. ResNet v1b, depths
# [1, 1, 1, 1], 10 classes: stem conv 7x7x3x64 + BN 2x64; per stage (in, planes p): 1x1 in*p,
# 3x3 9p^2, 1x1 4p^2, downsample 4p*in, BNs 2p+2p+8p+8p.
STEM = 7 * 7 * 3 * 64 + 2 * 64
STAGES = sum(
    i * p + 9 * p * p + 4 * p * p + 4 * p * i + 20 * p
    for i, p in ((64, 64), (256, 128), (512, 256), (1024, 512))
)
RESNET_TINY_PARAMS = STEM + STAGES + 2048 * 10 + 10
# BERT, 1 layer, hidden 64, FFN 128, vocab 512, 32 positions: embeddings (+ LayerNorm), the layer
# (QKV + output projections, FFN, 2 LayerNorms), pooler, MLM transform + LayerNorm + output bias
# (its weight is the word embedding), NSP classifier.
EMBEDDINGS = 512 * 64 + 32 * 64 + 2 * 64 + 2 * 64
LAYER = 4 * (64 * 64 + 64) + (64 * 128 + 128) + (128 * 64 + 64) + 2 * 2 * 64
BERT_TINY_PARAMS = EMBEDDINGS + LAYER + (64 * 64 + 64) + (64 * 64 + 64 + 2 * 64 + 512) + 130
BERT_TINY_CONFIG = (
    '{"dropout":0.1,"embed_size":64,"hidden_size":128,"max_length":32,"num_heads":2,'
    '"num_layers":1,"token_type_vocab_size":2,"units":64,"vocab_size":512,"word_embed":null}'
)


# ------------------------------------------------------------------------ workload, end to end


@pytest.mark.integration
@pytest.mark.frameworks
def test_resnet_config_line(workload_runs: WorkloadRuns) -> None:
    """The contract's ResNet run, imperative fp32 on two ranks over a dist_sync KVStore (rank 0
    starts ps-lite's scheduler and server; its convolution weights must reach the KVStore in the
    default layout, not oneDNN's)."""
    run = workload_runs.tiny("mxnet", "resnet50").check_ok()
    config = run.config()
    assert config["params"] == str(RESNET_TINY_PARAMS) == "8036426"
    assert config["graph"] == "imperative" and config["amp_dtype"] == "none"
    assert config["mxnet"] == "1.9.1" and config["gluoncv"] == "0.10.5.post0"
    assert config["model_config"] == '{"depths":[1,1,1,1]}'
    assert config["world_size"] == "2" and config["kvstore"] == "dist_sync"
    # 2 ranks share the cores: threads 0 gives each os.cpu_count() // 2 (1 on 2 cores), or 1
    assert config["threads"] == str(max(1, (os.cpu_count() or 1) // 2))


@pytest.mark.integration
@pytest.mark.frameworks
def test_bert_config_line(workload_runs: WorkloadRuns) -> None:
    config = workload_runs.tiny("mxnet", "bert_base").check_ok().config()
    assert config["params"] == str(BERT_TINY_PARAMS) == "77634"
    assert config["graph"] == "imperative" and config["gluonnlp"] == "0.10.0"
    assert config["world_size"] == "1" and config["kvstore"] == "none"
    assert config["model_config"] == BERT_TINY_CONFIG


@pytest.mark.integration
@pytest.mark.frameworks
def test_bert_hybridized_amp(workload_runs: WorkloadRuns) -> None:
    """The xla column on (hybridize()) and amp (bfloat16 through oneDNN), in one run: the
    contract's runs are imperative and fp32."""
    tiny = get_adapter("mxnet").tiny["bert_base"]
    cell = Cell("mxnet", "bert_base", "amp", True, 2, Layout(1, 1))
    run = workload_runs.run("mxnet", cell, tiny)
    text = run.text()
    if "avx512" not in Path("/proc/cpuinfo").read_text():  # oneDNN's bf16 kernels need it
        assert run.exit_codes == (1,) and "need AVX-512" in text, text[-3000:]
        return
    run.check_ok()
    config = run.config()
    assert config["params"] == str(BERT_TINY_PARAMS) == "77634"
    assert config["graph"] == "hybridized" and config["amp_dtype"] == "bfloat16"
    assert config["gluonnlp"] == "0.10.0"
    assert config["model_config"] == BERT_TINY_CONFIG
    assert [r.step for r in run.records()] == [1, 2, 3]


GRADIENT_SUM = """
import os
from dlperf.workloads.mxnet_train import (
    GradientSum, parameter_server_env, start_parameter_server, stop_parameter_server,
)
rank = int(os.environ["RANK"])
ps_env = parameter_server_env(2)
children = start_parameter_server(ps_env) if rank == 0 else []
os.environ.update(ps_env, DMLC_ROLE="worker")
import mxnet as mx
dense = mx.gluon.nn.Dense(2, in_units=3, use_bias=False)
dense.initialize(mx.init.Constant(10.0 * (rank + 1)))  # different on each worker
params = list(dense.collect_params().values())
kv = mx.kv.create("dist_sync")
total = GradientSum(kv, params)
for step in (1, 2):
    for p in params:
        p.grad()[:] = (rank + 1) * step
    total()
    print("grads", sorted({float(v) for p in params for v in p.grad().asnumpy().ravel()}))
print("weights", sorted({float(v) for p in params for v in p.data().asnumpy().ravel()}))
del total, kv
stop_parameter_server(children, timeout_s=30)
"""


@pytest.mark.integration
@pytest.mark.frameworks
def test_gradient_sum_broadcasts_weights_and_sums_gradients() -> None:
    """Every worker starts from one worker's weights, then gets the sum of all workers'
    gradients, step after step. (Gluon's Trainer, which uses one key for both, can hand a worker
    its peers' summed gradients as initial weights: the reason for GradientSum.)"""
    python = framework_python("mxnet")
    env = workload_env(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), OMP_NUM_THREADS="1")
    workers = [
        subprocess.Popen(
            [python, "-c", GRADIENT_SUM],
            env=env | {"RANK": str(rank)},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for rank in (0, 1)
    ]
    outputs = [w.communicate(timeout=120)[0] for w in workers]
    assert [w.returncode for w in workers] == [0, 0], outputs
    lines = [[line for line in out.splitlines() if line.startswith(("grads", "weights"))]
             for out in outputs]  # fmt: skip
    # rank r sets its gradients to (r + 1) * step: the sum is 3 * step on both
    assert lines[0][:2] == lines[1][:2] == ["grads [3.0]", "grads [6.0]"]
    assert lines[0][2] == lines[1][2] in ("weights [10.0]", "weights [20.0]")


# ------------------------------------------------------------------------------ without MXNet


def test_missing_mxnet_names_the_environment_file() -> None:
    """The workload's first check, in dlperf's own environment (no MXNet there)."""
    if any(
        (Path(p) / "mxnet").exists() for p in sys.path if p and Path(p).is_dir()
    ):  # pragma: no cover - dlperf's own environment never has MXNet
        pytest.skip("this interpreter has mxnet")
    argv = ["--model", "bert_base", "--batch-size", "2", "--steps", "1", "--device", "cpu"]
    with pytest.raises(SystemExit, match=r"needs mxnet.*envs/mxnet\.txt"):
        mxnet_train.main(argv)


def test_bert_config_takes_transformers_names() -> None:
    base = {"num_layers": 12, "units": 768, "hidden_size": 3072, "num_heads": 12}
    base |= {"max_length": 512, "dropout": 0.1, "embed_size": 768, "token_type_vocab_size": 2}
    config = mxnet_train.model_config(
        "bert_base",
        {"num_hidden_layers": 2, "hidden_size": 256, "intermediate_size": 1024, "vocab_size": 99},
        base,
    )
    assert config == base | {
        "num_layers": 2, "units": 256, "embed_size": 256, "hidden_size": 1024, "vocab_size": 99,
    }  # fmt: skip
    assert mxnet_train.model_config("bert_base", {}, base)["vocab_size"] == 30522
    with pytest.raises(SystemExit, match="unknown bert_base model_config key 'units'"):
        mxnet_train.model_config("bert_base", {"units": 256}, base)


def test_resnet_config_is_its_depths() -> None:
    assert mxnet_train.model_config("resnet50", {}, {}) == {"depths": [3, 4, 6, 3]}
    assert mxnet_train.model_config("resnet50", {"depths": [1, 2, 1, 1]}, {}) == {
        "depths": [1, 2, 1, 1]
    }
    with pytest.raises(SystemExit, match="unknown resnet50 model_config key 'width'"):
        mxnet_train.model_config("resnet50", {"width": 2}, {})
    with pytest.raises(SystemExit, match="depths must be 4 numbers"):
        mxnet_train.model_config("resnet50", {"depths": [3, 4]}, {})


def test_parameter_server_listens_at_the_master(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MASTER_ADDR", "10.0.0.7")
    monkeypatch.setenv("MASTER_PORT", "29611")
    assert mxnet_train.parameter_server_env(4) == {
        "DMLC_PS_ROOT_URI": "10.0.0.7",
        "DMLC_PS_ROOT_PORT": "29611",
        "DMLC_NUM_SERVER": "1",
        "DMLC_NUM_WORKER": "4",
    }


TWO_DEVICES = Layout(1, 2)


def cell(xla: bool = False, precision: str = "fp32", layout: Layout = TWO_DEVICES) -> Cell:
    return Cell("mxnet", "resnet50", precision, xla, 8, layout)


def context(c: Cell) -> TaskContext:
    adapter = get_adapter("mxnet")
    return TaskContext(
        cell=c, options=adapter.resolved_options({"image_size": 32}), steps=12, device="cpu",
        rank=1, node_rank=0, nodes=1, gpus_per_node=2, master_addr="127.0.0.1",
        master_port=29500, run_dir=Path("."), python="/venvs/mxnet/bin/python",
    )  # fmt: skip


def test_adapter_command_hybridizes_for_xla() -> None:
    adapter = get_adapter("mxnet")
    command = adapter.command(context(cell(xla=True)))
    assert command[:4] == ["/venvs/mxnet/bin/python", "-u", "-m", "dlperf.workloads.mxnet_train"]
    assert command[-1] == "--hybridize"
    flags = dict(zip(command[4:-1:2], command[5:-1:2], strict=True))
    assert flags["--model"] == "resnet50" and flags["--batch-size"] == "8"
    assert flags["--steps"] == "12" and flags["--image-size"] == "32"
    assert "--hybridize" not in adapter.command(context(cell(xla=False)))
    assert adapter.requirements == "envs/mxnet.txt"
    assert (ROOT / adapter.requirements).is_file()


def test_adapter_runs_every_layout_and_xla(monkeypatch: pytest.MonkeyPatch) -> None:
    from dlperf.adapters import builtin

    adapter = get_adapter("mxnet")
    options = adapter.resolved_options({})
    for xla in (False, True):
        for layout in (Layout(1, 1), Layout(1, 2), Layout(2, 8)):
            assert adapter.skip_reason(cell(xla, layout=layout), options) is None
    monkeypatch.setattr(builtin, "has_cuda_hint", lambda: False)
    monkeypatch.setattr(builtin, "cpu_has_native_bf16", lambda: False)
    reason = adapter.node_skip_reason(cell(precision="amp"), options) or ""
    assert "without native bf16" in reason and "oneDNN" in reason
    assert adapter.node_skip_reason(cell(precision="amp"), options | {"amp_on_cpu": "run"}) is None
    monkeypatch.setattr(builtin, "cpu_has_native_bf16", lambda: True)
    assert adapter.node_skip_reason(cell(precision="amp"), options) is None


def test_mxnets_out_of_memory_is_recognised() -> None:
    assert is_oom("mxnet.base.MXNetError: Failed to allocate CPU Memory")
    assert not is_oom("MXNetError: Check failed: assign(&dattr, vec.at(i))")


@pytest.mark.parametrize(
    ("dtype", "device", "capability", "override", "want"),
    [  # MXNet 1.9 on CUDA 11+: TF32 for fp32 GEMMs and convolutions, unless NVIDIA's override
        ("float32", "gpu", 90, None, "tf32"),
        ("float32", "gpu", 80, None, "tf32"),
        ("float32", "gpu", 80, "0", "fp32"),
        ("float32", "gpu", 70, None, "fp32"),  # a V100 has no TF32
        ("float32", "cpu", None, None, "fp32"),
        ("float16", "gpu", 90, None, "fp16"),
        ("bfloat16", "cpu", None, None, "bf16"),
    ],
)
def test_an_fp32_cells_products_run_in_tf32_as_mxnet_runs_them(
    dtype: str,
    device: str,
    capability: int | None,
    override: str | None,
    want: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from types import SimpleNamespace

    if override is None:
        monkeypatch.delenv("NVIDIA_TF32_OVERRIDE", raising=False)
    else:
        monkeypatch.setenv("NVIDIA_TF32_OVERRIDE", override)
    mx = SimpleNamespace(util=SimpleNamespace(get_cuda_compute_capability=lambda ctx: capability))
    ctx = SimpleNamespace(device_type=device)
    assert mxnet_train.math_of(dtype, ctx, mx) == want
