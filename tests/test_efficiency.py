"""The figures that explain a throughput (dlperf.measure.efficiency), by hand-computed values: MFU against
a nameplate or a measured peak, memory, energy over the measured window, the speedup ceiling."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from dlperf import logline
from dlperf.measure.efficiency import add_ceiling, cell_figures, run_figures
from dlperf.measure.stats import Window, run_throughput
from dlperf.parse.facts import parse_facts
from dlperf.parse.records import Method, ParseError, ParseResult, StepRecord

WINDOW = Window(warmup=1, measure=4)
T0 = 1_763_780_000.0


def rank_log(tmp_path: Path, rank: int, *facts: tuple[str, dict]) -> tuple[Path, list[StepRecord]]:
    """A rank's log: 5 steps of 10 samples, 0.5 s each from T0, then the given dlperf lines."""
    path = tmp_path / f"rank{rank}.log"
    lines = [
        logline.format_line(
            "step", rank=rank, step=s, samples=10, start=T0 + (s - 1) / 2, end=T0 + s / 2
        )
        for s in range(1, 6)
    ]
    lines += [logline.format_line(kind, **fields) for kind, fields in facts]
    path.write_text("\n".join(lines) + "\n")
    records = [
        StepRecord(rank, s, 1, 10, str(path), s, time_s=T0 + s / 2, start_s=T0 + (s - 1) / 2)
        for s in range(1, 6)
    ]
    return path, records


def figures(
    logs_and_records: list[tuple[Path, list[StepRecord]]], devices: int, **more: object
) -> dict:
    logs = [log for log, _ in logs_and_records]
    records = [r for _, rs in logs_and_records for r in rs]
    result = run_throughput(ParseResult(records, Method.TIMESTAMPS), WINDOW)
    return run_figures(parse_facts(logs), result, records, WINDOW, devices, **more)  # type: ignore[arg-type]


def test_mfu_against_the_gpus_nameplate_and_the_measured_peak(tmp_path):
    flops = ("flops", {"rank": 0, "per_sample": "1e12", "math": "fp16", "method": "counted"})
    peak = (
        "peak",
        {"rank": 0, "math": "fp16", "measured_tflops": 700, "gpu": "NVIDIA_H100_80GB_HBM3"},
    )
    row = figures([rank_log(tmp_path, 0, flops, peak)], devices=1)
    # window: steps 2-5, 40 samples in 2 s = 20 samples/s x 1e12 FLOPs = 20 TFLOP/s
    assert row["achieved_tflops"] == pytest.approx(20.0)
    assert row["peak_tflops"] == 989.5 and row["peak_source"] == "H100 SXM fp16 nameplate"
    assert row["mfu_pct"] == pytest.approx(100 * 20 / 989.5)
    assert row["peak_measured_tflops"] == 700
    assert row["explain_trace"] == "rank0.log:6,rank0.log:7"

    cpu = ("peak", {"rank": 0, "math": "fp16", "measured_tflops": 40, "gpu": "none"})
    row = figures([rank_log(tmp_path, 0, flops, cpu)], devices=1)
    assert row["peak_source"] == "measured fp16 GEMM on this device"
    assert row["mfu_pct"] == pytest.approx(50.0)

    # a calibration slower than the training itself (the machine was busy while it ran): no MFU,
    # and the peak source says why, never an MFU over 100%
    slow = ("peak", {"rank": 0, "math": "fp16", "measured_tflops": 5, "gpu": "none"})
    row = figures([rank_log(tmp_path, 0, flops, slow)], devices=1)
    assert math.isnan(row["mfu_pct"]) and row["peak_tflops"] == 5
    assert "below the achieved rate" in row["peak_source"]


