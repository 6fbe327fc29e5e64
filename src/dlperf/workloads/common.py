"""What every built-in workload shares: its command line (built by BuiltinWorkload.command), its
start-up, and the writer of the `dlperf-*` lines the built-in parser reads (dlperf.logline)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from dlperf import flops
from dlperf.logline import emit as log  # noqa: F401  (the workloads' one writer of dlperf lines)
from dlperf.vocabulary import DEVICES, MODELS, PRECISIONS
from dlperf.workloads.options import add_arguments

# The step clock: the wall time when the workload started plus a monotonic clock since. Steps
# stamped with it keep epoch times (comparable with the harness's) but never move with a clock
# stepped during the run (NTP, a VM resumed), which made a window of seconds read an hour.
_EPOCH_AT_START, _MONOTONIC_AT_START = time.time(), time.perf_counter()


def step_clock() -> float:
    """Seconds since the epoch, on a monotonic clock (what every step and sample is stamped with)."""
    return _EPOCH_AT_START + (time.perf_counter() - _MONOTONIC_AT_START)


def workload_parser(
    description: str, precision_help: str, model_config_help: str
) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--model", choices=list(MODELS), required=True)
    p.add_argument("--batch-size", type=int, required=True, help="per device")
    p.add_argument("--precision", choices=PRECISIONS, default="fp32", help=precision_help)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--device", choices=DEVICES, default="auto")
    add_arguments(p, {"model_config": model_config_help})
    p.add_argument(
        "--power-interval-s", type=float, default=0.1, help="NVML sampling period (0: none)"
    )
    p.add_argument(
        "--explain",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="FLOPs, peak, all-reduce probe and NVML lines (--no-explain: only steps and memory; "
        "benchmarks/explain_overhead.py compares the two)",
    )
    return p


def model_config_overrides(
    args: argparse.Namespace, fields: Iterable[str], owner: str
) -> dict[str, Any]:
    """--model-config's JSON, every key checked against the configuration's fields: a typo would
    otherwise train the default-sized model, silently (issue 20.10)."""
    given: dict[str, Any] = json.loads(args.model_config)
    known = set(fields)
    unknown = sorted(set(given) - known)
    if unknown:
        raise SystemExit(
            f"dlperf: model_config: {', '.join(unknown)}: not a field of {owner}"
            f" (its fields: {', '.join(sorted(known))})"
        )
    return given


def start_rank(args: argparse.Namespace) -> tuple[int, int, int, int]:
    """Cap the address space if asked (a CPU run's real OOM), and read this rank's place from the
    environment torchrun/submitit/srun set: (rank, world size, local rank, local world size)."""
    if args.memory_limit_gb:
        limit = int(args.memory_limit_gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    env = os.environ
    return (
        int(env.get("RANK", 0)),
        int(env.get("WORLD_SIZE", 1)),
        int(env.get("LOCAL_RANK", 0)),
        int(env.get("LOCAL_WORLD_SIZE", 1)),
    )


def require_modules(framework: str, modules: Iterable[str], environment: str) -> None:
    """Stop, naming what is missing and where it comes from, when this interpreter lacks the
    framework's packages: a built-in workload runs in the environment the workflow builds for it."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise SystemExit(
            f"dlperf: the {framework} workload needs {', '.join(missing)}: it runs in the "
            f"environment the workflow builds from {environment}"
        )


def train_steps(
    rank: int,
    args: argparse.Namespace,
    gpu_index: int | None,
    step: Callable[[], float],
    fields: Callable[[], dict[str, str]] = dict,
) -> None:
    """The measured part of every built-in workload: `args.steps` calls of `step`, each stamped
    on the step clock and written as a `dlperf-step` line (with `fields()`, e.g. CUDA-event
    times), and NVML sampled around them (PowerSampler, on GPU `gpu_index`). `step` trains one
    step and returns its loss only once the device has finished it: that wait is what makes the
    end timestamp the step's end."""
    power = PowerSampler(rank, gpu_index, args.power_interval_s if args.explain else 0).start()
    for i in range(1, args.steps + 1):
        start = step_clock()
        loss = step()
        end = step_clock()
        log(
            "step",
            rank=rank,
            step=i,
            samples=args.batch_size,
            start=f"{start:.6f}",
            end=f"{end:.6f}",
            loss=f"{loss:.4f}",
            **fields(),
        )
    power.stop()


