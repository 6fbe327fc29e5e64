"""Facts about the node a task ran on: host, CPU, GPUs, driver, topology, versions."""

from __future__ import annotations

import platform
import re
import shutil
import socket
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

# Terminal styling (`nvidia-smi topo -m` underlines its header even into a pipe on an H100 with
# driver 580): kept, it showed as escape codes in the manifest, proof.md and the report
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _run(args: list[str]) -> str | None:
    """A command's output without terminal styling, or None where it is missing or fails."""
    if not shutil.which(args[0]):
        return None
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return ANSI_ESCAPE.sub("", out.stdout).strip() if out.returncode == 0 else None


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def node_facts(frameworks: tuple[str, ...] = ("torch", "transformers")) -> dict[str, Any]:
    """Cheap facts (no framework import): run once per node by its first task."""
    gpus = _run(
        ["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"]
    )
    cuda = driver_cuda_version(_run(["nvidia-smi"]) or "")
    try:
        import os

        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = None
    return {
        "host": socket.gethostname(),
        "cpu_model": cpu_model(),
        "cpus_usable": cores,
        "memory_gb": _mem_gb(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "gpus": [line.strip() for line in gpus.splitlines()] if gpus else [],
        "cuda_driver_version": cuda,
        "topology": _run(["nvidia-smi", "topo", "-m"]),
        "packages": {name: package_version(name) for name in frameworks},
        "env": environment_variables(),
    }


def gpu_models(facts: dict[str, Any]) -> set[str]:
    """The GPU models a node's facts list: each `gpus` line's name (the query's first field)."""
    return {str(g).split(",")[0].strip() for g in facts.get("gpus") or []}


def gpu_text(line: str) -> str:
    """A `gpus` line as a reader reads it: `NVIDIA H100 80GB HBM3, 81559 MiB, 580.159.04` (the
    query's name, memory.total, driver_version) -> `NVIDIA H100 80GB HBM3, 81,559 MiB, driver
    580.159.04`; a line of another shape as it is."""
    fields = [f.strip() for f in line.split(",")]
    memory = re.fullmatch(r"(\d+) MiB", fields[1]) if len(fields) == 3 else None
    if memory is None:
        return line
    return f"{fields[0]}, {int(memory[1]):,} MiB, driver {fields[2]}"


def cudnn_text(version: str) -> str:
    """torch.backends.cudnn.version() as cuDNN's release: 91900 -> 9.19.0 (cuDNN 9 encodes
    major x 10000 + minor x 100 + patch), 8902 -> 8.9.2 (cuDNN 8: major x 1000); else as given."""
    if not version.isdigit():
        return version
    number = int(version)
    major = number // 10000 if number >= 90000 else number // 1000
    rest = number - major * (10000 if number >= 90000 else 1000)
    return f"{major}.{rest // 100}.{rest % 100}"


def config_fact_text(key: str, value: str) -> str:
    """A field of a workload's dlperf-config line as a reader reads it: cuDNN as its release
    (cudnn_text), the GPU's name with spaces (the line writes them as underscores); else as
    logged."""
    if key == "cudnn":
        return cudnn_text(value)
    if key == "gpu":
        return value.replace("_", " ")
    return value


def driver_cuda_version(header: str) -> str | None:
    """The CUDA version the driver supports, from nvidia-smi's header
    (`| NVIDIA-SMI 580.159.04   Driver Version: 580.159.04   CUDA Version: 13.0 |`); the GPU
    query line carries the driver's own version."""
    match = re.search(r"CUDA Version:\s*([0-9.]+)", header)
    return match[1] if match else None


# Variables that change how a framework, its math libraries or its communication behave.
ENV_PREFIXES = (
    "CUDA_", "NCCL_", "CUDNN_", "NVIDIA_", "TORCH_", "PYTORCH_", "XLA_", "TF_", "JAX_",
    "OMP_", "MKL_", "KMP_", "OPENBLAS_", "DNNL_", "ONEDNN_", "UCX_", "FI_", "MALLOC_",
)  # fmt: skip


ENV_PER_ALLOCATION = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES")  # which devices, not how


def environment_variables(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The performance-relevant environment variables a task started with (ENV_PREFIXES)."""
    import os

    environ = dict(os.environ) if environ is None else environ
    return {
        k: v
        for k, v in sorted(environ.items())
        if k.startswith(ENV_PREFIXES) and k not in ENV_PER_ALLOCATION
    }


def _mem_gb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def visible_gpus() -> int | None:
    """GPUs this process may use: CUDA_VISIBLE_DEVICES if set, else what nvidia-smi lists."""
    import os

    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([v for v in visible.split(",") if v.strip() and v.strip() != "-1"])
    listing = _run(["nvidia-smi", "-L"])
    return None if listing is None else len(listing.splitlines())
