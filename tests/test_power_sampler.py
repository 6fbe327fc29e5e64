"""The workloads' NVML sampler (dlperf.workloads.common.PowerSampler) without a GPU: a stand-in
pynvml module answers as NVML does, and the lines it writes are read back by the tables' parser.
On a GPU node the real nvidia-ml-py answers instead (../shared/gpu)."""

from __future__ import annotations

import statistics
import sys
import time
import types
from collections.abc import Callable

import pytest

from dlperf import logline
from dlperf.workloads.common import PowerSampler


def fake_nvml(watts: float = 350.0, fail: Exception | None = None) -> types.ModuleType:
    nvml = types.ModuleType("pynvml")
    opened: list[int] = []

    def init() -> None:
        if fail:
            raise fail

    def handle(index: int) -> int:
        opened.append(index)
        return index

    start = time.monotonic()  # the counter never steps back with the wall clock
    nvml.nvmlInit = init  # type: ignore[attr-defined]
    nvml.nvmlDeviceGetHandleByIndex = handle  # type: ignore[attr-defined]
    nvml.nvmlDeviceGetPowerUsage = lambda h: int(watts * 1000)  # type: ignore[attr-defined]
    nvml.nvmlDeviceGetTotalEnergyConsumption = (  # type: ignore[attr-defined]
        lambda h: int((time.monotonic() - start) * watts * 1000)
    )
    nvml.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(used=3 * 2**30)  # type: ignore[attr-defined]
    nvml.opened = opened  # type: ignore[attr-defined]
    return nvml


def wait_for(condition: Callable[[], bool], what: str, limit_s: float = 30) -> None:
    """Until `condition()` holds: however slowly a loaded machine runs the sampler's thread."""
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, f"{what} within {limit_s} s"
        time.sleep(0.01)


def lines(capsys) -> list[dict[str, str]]:
    parsed = [logline.parse_line(line) for line in capsys.readouterr().out.splitlines()]
    return [fields for kind, fields in filter(None, parsed) if kind == logline.POWER]


def test_samples_the_ranks_own_gpu_through_cuda_visible_devices(monkeypatch, capsys):
    nvml = fake_nvml()
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    sampler = PowerSampler(rank=1, device_index=1, interval=0.01).start()
    wait_for(  # at 100 Hz, 1 s takes ~100 samples; a loaded machine takes fewer, or longer
        lambda: len(sampler.samples) >= 20 and sampler.samples[-1][0] - sampler.samples[0][0] >= 1,
        "20 samples over 1 s",
    )
    sampler.stop()
    assert nvml.opened == [5]  # CUDA's device 1 is NVML's 5
    samples = lines(capsys)
    assert len(samples) >= 21  # the thread's, and the last one at stop
    assert {s["rank"] for s in samples} == {"1"} and {s["gpu"] for s in samples} == {"1"}
    assert {s["watts"] for s in samples} == {"350.0"} and samples[0]["used_mb"] == "3072.0"
    t = [float(s["t"]) for s in samples]
    energy = [float(s["energy_mj"]) for s in samples]
    assert t == sorted(t) and energy == sorted(energy)
    # J/s of the counter: the watts. A fit over every sample: a stall between one reading and
    # its time stamp (a loaded machine) moves one point, not the slope
    rate = statistics.linear_regression(t, energy).slope / 1000
    assert rate == pytest.approx(350.0, rel=0.25)


def test_a_cpu_run_or_a_missing_driver_says_why(monkeypatch, capsys):
    PowerSampler(rank=0, device_index=None, interval=0.1).start().stop()
    assert lines(capsys) == [
        {"rank": "0", "gpu": "none", "reason": "no NVML power counter: a CPU run"}
    ]
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml(fail=OSError("libnvidia-ml.so.1 missing")))
    PowerSampler(rank=0, device_index=0, interval=0.1).start().stop()
    (line,) = lines(capsys)
    assert line["gpu"] == "none"
    assert line["reason"] == "no NVML power counter: OSError: libnvidia-ml.so.1 missing"


def test_a_last_sample_is_taken_at_stop(monkeypatch, capsys):
    """Review: sampling every 0.1 s with two steps after the window, steps under ~50 ms left
    the window's end without a sample after it (10 of 10 runs at 20 ms), and joules per sample
    read n/a. The sampler reads once more when it stops."""
    from dlperf.workloads.common import step_clock

    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml())
    sampler = PowerSampler(rank=0, device_index=0, interval=3600.0).start()
    wait_for(lambda: len(sampler.samples) == 1, "the thread's first sample")
    time.sleep(0.01)  # the lines print milliseconds
    window_end = step_clock()
    time.sleep(0.01)  # the lines print milliseconds
    sampler.stop()
    t = [float(s["t"]) for s in lines(capsys)]
    assert len(t) == 2 and t[0] < window_end < t[1]  # the thread's first, and the last at stop


def test_a_power_reading_that_fails_at_stop_fails_no_run(monkeypatch, capsys):
    """Review: NVML that cannot read power (vGPU, WSL, a transient error) made the last reading
    at stop raise, and every built-in run on such a GPU failed; before, the sampler said why it
    had no sample. It still does."""
    nvml = fake_nvml()

    def unsupported(handle):
        raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")

    nvml.nvmlDeviceGetPowerUsage = unsupported  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    sampler = PowerSampler(rank=0, device_index=0, interval=0.01).start()
    time.sleep(0.05)
    sampler.stop()  # no exception
    (line,) = lines(capsys)
    assert line["reason"] == "no sample taken"
