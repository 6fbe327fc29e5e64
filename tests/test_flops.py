"""FLOPs per sample (checked against torch's FlopCounterMode on the transformers models the
built-in workload trains), Megatron's formula, device peaks, a measured GEMM peak, MFU."""

from __future__ import annotations

import math

import pytest

from dlperf import flops
from dlperf.flops import (
    BertShape,
    bert_forward_flops_per_sequence,
    bert_pretraining_flops_per_sample,
    measure_gemm_peak_tflops,
    megatron_formula,
    resnet50_forward_macs,
    resnet50_training_flops_per_sample,
)
from dlperf.peaks import device_peak, mfu, peak_tflops


def counted_forward_flops(model, **inputs) -> int:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model.eval()(**inputs)
    return counter.get_total_flops()


def test_resnet50_about_4_1_gmacs_at_224():
    assert resnet50_forward_macs(224, 1000) / 1e9 == pytest.approx(4.1, rel=0.01)
    assert resnet50_training_flops_per_sample() == 6 * resnet50_forward_macs(224, 1000)
    # (S/224)^2 scaling, up to the rounding of strided sizes; the classifier does not scale
    fc = 2048 * 1000
    ratio = (resnet50_forward_macs(448) - fc) / (resnet50_forward_macs(224) - fc)
    assert ratio == pytest.approx(4.0, rel=0.01)
    assert resnet50_forward_macs(224, 2) == resnet50_forward_macs(224, 1000) - 2048 * 998


def test_resnet50_against_flop_counter():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = transformers.ResNetConfig()  # ResNet-50 v1.5, 2 labels by default
    model = transformers.ResNetForImageClassification(config)
    counted = counted_forward_flops(model, pixel_values=torch.randn(1, 3, 224, 224))
    formula = 2 * resnet50_forward_macs(224, config.num_labels)
    assert formula == pytest.approx(counted, rel=0.03)  # equal in fact: both count convs + fc


def test_bert_base_by_hand():
    shape = BertShape()
    assert shape.nonembedding_params == 12 * 12 * 768**2  # 4 h^2 + 2 h (4 h) per layer
    h, s, v = 768, 128, 30522
    encoder = 2 * shape.nonembedding_params * s + 12 * 4 * s * s * h
    heads = 2 * 20 * (h * h + h * v) + 2 * (h * h + 2 * h)
    assert bert_pretraining_flops_per_sample() == pytest.approx(3 * (encoder + heads))
    assert bert_pretraining_flops_per_sample() / 1e9 == pytest.approx(69.93, abs=0.01)
    small = BertShape.from_config({"num_hidden_layers": 2, "hidden_size": 128})
    assert small == BertShape(2, 128, 3072, 30522)


def test_bert_base_against_flop_counter():
    """transformers computes the MLM head on every token, so compare with mlm positions = s.

    FlopCounterMode counts every addmm, but on a CPU the fused scaled-dot-product attention has
    no FLOP formula in torch: the 4 s^2 h per layer of the attention itself (0.60 of 28.50 GFLOPs,
    2.1 %) is missing from its count. With eager attention it counts those batched products too
    and the two agree exactly.
    """
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig()
    s = 128
    ids = torch.randint(0, config.vocab_size, (1, s), generator=torch.Generator().manual_seed(0))
    formula = bert_forward_flops_per_sequence(BertShape.from_config(config), s, s)
    fused = counted_forward_flops(transformers.BertForPreTraining(config), input_ids=ids)
    assert formula == pytest.approx(fused, rel=0.10)
    assert formula - fused == pytest.approx(12 * 4 * s * s * 768, rel=0.01)
    eager = transformers.BertForPreTraining(transformers.BertConfig(attn_implementation="eager"))
    assert formula == pytest.approx(counted_forward_flops(eager, input_ids=ids), rel=0.001)


def test_megatron_formula_by_hand():
    """Model FLOPs, as every GPT column counts them: eq. 3 of Narayanan et al. 2021 without
    recomputation, 72 B s l h^2 (1 + s / (6 h) + V / (12 l h)), the vocabulary padded to 128 x TP
    (review: the column read eq. 3 with recomputation, 1.29x the note's 6 N + 12 L s h)."""
    s, layers, h = 2048, 16, 1536
    options = {"seq_len": s, "num_layers": layers, "hidden_size": h, "num_attention_heads": 16}
    for tp, v in ((1, 50304), (2, 50432)):
        formula = megatron_formula(options | {"tensor_parallel": tp}, "amp")
        eq3 = 72.0 * s * layers * h * h * (1 + s / (6 * h) + v / (12 * layers * h))
        assert formula.per_sample == pytest.approx(eq3, rel=1e-12)
        assert formula.method == f"6 N + 12 L s h per token (model FLOPs), V={v}"
    assert megatron_formula(options, "amp").per_sample == pytest.approx(7.753e12, rel=1e-3)
    assert (megatron_formula(options, "amp").math, megatron_formula(options, "fp32").math) == (
        "fp16",
        "fp32",
    )  # --fp16 for amp, as DLPerf ran Megatron-LM and OneFlow-GPT