def test_products_faster_than_the_stated_precisions_nameplate_give_no_mfu(tmp_path):
    """Review: an "fp32" cell whose products ran in TF32 (TensorFlow's and JAX's default on an
    H100) had its MFU taken against the 67 TFLOP/s fp32 nameplate: 298%, with its own calibration
    at 380 TFLOP/s saying otherwise."""
    flops = ("flops", {"rank": 0, "per_sample": "1e13", "math": "fp32", "method": "counted"})
    gpu = "NVIDIA_H100_80GB_HBM3"
    tf32 = ("peak", {"rank": 0, "math": "fp32", "measured_tflops": 380, "gpu": gpu})
    row = figures([rank_log(tmp_path, 0, flops, tf32)], devices=1)  # 20 samples/s: 200 TFLOP/s
    assert math.isnan(row["mfu_pct"]) and row["peak_tflops"] == 67.0
    assert "the products ran faster than fp32: no MFU" in row["peak_source"]
    boost = ("peak", {"rank": 0, "math": "fp32", "measured_tflops": 70, "gpu": gpu})
    slow = ("flops", {"rank": 0, "per_sample": "1e12", "math": "fp32", "method": "counted"})
    row = figures([rank_log(tmp_path, 0, slow, boost)], devices=1)  # within the slack: an MFU
    assert row["mfu_pct"] == pytest.approx(100 * 20 / 67.0)
    # a known GPU without a figure at the precision (a V100's bf16): its calibration is the peak,
    # and one slower than the training gives no MFU, as on an unknown device
    bf16 = ("flops", {"rank": 0, "per_sample": "1e12", "math": "bf16", "method": "counted"})
    v100 = ("peak", {"rank": 0, "math": "bf16", "measured_tflops": 18, "gpu": "Tesla_V100-SXM2"})
    row = figures([rank_log(tmp_path, 0, bf16, v100)], devices=1)
    assert math.isnan(row["mfu_pct"]) and "below the achieved rate" in row["peak_source"]


def test_an_upstream_gpt_runs_mfu_is_against_its_gpus_nameplate_at_its_precision(tmp_path):
    """Review: a Megatron-LM run (FLOPs by formula, no dlperf-peak line) never had an MFU ("no
    peak: neither a known GPU nor a calibration") though its record names the GPU, and the
    formula's products were taken as fp32 (an fp16 run against 15.7 TFLOP/s on a V100)."""
    from dlperf.flops import FlopsFormula

    formula = FlopsFormula(1e12, "6 N + 12 L s h", "fp16")
    log = rank_log(tmp_path, 0)
    row = figures([log], devices=1, formula=formula, hardware="Tesla V100-SXM2-16GB")
    assert row["peak_source"] == "V100 SXM2 fp16 nameplate" and row["peak_tflops"] == 125.0
    assert row["mfu_pct"] == pytest.approx(100 * 20 / 125.0)
    mixed = figures([log], devices=1, formula=formula, hardware="NVIDIA A100; Tesla V100")
    assert math.isnan(mixed["mfu_pct"])  # two models: no one nameplate


def test_a_gpu_its_framework_cannot_name_takes_the_nodes_gpu_model(tmp_path):
    """Review: MXNet's and MindSpore's peak lines named their GPU "gpu0" and "gpu" (their APIs
    give no device name), which replaced the node's GPU model from nvidia-smi: no nameplate, and
    the MFU of every such GPU run was against the calibration instead of the datasheet."""
    flops = ("flops", {"rank": 0, "per_sample": "1e12", "math": "fp16", "method": "formula"})
    unnamed = ("peak", {"rank": 0, "math": "fp16", "measured_tflops": 700, "gpu": "cuda"})
    log = rank_log(tmp_path, 0, flops, unnamed)
    row = figures([log], devices=1, hardware="NVIDIA H100 80GB HBM3")
    assert row["peak_source"] == "H100 SXM fp16 nameplate" and row["peak_tflops"] == 989.5
    assert row["mfu_pct"] == pytest.approx(100 * 20 / 989.5)
    alone = figures([log], devices=1)  # no node facts: the calibration is the peak
    assert alone["peak_source"] == "measured fp16 GEMM on this device"
    assert alone["mfu_pct"] == pytest.approx(100 * 20 / 700)


def test_two_ranks_share_the_flops_per_device(tmp_path):
    flops = ("flops", {"rank": 0, "per_sample": "1e12", "math": "fp32", "method": "formula"})
    peak = ("peak", {"rank": 0, "math": "fp32", "measured_tflops": 20, "gpu": "none"})
    row = figures([rank_log(tmp_path, 0, flops, peak), rank_log(tmp_path, 1)], devices=2)
    # 80 samples in 2 s over two devices: 20 TFLOP/s each, all of the measured peak
    assert row["achieved_tflops"] == pytest.approx(20.0)
    assert row["mfu_pct"] == pytest.approx(100.0)


