"""Window, throughput from timestamps / step times / rates, percentiles, spread, speedup."""

from __future__ import annotations

import math

import pytest

from dlperf.measure.stats import (
    Window,
    median_ci_ranks,
    percentiles,
    run_throughput,
    speedup,
    spread,
)
from dlperf.parse.records import Method, ParseError, ParseResult, StepRecord


def timed(
    rank: int, durations: list[float], samples: float = 8, t0: float = 1000.0
) -> list[StepRecord]:
    records, t = [], t0
    for i, d in enumerate(durations, 1):
        records.append(StepRecord(rank, i, 1, samples, "rank.log", i, time_s=t + d, start_s=t))
        t += d
    return records


def test_timestamps_window_is_samples_over_wall_time():
    durations = [5.0, 5.0] + [0.1] * 4 + [0.3] * 4 + [9.0]  # 2 warm-up steps, 8 measured, 1 after
    result = ParseResult(timed(0, durations), Method.TIMESTAMPS)
    tp = run_throughput(result, Window(warmup=2, measure=8))
    assert tp.window_samples == 64
    assert tp.window_time_s == pytest.approx(1.6)
    assert tp.throughput_samples_per_s == pytest.approx(40.0)
    assert (tp.window_first_step, tp.window_last_step) == (3, 10)
    assert tp.trace == "rank.log:3-10"
    mean_of_rates = sum(8 / d for d in durations[2:10]) / 8  # what DLPerf's rate scripts did
    assert mean_of_rates == pytest.approx(53.33, abs=0.01)  # biased high


def test_per_rank_samples_add_and_slowest_rank_sets_the_time():
    r0 = timed(0, [1.0] + [0.1] * 10)
    r1 = timed(1, [1.0] + [0.2] * 10, t0=5000.0)  # other clock: never compared with rank 0
    tp = run_throughput(ParseResult(r0 + r1, Method.TIMESTAMPS), Window(1, 10))
    assert tp.window_samples == 160
    assert tp.window_time_s == pytest.approx(2.0)
    assert tp.throughput_samples_per_s == pytest.approx(80.0)
    assert tp.ranks == 2


def test_global_records_are_not_multiplied_by_ranks():
    glob = [StepRecord(-1, i, 10, 320, "g.log", i, rate=1000.0) for i in range(1, 6)]
    per_rank_noise = [StepRecord(0, i, 10, 40, "g.log", 100 + i, rate=125.0) for i in range(1, 6)]
    tp = run_throughput(ParseResult(glob + per_rank_noise, Method.PRINTED_RATES), Window(10, 30))
    assert tp.throughput_samples_per_s == pytest.approx(1000.0)
    assert tp.ranks == 1


def test_printed_rates_give_the_harmonic_mean():
    recs = [
        StepRecord(-1, i, 1, 100, "r.log", i, rate=r)
        for i, r in enumerate([1.0, 100.0, 50.0, 200.0, 400.0], 1)
    ]
    tp = run_throughput(ParseResult(recs, Method.PRINTED_RATES), Window(1, 4))
    assert tp.throughput_samples_per_s == pytest.approx(400 / (1 + 2 + 0.5 + 0.25))


def test_step_times_and_interval_records():
    recs = [
        StepRecord(-1, 100 * i, 100, 100 * 64, "t.log", i, duration_s=d)
        for i, d in enumerate([30.0, 10.0, 12.0], 1)
    ]
    tp = run_throughput(ParseResult(recs, Method.STEP_TIMES), Window(100, 200))
    assert tp.window_samples == 12800
    assert tp.throughput_samples_per_s == pytest.approx(12800 / 22)
    assert (tp.window_first_step, tp.window_last_step) == (101, 300)
    # per-record times are per iteration of each interval: the run JSON's percentiles say so
    # (Megatron's 10-iteration lines on the H100 read as "the steps" of the run)
    assert tp.step_time_ms == pytest.approx([100.0, 120.0])
    assert tp.iterations_per_record == (100,)
    assert tp.percentiles_of() == (
        "the log intervals of the rank with the slowest window, each the mean time per "
        "iteration of its 100 iterations (not single iterations)"
    )
    single = run_throughput(ParseResult(timed(0, [1.0] * 4), Method.TIMESTAMPS), Window(1, 2))
    assert single.percentiles_of() == "the steps of the rank with the slowest window"


def test_interval_records_report_the_iterations_really_measured():
    recs = [StepRecord(-1, 100 * i, 100, 6400, "t.log", i, duration_s=10.0) for i in range(1, 5)]
    tp = run_throughput(ParseResult(recs, Method.STEP_TIMES), Window(20, 100))
    assert (tp.window_first_step, tp.window_last_step) == (101, 200)  # not 21-120


def test_a_window_no_record_starts_in_is_a_parse_error_naming_the_next_record():
    """100-iteration records and a window of iterations 11 to 50: nothing to measure (was an
    IndexError that took the tables rule down)."""
    recs = [StepRecord(-1, 100 * i, 100, 6400, "t.log", i, duration_s=10.0) for i in range(1, 5)]
    with pytest.raises(
        ParseError, match=r"t.log:2: no record starts inside the window \(iterations 11 to 50\)"
    ):
        run_throughput(ParseResult(recs, Method.STEP_TIMES), Window(10, 40))


def test_time_running_backwards_is_a_parse_error():
    recs = timed(0, [0.1] * 6)
    recs[3] = StepRecord(0, 4, 1, 8, "rank.log", 4, time_s=recs[2].time_s - 1)
    with pytest.raises(ParseError, match="rank.log:4: a measured step has no positive duration"):
        run_throughput(ParseResult(recs, Method.TIMESTAMPS), Window(1, 4))