@pytest.mark.parametrize(
    ("name", "dtype", "want"),
    [
        ("NVIDIA H100 80GB HBM3", "bf16", 989.5),
        ("NVIDIA H100 PCIe", "fp16", 756.5),
        ("NVIDIA H100 NVL", "tf32", 417.5),
        ("NVIDIA H200", "fp32", 67.0),
        ("NVIDIA A100-SXM4-40GB", "tf32", 156.0),
        ("NVIDIA A100 80GB PCIe", "fp16", 312.0),
        ("Tesla V100-SXM2-32GB", "fp16", 125.0),
        ("Tesla V100-PCIE-16GB", "fp32", 14.0),
        ("NVIDIA L40S", "bf16", 362.05),
        ("NVIDIA A10", "fp32", 31.2),
        ("NVIDIA H100 80GB HBM3, 81559 MiB, 550.54", "fp32", 67.0),  # a node-facts line
    ],
)
def test_peak_lookup_by_nvidia_smi_name(name, dtype, want):
    assert peak_tflops(name, dtype) == want


def test_peak_lookup_misses():
    assert peak_tflops("Tesla V100-SXM2-16GB", "bf16") is None  # no bf16 on Volta
    assert peak_tflops("NVIDIA GeForce RTX 4090", "fp16") is None
    assert device_peak("NVIDIA A100-SXM4-80GB").name == "A100"  # not A10
    # an RTX A1000 (a workstation and laptop GPU, 6.7 TFLOP/s fp32) is no A100 (19.5): its MFU
    # would read a third of what it is; it has no nameplate here, so its calibration is the peak
    assert device_peak("NVIDIA RTX A1000 6GB Laptop GPU") is None
    assert device_peak("NVIDIA RTX A1000") is None
    with pytest.raises(ValueError):
        peak_tflops("NVIDIA A10", "fp8")


def test_measured_gemm_peak_on_cpu():
    pytest.importorskip("torch")
    tflops = measure_gemm_peak_tflops("fp32", "cpu", seconds=0.2, size=256)
    assert math.isfinite(tflops) and 0 < tflops < 100


def test_gemm_calibration_pays_its_seconds_not_twice_that(monkeypatch):
    # a product takes 1/64 s on a fake clock: 0.5 s is 32 products (doubling batches between
    # syncs, 1+2+4+8+16+32, would have run 63 and taken 0.98 s)
    clock = {"now": 0.0, "calls": 0}

    def matmul():
        clock["now"] += 1 / 64
        clock["calls"] += 1

    monkeypatch.setattr(flops.time, "perf_counter", lambda: clock["now"])
    tflops = flops.time_matmuls(matmul, lambda: None, n=1000, seconds=0.5)
    assert clock["calls"] == 3 + 32  # 3 warm-ups, then the timed products
    assert tflops == pytest.approx(2 * 1000**3 * 32 / 0.5 / 1e12)


def test_gemm_calibration_beside_other_work_gives_the_fastest_batchs_rate(monkeypatch):
    """Other work on the machine slows some batches (here every product but the batch of 8 takes
    4x as long): the peak is the fast batch's rate, not the mean's."""
    clock = {"now": 0.0, "calls": 0}

    def matmul():
        clock["calls"] += 1
        fast = 3 + 1 + 2 + 4 < clock["calls"] <= 3 + 1 + 2 + 4 + 8
        clock["now"] += 1 / 64 if fast else 4 / 64

    monkeypatch.setattr(flops.time, "perf_counter", lambda: clock["now"])
    tflops = flops.time_matmuls(matmul, lambda: None, n=1000, seconds=2.0)
    assert tflops == pytest.approx(2 * 1000**3 * 64 / 1e12)


def test_mfu():
    # 24.5 GFLOPs per image at 2000 images/s = 49 TFLOP/s; on a 312 TFLOP/s peak: 15.7 %
    assert mfu(24.5e9, 2000, 312.0) == pytest.approx(49 / 312)
    assert math.isnan(mfu(24.5e9, 2000, None))
    assert math.isnan(mfu(24.5e9, 2000, 0.0))