def test_explain_cost_is_the_sum_of_the_timed_lines(tmp_path):
    """The count, the calibration and the probe state their seconds; a line without (an older
    log, a stated formula) adds nothing, and none timed leaves the cost n/a, never 0."""
    flops = ("flops", {"rank": 0, "per_sample": "1e9", "math": "fp32", "seconds": "0.512"})
    peak = ("peak", {"rank": 0, "math": "fp32", "measured_tflops": 1, "seconds": "0.263"})
    comm = ("comm", {"rank": 0, "bytes": 1000, "busbw_gb_s": "2", "seconds": "0.800"})
    row = figures([rank_log(tmp_path, 0, flops, peak, comm), rank_log(tmp_path, 1)], devices=2)
    assert row["explain_s"] == pytest.approx(0.512 + 0.263 + 0.8)
    formula = ("flops", {"rank": 0, "per_sample": "1e9", "math": "fp32", "method": "formula"})
    assert figures([rank_log(tmp_path, 0, formula, peak)], devices=1)["explain_s"] == 0.263
    assert math.isnan(figures([rank_log(tmp_path, 0, formula)], devices=1)["explain_s"])


def test_no_flops_line_leaves_mfu_nan_never_zero(tmp_path):
    row = figures([rank_log(tmp_path, 0)], devices=1)
    assert math.isnan(row["mfu_pct"]) and math.isnan(row["achieved_tflops"])
    assert "does not sample NVML" in row["energy_detail"]
    assert math.isnan(row["energy_j_per_sample"])


def test_memory_is_the_largest_ranks_device_peak_else_its_rss(tmp_path):
    cpu = [
        rank_log(tmp_path, r, ("memory", {"rank": r, "peak_rss_mb": rss}))
        for r, rss in ((0, 800), (1, 950))
    ]
    row = figures(cpu, devices=2)
    assert row["peak_mem_mib"] == 950 and row["peak_rss_mib"] == 950
    gpu = ("memory", {"rank": 0, "peak_rss_mb": 3000, "peak_allocated_mb": 41000})
    row = figures([rank_log(tmp_path, 0, gpu)], devices=1)
    assert row["peak_mem_mib"] == 41000 and row["peak_rss_mib"] == 3000


def power(rank: int, t: float, watts: float, energy_mj: float | None = None) -> tuple[str, dict]:
    fields = {"rank": rank, "gpu": rank, "t": T0 + t, "watts": watts, "used_mb": 1000 + rank}
    if energy_mj is not None:
        fields["energy_mj"] = energy_mj
    return ("power", fields)


def test_energy_from_the_counter_inside_the_window_only(tmp_path):
    # the counter rises 400 J/s (400 W); the window is steps 2-5: t = 0.5 s to 2.5 s
    samples = [power(0, t, 999.0, 400_000 * t) for t in (0.0, 0.3, 1.1, 2.0, 2.9)]
    row = figures([rank_log(tmp_path, 0, *samples)], devices=1)
    assert row["energy_j_per_sample"] == pytest.approx(400 * 2.0 / 40)  # 800 J over 40 samples
    assert row["power_w_per_device"] == pytest.approx(400.0)
    assert row["energy_detail"] == "NVML energy counter over the measured window, 1 GPUs"
    assert row["device_mem_used_mib"] == 1000
    assert row["explain_trace"] == ",5 power samples"


def test_energy_from_power_samples_when_there_is_no_counter(tmp_path):
    # rank 0 draws 300 W throughout; rank 1 ramps 100 W -> 500 W over 0-3 s
    ranks = [
        rank_log(tmp_path, 0, *[power(0, t, 300.0) for t in (0.0, 1.0, 2.0, 3.0)]),
        rank_log(tmp_path, 1, *[power(1, t, 100.0 + t * 400 / 3) for t in (0.0, 1.5, 3.0)]),
    ]
    row = figures(ranks, devices=2)
    ramp = (100 + 0.5 * 400 / 3 + 100 + 2.5 * 400 / 3) / 2 * 2.0  # trapezoid, linear: exact
    assert row["energy_j_per_sample"] == pytest.approx((600 + ramp) / 80)
    assert row["power_w_per_device"] == pytest.approx((300 + ramp / 2) / 2)
    assert row["energy_detail"].startswith("NVML power over the measured window, 2 GPUs")
    assert row["device_mem_used_mib"] == 1001


def test_energy_is_na_with_the_reason(tmp_path):
    none = ("power", {"rank": 0, "gpu": "none", "reason": "no NVML power counter: a CPU run"})
    row = figures([rank_log(tmp_path, 0, none)], devices=1)
    assert math.isnan(row["energy_j_per_sample"])
    assert row["energy_detail"] == "no NVML power counter: a CPU run"
    short = [power(0, t, 300.0) for t in (1.0, 2.0, 3.0)]  # starts after the window did
    row = figures([rank_log(tmp_path, 0, *short)], devices=1)
    assert math.isnan(row["energy_j_per_sample"])
    assert row["energy_detail"] == "rank 0: its power samples do not cover the window"