def test_the_step_the_window_starts_after_is_held_to_time_too():
    """The window starts at the end of the last skipped step: an end before that step's own
    start, or before the step ahead of it, would lengthen the window silently (from 0.4 s
    earlier: 67.5 instead of 73.7 samples/s once); each is a ParseError naming its line."""
    recs = timed(0, [0.1] * 8)
    with pytest.raises(ParseError, match=r"rank.log:3: impossible step record: it ends"):
        StepRecord(0, 3, 1, 8, "rank.log", 3, time_s=recs[2].start_s - 0.4, start_s=recs[2].start_s)
    recs[2] = StepRecord(0, 3, 1, 8, "rank.log", 3, time_s=recs[1].time_s - 0.5)  # no start
    with pytest.raises(ParseError, match=r"rank.log:3: step 3 ends before step 2"):
        run_throughput(ParseResult(recs, Method.TIMESTAMPS), Window(3, 4))
    recs[2] = StepRecord(0, 3, 1, 8, "rank.log", 3, time_s=recs[1].time_s + 0.1)
    assert run_throughput(ParseResult(recs, Method.TIMESTAMPS), Window(3, 4)).window_time_s == (
        pytest.approx(0.4)
    )


def test_short_log_is_a_parse_error_naming_the_last_line():
    with pytest.raises(
        ParseError,
        match=r"log ends after 5 iterations; the window needs 12 \(last record rank.log:5\)",
    ):
        run_throughput(ParseResult(timed(0, [0.1] * 5), Method.TIMESTAMPS), Window(2, 10))


def test_percentiles_linear_interpolation():
    p = percentiles([float(v) for v in range(1, 101)])
    assert p == pytest.approx({"p50_ms": 50.5, "p75_ms": 75.25, "p90_ms": 90.1, "p95_ms": 95.05})
    assert math.isnan(percentiles([])["p50_ms"])


def test_spread_median_cv_and_ci():
    s = spread([10.0, 12.0, 11.0, 13.0, 9.0, 10.5, 11.5])
    assert s.median == 11.0
    assert (s.minimum, s.maximum) == (9.0, 13.0)
    assert s.cv == pytest.approx(math.sqrt(10.5 / 6) / 11.0)
    assert (s.ci_low, s.ci_high) == (9.0, 13.0)  # n=7: (x1, x7) covers 98.4 %
    assert s.ci_level == pytest.approx(0.984375)
    assert median_ci_ranks(20, 0.95)[:2] == (5, 14)
    one = spread([5.0])
    assert one.median == 5.0 and math.isnan(one.cv)


def test_median_ci_ranks_binomial_coverage_by_hand():
    # n = 5: even (min, max) covers only 1 - 2 / 32 < 95 %: the widest interval and its coverage
    assert median_ci_ranks(5, 0.95) == (0, 4, pytest.approx(0.9375))
    # n = 20, 0-based (5, 14): the median lies between them when 6..14 runs lie below it
    coverage = sum(math.comb(20, i) for i in range(6, 15)) / 2**20
    assert median_ci_ranks(20, 0.95) == (5, 14, pytest.approx(coverage))
    assert median_ci_ranks(20, coverage + 1e-9)[:2] == (4, 15)  # just above: one rank wider
    assert median_ci_ranks(1, 0.95)[:2] == (None, None)


def test_speedup_without_baseline_is_nan_never_one_or_zero():
    assert speedup(300.0, 100.0) == 3.0
    for base in (None, 0.0, math.nan):
        assert math.isnan(speedup(300.0, base))


def test_cell_status_without_ok_runs():
    from dlperf.status import cell_status

    assert cell_status({"oom": 7}) == "oom"
    assert cell_status({"ok": 1, "oom": 6}) == "ok"
    assert cell_status({"oom": 1, "failed": 1}) == "oom"
    assert cell_status({"timeout": 1, "failed": 2}) == "failed"
    assert cell_status({"parse_error": 1, "skipped": 1}) == "parse_error"
    assert cell_status({}) == "missing"


def test_one_severity_order_for_runs_cells_and_report():
    from dlperf.status import SEVERITY, sort_statuses, worst

    assert worst(["ok", "skipped", "timeout", "failed"]) == "timeout"
    assert worst([]) == "ok"
    assert [str(s) for s in SEVERITY][:3] == ["oom", "timeout", "failed"]
    assert sort_statuses(["failed", "ok", "missing", "oom"]) == ["ok", "oom", "failed", "missing"]


def test_percentiles_are_numpys_linear_method_to_the_bit():
    """stats.percentiles interpolates as numpy.percentile's default does (without numpy's per-call
    cost): equal floats, not merely close, on lists of every length and scale."""
    import random

    import numpy as np

    rng = random.Random(1)
    for _ in range(2000):
        values = [rng.random() * rng.choice([1e-3, 1, 1e3]) for _ in range(rng.randint(1, 60))]
        expected = np.percentile(values, (50, 75, 90, 95))
        assert list(percentiles(values).values()) == [float(x) for x in expected]


def test_a_cells_statuses_text_reads_back_its_counts():
    from dlperf.status import status_counts, statuses_text

    assert statuses_text({"oom": 4, "ok": 1}) == "ok:1,oom:4"
    assert status_counts("ok:1,oom:4") == {"ok": 1, "oom": 4}
    assert status_counts(float("nan")) == {} and status_counts("") == {}
    assert status_counts("ok") == {} and status_counts("ok: 2 of 3, oom:1") == {"oom": 1}
