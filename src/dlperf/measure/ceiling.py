"""The communication ceiling: the speedup a perfect data-parallel framework could reach.

Inputs: the all-reduce bus bandwidth measured in the run's own allocation, the model's gradient
bytes and the step time on one device. Definitions follow nccl-tests (doc/PERFORMANCE.md):

- algbw = S / t for an all-reduce of S bytes taking t seconds;
- busbw = algbw * 2 (n - 1) / n for n ranks: a ring all-reduce moves 2 (n - 1) / n * S bytes
  through each rank's slowest link, so busbw is comparable across n and with the link's speed.

A data-parallel step on n devices (weak scaling: the per-device batch is fixed) takes t1 of
compute plus the all-reduce of the gradients, comm = S * 2 (n - 1) / (n * busbw). Two models,
stated beside every ceiling figure:

- no overlap (communication after the backward pass): speedup = n * t1 / (t1 + comm);
- full overlap (communication hidden behind the backward pass): n * t1 / max(t1, comm).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any


def bus_factor(n: int) -> float:
    """2 (n - 1) / n: bytes through each rank's link per byte all-reduced (ring)."""
    if n < 1:
        raise ValueError(f"number of ranks must be >= 1, got {n}")
    return 2 * (n - 1) / n


def busbw(algbw_bytes_per_s: float, n: int) -> float:
    """nccl-tests' bus bandwidth of an all-reduce over n ranks."""
    return algbw_bytes_per_s * bus_factor(n)


def allreduce_time_s(grad_bytes: float, busbw_bytes_per_s: float, n: int) -> float:
    """Seconds to all-reduce grad_bytes over n ranks at this bus bandwidth (0 on one rank)."""
    if n == 1:
        return 0.0
    if busbw_bytes_per_s <= 0:
        raise ValueError(f"bus bandwidth must be > 0, got {busbw_bytes_per_s}")
    return grad_bytes * bus_factor(n) / busbw_bytes_per_s


def gradient_bytes(parameters: int, bytes_per_gradient: int = 4) -> int:
    """Bytes all-reduced per step: one gradient per parameter (4 for fp32, 2 for fp16/bf16)."""
    return parameters * bytes_per_gradient


def speedup_ceiling(step_time_1dev_s: float, comm_s: float, devices: int, overlap: bool) -> float:
    """The speedup over one device a framework could reach if communication were its only cost."""
    if step_time_1dev_s <= 0 or devices < 1 or comm_s < 0:
        raise ValueError(
            f"need step_time_1dev_s > 0, comm_s >= 0, devices >= 1 "
            f"(got {step_time_1dev_s}, {comm_s}, {devices})"
        )
    if overlap:
        return devices * step_time_1dev_s / max(step_time_1dev_s, comm_s)
    return devices * step_time_1dev_s / (step_time_1dev_s + comm_s)


@dataclass(frozen=True)
class AllReduceBandwidth:
    size_bytes: int
    world_size: int
    iterations: int
    time_per_op_s: float  # the slowest rank's average
    algbw_bytes_per_s: float
    busbw_bytes_per_s: float
    backend: str


def measure_allreduce_busbw(
    size_bytes: int, iters: int = 20, warmup: int = 5, group: Any = None
) -> AllReduceBandwidth:
    """All-reduce a float32 buffer of about size_bytes ``iters`` times in the current process
    group (gloo or nccl; every rank must call it) and report nccl-tests' algbw and busbw.

    The buffer lives on this rank's CUDA device under nccl, on the CPU otherwise. Each rank times
    its own loop (after a barrier); the slowest rank's time is used, so all ranks return the
    same figures.
    """
    import torch
    import torch.distributed as dist

    backend = str(dist.get_backend(group))
    world = dist.get_world_size(group)
    device = torch.device("cuda", torch.cuda.current_device()) if backend == "nccl" else None
    elements = max(1, size_bytes // 4)
    buffer = torch.ones(elements, dtype=torch.float32, device=device)
    for _ in range(warmup):
        dist.all_reduce(buffer, group=group)
    _sync(device)
    dist.barrier(group=group)
    start = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(buffer, group=group)
    _sync(device)
    elapsed = torch.tensor([time.perf_counter() - start], dtype=torch.float64, device=device)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX, group=group)
    per_op_s = float(elapsed.item()) / iters
    nbytes = elements * 4
    algbw = nbytes / per_op_s
    return AllReduceBandwidth(nbytes, world, iters, per_op_s, algbw, busbw(algbw, world), backend)


def _sync(device: Any) -> None:
    if device is not None:
        import torch

        torch.cuda.synchronize(device)
