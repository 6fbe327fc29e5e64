"""Outlier runs (k scaled MADs), unstable cells (CV), adaptive repeats (median CI width)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from dlperf.measure.variance import (
    VarianceSettings,
    cell_flags,
    cell_variance,
    is_unstable,
    min_runs_for_level,
    outlier_details,
    outlier_mask,
    outlier_scores,
    repeats_needed,
    robust_scale,
    robust_z,
    run_outliers,
)


def test_outlier_beyond_three_scaled_mads():
    values = [100.0, 101.0, 99.0, 100.5, 99.5, 100.0, 80.0]
    # median 100, deviations 0,1,1,.5,.5,0,20 -> MAD 0.5, scaled 0.7413 < the floor 1 % of 100
    assert robust_scale(values) == pytest.approx(1.0)
    assert outlier_mask(values) == [False] * 6 + [True]  # 20 > 3 * 1
    assert outlier_mask(values, k=25.0) == [False] * 7  # 20 < 25 * 1


def test_limit_is_k_scaled_mads():
    # median 10, MAD 1 -> scale 1.4826: the limit is 10 + 3 * 1.4826 = 14.4478
    assert outlier_mask([9.0, 10.0, 11.0, 10.0, 14.44], k=3.0)[-1] is False
    assert outlier_mask([9.0, 10.0, 11.0, 10.0, 14.45], k=3.0)[-1] is True


def test_scale_is_the_stated_1_4826_mads_not_scipys_normal_constant():
    # median 10, MAD 1, floor 0.1: exactly 1.4826 (scipy's scale="normal" gives 1.482602...)
    assert robust_scale([9.0, 10.0, 11.0, 10.0, 14.44]) == pytest.approx(1.4826, rel=1e-12)
    assert robust_scale([9.0, 10.0, math.nan, 11.0]) == pytest.approx(1.4826, rel=1e-12)
    assert math.isnan(robust_scale([math.nan, math.inf]))


@pytest.mark.parametrize("n", [3, 4, 7, 10])
def test_the_mad_is_scipys_median_absolute_deviation(n: int) -> None:
    from scipy.stats import median_abs_deviation

    values = [100.0 + ((i * 7919) % 13) * 0.37 for i in range(n)]  # no MAD below the 1 % floor
    assert robust_scale(values) == pytest.approx(1.4826 * median_abs_deviation(values), rel=1e-12)


def test_fewer_than_three_runs_have_no_outliers():
    assert outlier_mask([]) == []
    assert outlier_mask([1.0]) == [False]
    assert outlier_mask([1.0, 1000.0]) == [False, False]
    assert outlier_mask([1.0, math.nan, 1000.0]) == [False, False, False]


def test_zero_mad_leaves_the_floor_of_one_percent_of_the_median():
    values = [100.0, 100.0, 100.0, 100.0, 100.0, 100.0, 90.0]
    assert robust_scale(values) == pytest.approx(1.0)  # MAD 0 -> 1 % of 100
    assert outlier_mask(values) == [False] * 6 + [True]  # 10 > 3 * 1
    assert outlier_mask([100.0, 100.0, 97.1]) == [False] * 3  # 2.9 < 3 * 1: noise, not outlier
    assert outlier_mask([5.0, 5.0, 5.0]) == [False] * 3  # all equal: no outliers
    assert outlier_mask([0.0, 0.0, 0.0]) == [False] * 3  # a median of 0: no scale at all


def test_tight_runs_are_not_outliers_below_the_floor():
    # MAD 0.01 -> scaled 0.0148, but the floor is 0.57: 58 is 1.0 away < 3 * 0.57
    assert outlier_mask([57.0, 57.01, 57.02, 58.0]) == [False] * 4


def test_one_slow_run_beside_two_identical_is_flagged():
    """The run at 4.1 samples/s beside two at 57.0 used to pass without a word."""
    runs = pd.DataFrame(
        {
            "cell_id": ["c"] * 3,
            "repeat": [1, 2, 3],
            "status": ["ok"] * 3,
            "throughput_samples_per_s": [57.0, 4.1, 57.0],
        }
    )
    # median 57, MAD 0 -> scale 0.57; |4.1 - 57| = 52.9 > 3 * 0.57 = 1.71
    details = outlier_details(runs)
    assert details["outlier"].tolist() == [False, True, False]
    assert details.loc[1, "outlier_detail"] == (
        "4.1 vs median 57.0 samples/s: 52.9 away > 3 x scale 0.57"
    )
    assert details.loc[0, "outlier_detail"] == ""
    # CV: mean 39.367, sample stdev 30.542 -> 77.6 % > 10 %
    flags = cell_flags(runs, VarianceSettings(outlier_mads=3, max_cv=0.10))
    assert flags == {
        "unstable": True,
        "outlier_runs": 1,
        "flags": "unstable: CV 77.6% > 10%; outlier r2: 4.1 vs median 57.0 samples/s",
    }
    # a wider limit (k = 100: 52.9 < 57) and a laxer CV leave the cell unflagged
    assert cell_flags(runs, VarianceSettings(outlier_mads=100, max_cv=0.8)) == {
        "unstable": False,
        "outlier_runs": 0,
        "flags": "",
    }


def test_variance_settings_from_config():
    assert VarianceSettings.from_config({"outlier_mads": 4, "max_cv_pct": 2.5}) == (
        VarianceSettings(outlier_mads=4.0, max_cv=0.025)
    )
    assert VarianceSettings.from_config(None) == VarianceSettings(3.0, 0.05)


def test_unstable_cv_threshold():
    assert is_unstable(0.06)
    assert not is_unstable(0.05)  # above, not at
    assert is_unstable(0.02, threshold=0.01)
    assert not is_unstable(math.nan)


def runs_frame() -> pd.DataFrame:
    rows = [("a", "ok", v) for v in (100, 101, 99, 100, 60)]
    rows += [("a", "oom", math.nan)]
    rows += [("b", "ok", v) for v in (50, 80, 65)]  # CV 0.23: unstable, no outlier
    rows += [("c", "failed", math.nan)]
    return pd.DataFrame(rows, columns=["cell_id", "status", "throughput_samples_per_s"])


def test_run_outliers_and_cell_flags():
    runs = runs_frame()
    flags = run_outliers(runs)
    assert flags.tolist() == [False] * 4 + [True] + [False] * 5
    cells = cell_variance(runs).set_index("cell_id")
    assert cells.loc["a", "outlier_runs"] == 1
    assert cells.loc["a", "unstable"]  # the outlier inflates the CV: 0.19
    assert cells.loc["b", "outlier_runs"] == 0 and cells.loc["b", "unstable"]
    assert cells.loc["b", "throughput_cv"] == pytest.approx(15 / 65)
    assert cells.loc["c", "outlier_runs"] == 0 and not cells.loc["c", "unstable"]
    assert math.isnan(cells.loc["c", "throughput_cv"])


def test_robust_z_is_the_distance_an_outlier_is_stated_by():
    """z = (x - median) / scale, signed; an outlier is |z| > k (the report states it by z)."""
    values = [100.0, 101.0, 99.0, 100.5, 99.5, 100.0, 80.0]  # scale 1.0 (the floor)
    assert robust_z(values) == pytest.approx([0.0, 1.0, -1.0, 0.5, -0.5, 0.0, -20.0])
    assert [abs(z) > 3 for z in robust_z(values)] == outlier_mask(values)
    z = robust_z([57.0, math.nan, 4.1, 57.0])  # MAD 0: the floor 0.57
    assert z[2] == pytest.approx(-52.9 / 0.57) and math.isnan(z[1])
    assert all(math.isnan(v) for v in robust_z([1.0, 1000.0]))  # < 3 runs: no outliers
    assert all(math.isnan(v) for v in robust_z([0.0, 0.0, 0.0]))  # no scale


def test_outlier_scores_per_run():
    scores = outlier_scores(runs_frame())
    assert scores.name == "outlier_z" and len(scores) == len(runs_frame())
    assert scores[4] == pytest.approx(-40 / 1.4826)  # cell a: 60 vs median 100, MAD 1
    assert math.isnan(scores[5]) and math.isnan(scores[9])  # oom, failed: not ok
    assert scores[7] == pytest.approx(15 / (1.4826 * 15))  # cell b: 80 vs 65, MAD 15


def test_min_runs_for_level():
    assert min_runs_for_level(0.95) == 6  # 1 - 2/64 = 0.969; 5 runs give only 0.9375
    assert min_runs_for_level(0.90) == 5
    assert min_runs_for_level(0.5) == 2


def test_repeats_needed():
    few = repeats_needed([100.0, 101.0, 99.0], target_rel_ci_width=0.05)
    assert few.more_needed and "needs at least 6" in few.reason
    tight = [100.0, 100.5, 99.5, 100.2, 99.8, 100.1, 99.9]
    # n=7 at 95 %: order statistics 1 and 7 (coverage 0.984) -> width (100.5 - 99.5) / 100
    ok = repeats_needed(tight, target_rel_ci_width=0.02)
    assert not ok.more_needed
    assert ok.rel_ci_width == pytest.approx(0.01)
    assert ok.ci_level == pytest.approx(1 - 2 / 128)
    wide = repeats_needed(tight, target_rel_ci_width=0.005)
    assert wide.more_needed and "> target" in wide.reason
    capped = repeats_needed(tight, target_rel_ci_width=0.005, max_repeats=7)
    assert not capped.more_needed and "cap" in capped.reason
    assert repeats_needed([], 0.05).more_needed
