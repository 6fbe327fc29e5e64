"""Communication ceiling: busbw, all-reduce time, speedup ceilings; a real 2-process gloo probe."""

from __future__ import annotations

import json
import math

import pytest

from dlperf.measure.ceiling import (
    allreduce_time_s,
    busbw,
    gradient_bytes,
    measure_allreduce_busbw,
    speedup_ceiling,
)


def test_busbw_is_nccl_tests_factor():
    assert busbw(100e9, 8) == pytest.approx(175e9)  # 2 * 7 / 8
    assert busbw(10.0, 2) == pytest.approx(10.0)  # 2 * 1 / 2
    assert busbw(10.0, 1) == 0.0
    with pytest.raises(ValueError):
        busbw(1.0, 0)


def test_allreduce_time_by_hand():
    # ResNet-50: 25.56 M fp32 parameters -> 102.24 MB; 8 ranks at 100 GB/s bus bandwidth
    grads = gradient_bytes(25_557_032)
    assert grads == 102_228_128
    assert allreduce_time_s(grads, 100e9, 8) == pytest.approx(102_228_128 * 1.75 / 100e9)
    assert allreduce_time_s(1e9, 10e9, 2) == pytest.approx(0.1)  # factor 1
    assert allreduce_time_s(1e9, 0.0, 1) == 0.0  # one rank: nothing to reduce


def test_speedup_ceiling_by_hand():
    # t1 = 0.1 s, comm = 0.025 s, 8 devices
    assert speedup_ceiling(0.1, 0.025, 8, overlap=False) == pytest.approx(8 * 0.1 / 0.125)  # 6.4
    assert speedup_ceiling(0.1, 0.025, 8, overlap=True) == pytest.approx(8.0)
    # communication longer than compute: overlap hides only the compute
    assert speedup_ceiling(0.1, 0.2, 4, overlap=True) == pytest.approx(2.0)
    assert speedup_ceiling(0.1, 0.2, 4, overlap=False) == pytest.approx(4 / 3)
    assert speedup_ceiling(0.1, 0.0, 1, overlap=False) == 1.0
    with pytest.raises(ValueError):
        speedup_ceiling(0.0, 0.1, 2, overlap=True)


def _probe(rank: int, world: int, store: str, out: str) -> None:
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    try:
        result = measure_allreduce_busbw(64 * 1024, iters=10, warmup=2)
    finally:
        dist.destroy_process_group()
    with open(f"{out}.{rank}", "w") as handle:
        json.dump(result.__dict__, handle)


def test_measure_allreduce_busbw_on_two_gloo_processes(tmp_path):
    torch_mp = pytest.importorskip("torch.multiprocessing")
    out = tmp_path / "probe"
    torch_mp.spawn(_probe, args=(2, str(tmp_path / "store"), str(out)), nprocs=2, join=True)
    r0, r1 = (json.loads((tmp_path / f"probe.{r}").read_text()) for r in (0, 1))
    assert r0 == r1  # the slowest rank's time: every rank reports the same
    assert r0["backend"] == "gloo" and r0["world_size"] == 2 and r0["size_bytes"] == 65536
    assert r0["time_per_op_s"] > 0 and math.isfinite(r0["algbw_bytes_per_s"])
    assert r0["algbw_bytes_per_s"] == pytest.approx(65536 / r0["time_per_op_s"])
    assert r0["busbw_bytes_per_s"] == pytest.approx(r0["algbw_bytes_per_s"])  # 2(n-1)/n = 1
