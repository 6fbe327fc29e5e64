"""Nameplate dense peaks of GPUs (from their datasheets), achieved TFLOP/s and MFU.

achieved TFLOP/s = FLOPs per sample (dlperf.flops) x samples per second / 1e12; MFU = achieved /
peak. A peak measured on the device itself: dlperf.flops.measure_gemm_peak_tflops.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class DevicePeak:
    """Nameplate dense peaks in TFLOP/s (None: the precision has no hardware support)."""

    name: str
    pattern: str  # regular expression on the lower-cased nvidia-smi name
    fp32: float
    tf32: float | None
    fp16: float | None
    bf16: float | None
    source: str

    def tflops(self, dtype: str) -> float | None:
        if dtype not in DTYPES:
            raise ValueError(f"unknown dtype {dtype!r}; expected one of {', '.join(DTYPES)}")
        value: float | None = getattr(self, dtype)
        return value


DTYPES = ("fp32", "tf32", "fp16", "bf16")

# Dense figures: NVIDIA's datasheets print tensor-core figures "with sparsity"; half of those.
# Order matters: the first pattern that matches wins (variants before the plain name).
DEVICE_PEAKS = (
    # Tesla V100 datasheet (2020): SXM2 15.7 FP32, 125 tensor; PCIe 14 / 112; V100S 16.4 / 130
    DevicePeak("V100S PCIe", r"v100s", 16.4, None, 130.0, None, "NVIDIA V100S datasheet"),
    DevicePeak("V100 PCIe", r"v100-pcie", 14.0, None, 112.0, None, "NVIDIA V100 datasheet"),
    DevicePeak("V100 SXM2", r"v100", 15.7, None, 125.0, None, "NVIDIA V100 datasheet"),
    # A100 datasheet (2021), 40 GB and 80 GB, SXM4 and PCIe alike: 19.5 / 156 / 312 / 312
    DevicePeak("A100", r"a100(?!\d)", 19.5, 156.0, 312.0, 312.0, "NVIDIA A100 datasheet"),
    # H100 datasheet (2023): SXM 67 / 989 / 1979 / 1979 sparse; PCIe 51 / 756 / 1513 / 1513;
    # NVL 60 / 835 / 1671 / 1671
    DevicePeak("H100 NVL", r"h100 nvl", 60.0, 417.5, 835.5, 835.5, "NVIDIA H100 datasheet"),
    DevicePeak("H100 PCIe", r"h100 pcie", 51.0, 378.0, 756.5, 756.5, "NVIDIA H100 datasheet"),
    DevicePeak("H100 SXM", r"h100", 67.0, 494.5, 989.5, 989.5, "NVIDIA H100 datasheet"),
    # H200 datasheet (2024): SXM as H100 SXM; NVL as H100 NVL
    DevicePeak("H200 NVL", r"h200 nvl", 60.0, 417.5, 835.5, 835.5, "NVIDIA H200 datasheet"),
    DevicePeak("H200 SXM", r"h200", 67.0, 494.5, 989.5, 989.5, "NVIDIA H200 datasheet"),
    # L40S datasheet (2023): 91.6 FP32; TF32 183 dense (366 sparse); FP16/BF16 362.05 (733)
    DevicePeak("L40S", r"l40s", 91.6, 183.0, 362.05, 362.05, "NVIDIA L40S datasheet"),
    # A10 datasheet (2021): 31.2 FP32, 125 TF32, 250 FP16/BF16 sparse
    DevicePeak("A10", r"\ba10\b", 31.2, 62.5, 125.0, 125.0, "NVIDIA A10 datasheet"),
)


def device_peak(gpu_name: str) -> DevicePeak | None:
    """The table's entry for a GPU as nvidia-smi names it ("NVIDIA H100 80GB HBM3", or a whole
    --query-gpu=name,... CSV line as the node facts keep it); None when it is not in the table."""
    name = gpu_name.split(",", 1)[0].strip().lower()
    return next((peak for peak in DEVICE_PEAKS if re.search(peak.pattern, name)), None)


def peak_tflops(gpu_name: str, dtype: str) -> float | None:
    """Nameplate dense peak of this GPU at this precision (fp32, tf32, fp16, bf16), or None."""
    peak = device_peak(gpu_name)
    return peak.tflops(dtype) if peak else None


def achieved_tflops(flops_per_sample: float, samples_per_s: float) -> float:
    return flops_per_sample * samples_per_s / 1e12


def mfu(flops_per_sample: float, samples_per_s: float, peak_tflops: float | None) -> float:
    """Achieved TFLOP/s over the peak; nan when there is no usable peak."""
    if peak_tflops is None or not math.isfinite(peak_tflops) or peak_tflops <= 0:
        return math.nan
    return achieved_tflops(flops_per_sample, samples_per_s) / peak_tflops