def fp32_math(compute_capability: tuple[int, ...] | None, tf32_enabled: bool) -> str:
    """What an fp32 cell's matrix products run in, which its MFU's peak is taken at: TF32 on an
    NVIDIA GPU of compute capability 8.0 or later (A100, H100) where the framework allows it (its
    default in TensorFlow, JAX, PaddlePaddle and MXNet; PyTorch's and MindSpore's for cuDNN
    convolutions only), else fp32."""
    return "tf32" if tf32_enabled and (compute_capability or (0, 0)) >= (8, 0) else "fp32"


def jax_allows_tf32(default_matmul_precision: str | None) -> bool:
    """JAX's jax_default_matmul_precision: unset (DEFAULT), 'tensorfloat32' or 'fastest' let an
    fp32 product run in TF32; 'highest', 'float32', 'high' or 'bfloat16_3x' keep (near) fp32."""
    return default_matmul_precision in (None, "default", "tensorfloat32", "fastest")


def log_memory(rank: int, peak_allocated_bytes: float | None = None, **fields: Any) -> None:
    """The `dlperf-memory rank=R peak_rss_mb=X [peak_allocated_mb=Y]` line that ends every run:
    the process's peak resident memory and, on a GPU, the framework allocator's peak."""
    if peak_allocated_bytes is not None:
        fields["peak_allocated_mb"] = f"{peak_allocated_bytes / 2**20:.1f}"
    log("memory", rank=rank, peak_rss_mb=f"{peak_rss_mb():.1f}", **fields)


def leave_together(barrier: Callable[[], Any]) -> None:
    """End a data-parallel rank once every rank is done, skipping the framework's teardown.

    Rank 0 hosts the TCPStore every rank's group talks through, and tearing it and the group down
    while a peer disconnects can abort the process (PaddlePaddle: SIGABRT, once in a CI run) or
    hang it (PyTorch's destroy_process_group over gloo: both ranks of a complete run hung until
    the time limit, once in a CI run). Nothing is left to measure or write here, so the ranks meet
    at a barrier and leave without running destructors."""
    barrier()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def peak_rss_mb() -> float:
    """This process's peak resident memory in MiB (ru_maxrss is KiB on Linux): every workload's
    `dlperf-memory rank=R peak_rss_mb=X [peak_allocated_mb=Y]` line at the end of its run."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def log_stated_flops(
    rank: int,
    args: argparse.Namespace,
    math: str,
    bert: flops.BertShape | None = None,
    depths: tuple[int, ...] = (3, 4, 6, 3),
    decoder: flops.DecoderShape | None = None,
) -> None:
    """The `dlperf-flops` line of a workload without a FLOP counter: dlperf.flops' stated
    formulas for the model it built (ResNet-50 v1.5 with these depths; BERT of this shape; GPT:
    the decoder formula, 6 N + 12 L s h per token, of this shape)."""
    if not args.explain:
        return
    if args.model == "resnet50":
        per_sample = flops.resnet50_training_flops_per_sample(
            args.image_size, args.num_classes, depths
        )
    elif args.model == "gpt":
        per_sample = flops.decoder_training_flops_per_sequence(
            decoder or flops.DecoderShape(), args.seq_len
        )
    else:
        shape = bert or flops.BertShape()
        per_sample = flops.bert_pretraining_flops_per_sample(
            shape, args.seq_len, args.max_predictions
        )
    log(
        "flops", rank=rank, per_sample=f"{per_sample:.6g}", math=math, method="formula_dlperf.flops"
    )


def log_measured_peak(
    rank: int,
    args: argparse.Namespace,
    math: str,
    matmul_of: Callable[[int], Callable[[], Any]],
    sync: Callable[[], Any],
    gpu: str = "none",
) -> None:
    """The `dlperf-peak` line: this device's matrix products in `math` precision, timed with the
    framework's own product (`matmul_of(n)` returns one of n x n matrices). A precision the
    framework cannot multiply in on this device gives no line (MFU is then n/a). `gpu`: the
    device's name, "none" on a CPU, logline.UNNAMED_GPU where the framework cannot name it."""
    if args.calibrate_s <= 0 or not args.explain:
        return
    n = 8192 if gpu != "none" else 1024
    started = time.perf_counter()
    try:
        tflops = flops.time_matmuls(matmul_of(n), sync, n, args.calibrate_s)
    except Exception as err:  # e.g. no bf16 matmul kernel on this CPU
        print(f"dlperf: no {math} peak measured: {type(err).__name__}: {err}", flush=True)
        return
    log(
        "peak",
        rank=rank,
        math=math,
        measured_tflops=f"{tflops:.4g}",
        gpu=gpu.replace(" ", "_"),
        seconds=f"{time.perf_counter() - started:.3f}",  # what the calibration cost the run
    )