@pytest.mark.parametrize(
    "capability, allowed, math",
    [((9, 0), True, "tf32"), ((8, 0), True, "tf32"), ((7, 0), True, "fp32"), ((9, 0), False, "fp32"),
     (None, True, "fp32")],
)  # fmt: skip
def test_an_fp32_cells_products_run_in_tf32_where_the_gpu_and_framework_allow_it(
    capability, allowed, math
):
    """Review: TensorFlow and JAX run fp32 products in TF32 by default on an A100 or H100, and
    their fp32 cells' MFU was taken against the fp32 nameplate (67 TFLOP/s on an H100, 7.4x too
    low a peak: an MFU of 298%)."""
    from dlperf.workloads.common import fp32_math, jax_allows_tf32

    assert fp32_math(capability, allowed) == math
    assert jax_allows_tf32(None) and jax_allows_tf32("tensorfloat32")
    assert not jax_allows_tf32("highest") and not jax_allows_tf32("float32")


@pytest.mark.parametrize("head_dim", [None, 16])
def test_llama_decoder_formula_against_flop_counter(head_dim):
    """A Llama config may set its own head_dim (wider heads than hidden_size / heads): the Q, K,
    V and output projections and the attention's products are heads x head_dim wide. Counted
    forward on the transformers model the workload builds (eager attention), whole-sequence."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    sizes = dict(num_hidden_layers=2, hidden_size=64, intermediate_size=176, vocab_size=1000)
    config = transformers.LlamaConfig(
        **sizes, num_attention_heads=8, num_key_value_heads=2, attn_implementation="eager"
    )
    if head_dim:
        config.head_dim = head_dim
    model = transformers.LlamaForCausalLM(config)
    shape = flops.DecoderShape.from_config(config.to_dict())
    linear = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    assert shape.matmul_params == linear == (172544 if head_dim else 152064)
    s = 32
    ids = torch.randint(0, 1000, (1, s), generator=torch.Generator().manual_seed(0))
    counted = counted_forward_flops(model, input_ids=ids)
    stated = flops.decoder_training_flops_per_sequence(shape, s) / flops.TRAINING_OVER_FORWARD
    assert stated == pytest.approx(counted, rel=1e-9)


def test_wide_deep_default_sizes_by_hand():
    """13 dense + 26 deep fields x 32 wide = 845 inputs, 7 layers of 1024, one logit."""
    assert flops.WideDeepShape().mlp_macs == 845 * 1024 + 6 * 1024**2 + 1024
    assert flops.wide_deep_training_flops_per_sample() == 6 * 7_157_760  # 42.9 MFLOPs


@pytest.mark.parametrize(
    ("model", "overrides", "stated"),
    [
        ("insightface", {}, 179807616),  # ResNet-50's widths, one block per stage
        ("insightface", {"use_pre_activation": True}, 179807616),  # the same products
        ("insightface", {"block_type": "basic_block"}, None),  # counted 108,881,280
        ("insightface", {"input_conv_kernel_sizes": [3]}, None),  # counted 168,011,136
        ("resnet50", {}, 6 * flops.resnet50_forward_macs(32, 100, (1, 1, 1, 1))),
        ("resnet50", {"block_type": "basic_block"}, None),
    ],
)
def test_keras_resnet_states_resnet50s_formula_only_for_resnet50_but_its_depths(
    capsys, model, overrides, stated
):
    """Review: the Keras workloads stated ResNet-50 v1.5's FLOPs for any ResNetBackbone with its
    filters and strides: KerasHub's basic blocks (3 x the forward products of its jaxpr: 108.9 M per
    image of the InsightFace below) or a 3x3 stem (168.0 M) were stated as 179.8 M, the MFU 65%
    too high. Their MFU is n/a now; pre-activation, the same products, keeps the formula."""
    import argparse

    from dlperf.workloads.keras_config import model_hyperparameters
    from dlperf.workloads.keras_models import log_flops

    backbone = model_hyperparameters(model, {"depths": [1, 1, 1, 1], **overrides})
    config = {"backbone": backbone} if model == "insightface" else backbone
    args = argparse.Namespace(
        model=model, image_size=32, num_classes=100, embedding_size=16, sample_rate=1.0,
        explain=True,
    )  # fmt: skip
    log_flops(args, config, "fp32")
    lines = [line for line in capsys.readouterr().out.splitlines() if "dlperf-flops" in line]
    if stated is None:
        assert lines == []
    else:
        (line,) = lines
        assert f"per_sample={stated:.6g} " in line
