"""Release dlperf_v1's commands against what DLPerf v1.0's own scripts passed (Oneflow-Inc/DLPerf),
for settings that change the speed and that the upstream scripts' defaults leave off."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dlperf.adapters import TaskContext, get_adapter
from dlperf.adapters.upstream import UpstreamAdapter
from dlperf.matrix import Cell, Layout

ONEFLOW_RN50_AMP = [
    "--use_fp16",
    "--channel_last=True",
    "--pad_output",
    "--fuse_bn_relu=True",
    "--fuse_bn_add_relu=True",
    "--nccl_fusion_threshold_mb=16",
    "--nccl_fusion_max_ops=24",
    "--gpu_image_decoder=True",
]


def context(
    adapter: UpstreamAdapter, model: str, precision: str, layout: str, run_dir: Path, **options
) -> TaskContext:
    lay = Layout.parse(layout)
    return TaskContext(
        cell=Cell(adapter.name, model, precision, False, 128, lay),
        options=adapter.resolved_options(options),
        steps=adapter.steps_for(20, 100),
        device="cuda",
        rank=0,
        node_rank=0,
        nodes=lay.nodes,
        gpus_per_node=lay.gpus_per_node,
        master_addr="gpu01" if lay.nodes > 1 else "127.0.0.1",
        master_port=29517,
        run_dir=run_dir,
    )


@pytest.fixture(autouse=True)
def two_hosts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_JOB_NODELIST", "gpu[01-02]")


def test_oneflow_resnet50_amp_runs_as_dlperf_and_oneflow_benchmark_did(tmp_path: Path):
    """DLPerf's OneFlow ResNet-50 FP16 figures (1472.72 img/s on 1n1g) come from
    OneFlow/scripts/rn50_train.sh at 2f47046, the flags of OneFlow-Benchmark v0.2.0's own
    Classification/cnns/benchmark.sh: NHWC, fused BN ops, NCCL fusion, GPU decoding and
    NCCL_LAUNCH_MODE=PARALLEL. Without them cnns/config.py's defaults run NCHW, unfused."""
    of = get_adapter("oneflow")
    for layout in ("1n1g", "2n8g"):
        ctx = context(of, "resnet50", "amp", layout, tmp_path, data_dir="/data/ofrecord")
        cmd = of.command(ctx)
        assert [a for a in cmd if a in ONEFLOW_RN50_AMP] == ONEFLOW_RN50_AMP
        assert cmd[:2] == ["env", "NCCL_LAUNCH_MODE=PARALLEL"]
    fp32 = of.command(context(of, "resnet50", "fp32", "1n8g", tmp_path))
    assert not set(fp32) & set(ONEFLOW_RN50_AMP)
    assert "NCCL_LAUNCH_MODE=PARALLEL" not in fp32
    bert = of.command(context(of, "bert_base", "amp", "1n8g", tmp_path, data_dir="/d"))
    assert "--use_fp16" in bert and "--channel_last=True" not in bert
    assert "NCCL_LAUNCH_MODE=PARALLEL" not in bert
    current = context(of, "resnet50", "amp", "1n8g", tmp_path, release="current")
    assert "NCCL_LAUNCH_MODE=PARALLEL" not in of.command(current)


def runtime_of(cmd: list[str]) -> dict:
    override = next(a for a in cmd if a.startswith("--params_override="))
    return json.loads(override.split("=", 1)[1])["runtime"]


def test_tensorflow2_resnet50_batchnorm_spatial_persistent_as_dlperfs_yamls(tmp_path: Path):
    """DLPerf's TensorFlow/resnet50v1.5/scripts/gpu.yaml and gpu_fp16.yaml (one node) set
    runtime.batchnorm_spatial_persistent: True, which classifier_trainer.initialize() turns into
    TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT=1; its multi-node yamls set False. The config the
    adapter uses (configs/examples/resnet/imagenet/gpu.yaml) leaves RuntimeConfig's False."""
    tf2 = get_adapter("tensorflow2")
    for precision in ("fp32", "amp"):
        one = tf2.command(context(tf2, "resnet50", precision, "1n8g", tmp_path))
        assert runtime_of(one)["batchnorm_spatial_persistent"] is True
        two = tf2.command(context(tf2, "resnet50", precision, "2n8g", tmp_path))
        assert runtime_of(two)["batchnorm_spatial_persistent"] is False
    current = context(tf2, "resnet50", "amp", "1n8g", tmp_path, release="current", data_dir="/d")
    assert "batchnorm_spatial_persistent" not in runtime_of(tf2.command(current))