class PowerSampler:
    """NVML power, energy counter and used memory of this rank's GPU, sampled in a thread every
    `interval` seconds from start() to stop(), then written as `dlperf-power` lines (one per
    sample; the tables keep those inside the measured window). Without NVML (a CPU run, no
    nvidia-ml-py, no driver) one line says why, and energy is n/a with that reason."""

    def __init__(self, rank: int, device_index: int | None, interval: float) -> None:
        self.rank, self.interval = rank, max(interval, 0.01)
        self.off = interval <= 0  # not asked for: no thread, no line
        self.samples: list[tuple[float, float, float | None, float]] = []
        self.reason = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._read: Callable[[], tuple[float, float | None, float]] | None = None
        self.gpu = "none"
        if self.off:
            return
        if device_index is None:
            self.reason = "no NVML power counter: a CPU run"
            return
        try:
            import pynvml  # nvidia-ml-py

            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByIndex(_nvml_index(device_index))
        except Exception as err:  # no module, no driver, no such device: say which
            self.reason = f"no NVML power counter: {type(err).__name__}: {err}"
            return
        self.gpu = str(device_index)
        self._read = lambda: _nvml_read(pynvml, handle)

    def start(self) -> PowerSampler:
        if self._read is not None:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        assert self._read is not None
        while not self._stop.is_set():
            watts, energy_mj, used_mb = self._read()
            self.samples.append((step_clock(), watts, energy_mj, used_mb))
            self._stop.wait(self.interval)

    def stop(self) -> None:
        if self.off:
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            assert self._read is not None
            # a last reading now: with fast steps, none of the thread's may follow the window
            try:
                watts, energy_mj, used_mb = self._read()
                self.samples.append((step_clock(), watts, energy_mj, used_mb))
            except Exception:  # noqa: BLE001 - NVML not supported, or a transient error: the
                pass  # thread's samples stand (or "no sample taken" says why there are none)
        if not self.samples:
            log("power", rank=self.rank, gpu="none", reason=self.reason or "no sample taken")
        for t, watts, energy_mj, used_mb in self.samples:
            energy = {"energy_mj": f"{energy_mj:.0f}"} if energy_mj is not None else {}
            log(
                "power",
                rank=self.rank,
                gpu=self.gpu,
                t=f"{t:.3f}",
                watts=f"{watts:.1f}",
                used_mb=f"{used_mb:.1f}",
                **energy,
            )


def _nvml_index(device_index: int) -> int:
    """NVML numbers every GPU of the node; CUDA numbers the visible ones."""
    visible = [v for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    if device_index < len(visible) and visible[device_index].strip().isdigit():
        return int(visible[device_index])
    return device_index


def _nvml_read(pynvml: object, handle: object) -> tuple[float, float | None, float]:
    nvml: Any = pynvml
    watts = nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0
    try:  # total energy since the driver loaded (Volta and newer): exact, not sampled
        energy_mj: float | None = float(nvml.nvmlDeviceGetTotalEnergyConsumption(handle))
    except Exception:
        energy_mj = None
    used_mb = nvml.nvmlDeviceGetMemoryInfo(handle).used / 2**20
    return watts, energy_mj, used_mb