def test_an_unreadable_fact_is_a_parse_error_naming_the_line(tmp_path):
    log, records = rank_log(tmp_path, 0, ("flops", {"rank": 0, "per_sample": "lots"}))
    with pytest.raises(ParseError, match=r"rank0.log:6: dlperf-flops field per_sample='lots'"):
        figures([(log, records)], devices=1)


def test_the_speedup_ceiling_by_hand():
    cells = pd.DataFrame(
        [
            {"cell_id": "pytorch.bert_base.fp32.noxla.b10.1n1g", "devices": 1,
             "throughput_median": 100.0, "batch_size_resolved": 10, "busbw_gb_s": math.nan},
            {"cell_id": "pytorch.bert_base.fp32.noxla.b10.1n2g", "devices": 2,
             "throughput_median": 150.0, "batch_size_resolved": 10, "busbw_gb_s": 1.0,
             "speedup": 1.5},
        ]
    )  # fmt: skip
    runs = pd.DataFrame(
        [{"cell_id": "pytorch.bert_base.fp32.noxla.b10.1n2g", "status": "ok", "comm_bytes": 1e8}]
    )
    out = add_ceiling(cells, runs).set_index("cell_id")
    wide = out.loc["pytorch.bert_base.fp32.noxla.b10.1n2g"]
    # t1 = 10 / 100 = 0.1 s; all-reduce of 1e8 B on 2 ranks at 1 GB/s busbw: 1e8 * 1 / 1e9 = 0.1 s
    assert wide["speedup_ceiling"] == pytest.approx(2 * 0.1 / (0.1 + 0.1))  # no overlap: 1.0
    assert wide["speedup_ceiling_overlap"] == pytest.approx(2.0)
    assert wide["ceiling_model"].startswith("no overlap")
    assert math.isnan(out.loc["pytorch.bert_base.fp32.noxla.b10.1n1g", "speedup_ceiling"])
    no_speedup = add_ceiling(cells.assign(speedup=math.nan), runs)  # e.g. other work than 1n1g's
    assert no_speedup["speedup_ceiling"].isna().all()


def test_cell_figures_are_medians_of_the_ok_runs():
    runs = pd.DataFrame(
        {"mfu_pct": [10.0, 30.0, 20.0], "peak_source": ["A100 fp16 nameplate"] * 3,
         "energy_detail": ["x", "x", "y"]}
    )  # fmt: skip
    row = cell_figures(runs)
    assert row["mfu_pct"] == 20.0  # no achieved TFLOP/s or peak to take it from: the runs' median
    assert row["peak_source"] == "A100 fp16 nameplate" and row["energy_detail"] == "x; y"
    assert math.isnan(row["busbw_gb_s"])


def test_a_cells_mfu_is_its_achieved_tflops_over_its_peak():
    """Review: with a peak each run calibrates, the median of the runs' MFUs (0.101%) was neither
    the median achieved TFLOP/s over the median peak (0.128%) nor any one run's."""
    achieved, peaks = [8.25e-05, 9.0e-05, 7.0e-05], [0.0900, 0.0647, 0.0500]
    mfus = [100 * a / p for a, p in zip(achieved, peaks, strict=True)]
    runs = pd.DataFrame({"achieved_tflops": achieved, "peak_tflops": peaks, "mfu_pct": mfus})
    row = cell_figures(runs)
    assert row["mfu_pct"] == pytest.approx(100 * 8.25e-05 / 0.0647)
    assert row["mfu_pct"] != pytest.approx(float(pd.Series(mfus).median()))


def test_a_cell_whose_runs_all_refused_an_mfu_has_none():
    """Review: each run's calibration (9 TFLOP/s) was slower than its training (12 TFLOP/s), so
    each refused an MFU, and the cell's median achieved over median peak gave 133%."""
    runs = pd.DataFrame(
        {
            "achieved_tflops": [12.0, 12.2, 12.1],
            "peak_tflops": [9.0, 9.2, 9.1],
            "mfu_pct": [math.nan] * 3,
        }
    )
    assert math.isnan(cell_figures(runs)["mfu_pct"])
    one = runs.assign(mfu_pct=[math.nan, math.nan, 40.0], peak_tflops=[9.0, 9.2, 30.25])
    cell = cell_figures(one)  # its one MFU run: the MFU and the figures it is the ratio of
    assert (cell["achieved_tflops"], cell["peak_tflops"]) == (12.1, 30.25)
    assert cell["mfu_pct"] == pytest.approx(100 * 12.1 / 30.25)
