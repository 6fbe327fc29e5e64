"""Genuine logs of the sources' current releases, from public material, read by their parsers.

Each fixture under tests/fixtures/logs/<source>_real/ is a short verbatim excerpt whose first lines
name where it comes from. The parsers never saw these logs while they were written. Every expected
figure is worked out by hand from the excerpt's own numbers (the comment beside it), never from the
parser. Megatron-LM's real logs are tested at the end of tests/test_upstream_parsers.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from dlperf.adapters import upstream_parsers
from dlperf.measure.stats import Window, run_throughput, window_records
from dlperf.parse.records import ParseError
from dlperf.parse.upstream import RunFacts

FIX = Path(__file__).parent / "fixtures" / "logs"
PARSERS = upstream_parsers()


@dataclass(frozen=True)
class RealLog:
    parser: str
    file: str  # under FIX
    facts: RunFacts
    window: Window
    first: tuple[int, int, float]  # the first record's (step, iterations covered, samples)
    records: int
    throughput: float  # samples/s over the window, by hand
    reported: tuple[str, float] | None = None  # the source's own figure over the window, by hand
    rel: float = 1e-9  # timestamps as epoch-second floats keep microseconds only to ~2e-7 s


REAL_LOGS = [
    # ---- hugectr (release current: HugeCTR 24.06's Model::fit line, here from 3.8 to 23.4)
    # HugeCTR 23.4, W&D, batch 2720, display 1000, evaluation every 4000 iterations: the first
    # line is iteration 1000 (1000 iterations, by its own `Time(1000 iters)`). Window = iterations
    # 1001..9000 = lines 2000..9000; 5000 and 9000 hold an evaluation (13.1046 s less its 4.47924 s,
    # 13.097 s less 4.48087 s).
    RealLog(
        "hugectr_current",
        "hugectr_real/hugectr_e2e_demo_23.4.log",
        RunFacts(2720, 1, 1),
        Window(1000, 8000),
        (1000, 1000, 2720 * 1000),
        9,
        8000
        * 2720
        / (
            8.6176
            + 8.61959
            + 8.61009
            + (13.1046 - 4.47924)
            + 8.61852
            + 8.58452
            + 8.61023
            + (13.097 - 4.48087)
        ),
    ),
    # HugeCTR 3.8, DLRM, batch 1024, display 200, evaluation every 1000: window = iterations
    # 201..2000 = lines 400..2000; line 1200 holds the evaluation after 1000 (3.2728 - 2.5486 s)
    RealLog(
        "hugectr_current",
        "hugectr_real/hugectr_remote_filesystem_3.8.log",
        RunFacts(1024, 1, 1),
        Window(200, 1800),
        (200, 200, 1024 * 200),
        10,
        1800
        * 1024
        / (
            0.719486
            + 0.750294
            + 0.721128
            + 1.78435
            + (3.2728 - 2.5486)
            + 0.720984
            + 0.756448
            + 0.725832
            + 1.77763
        ),
    ),
    # HugeCTR 23.2, batch 65536, display 100, evaluation every 100, printed before the `Iter:`
    # line whose time holds it: window = iterations 101..900 = lines 200..900, each less the
    # evaluation printed just before it
    RealLog(
        "hugectr_current",
        "hugectr_real/hugectr_embedding_collection_23.2.log",
        RunFacts(65536, 1, 1),
        Window(100, 800),
        (100, 100, 65536 * 100),
        9,
        800
        * 65536
        / (
            (4.19912 - 1.25698)
            + (4.18021 - 1.24589)
            + (4.16407 - 1.25073)
            + (4.17112 - 1.24958)
            + (4.18422 - 1.25123)
            + (4.19334 - 1.25471)
            + (4.17574 - 1.2416)
            + (4.18238 - 1.25386)
        ),
    ),
    # ---- hugectr (release dlperf_v1: parse_hugectr, the `[..][HUGECTR][INFO]..: Iter:` line of
    # v2.2 to 3.x) HugeCTR 3.2's multi-modal notebook, batch 2048, display 100, evaluation every
    # 200 (the evaluation after iteration i is in the interval ending at i + 100). The first line
    # is iteration 100 (100 iterations). Window = iterations 101..1100 = lines 200..1100, each
    # less the `Eval Time` printed before it: 300, 500, 700, 900 and 1100
    RealLog(
        "hugectr",
        "hugectr_real/hugectr_multimodal_3.2.log",
        RunFacts(2048, 1, 1),
        Window(100, 1000),
        (100, 100, 2048 * 100),
        12,
        1000
        * 2048
        / (
            2.274680
            + (2.332273 - 0.054157)
            + 2.277900
            + (2.434429 - 0.054009)
            + 2.279014
            + (2.335757 - 0.054287)
            + 2.278661
            + (2.447136 - 0.167787)
            + 2.376035
            + (2.334735 - 0.054224)
        ),
    ),
    # ---- oneflow_gpt (release current: LiBai's CommonMetricPrinter; `iteration: k` 0-based,
    # `time` the running mean of iterations 3.. (1-based), total_throughput = batch / time)
    # MagicPrompt (2023-04), log_period 1, global batch 4: iterations 1 and 2 (k 0, 1) carry no
    # time and are read past; the first record is k 2 = iteration 3 alone, 0.9999 s. Window =
    # iterations 4..14 (k 3..13): the timed seconds at k 13 less those at k 2, 0.9958 x 12 -
    # 0.9999 x 1; total_throughput 4.01 4.01 4.02 4.01 4.01 4.02 4.02 4.02 4.02 4.02 4.02 weighted
    # by each record's seconds (k x time(k) - (k - 1) x time(k - 1))
    RealLog(
        "libai",
        "libai_real/magicprompt_log_2023-04-17.log",
        RunFacts(4, 1, 1),
        Window(3, 11),
        (3, 3, 4),
        12,
        11 * 4 / (0.9958 * 12 - 0.9999 * 1),
    ),
    # RWKV (2022-08), log_period 20, global batch 4: the first line is k 19 = iteration 20, whose
    # mean covers iterations 3..20 (18 x 0.0498 s, 72 samples); window = iterations 21..160 (k 39
    # .. 159): 0.0498 x 158 - 0.0498 x 18 seconds for 140 x 4 samples
    RealLog(
        "libai",
        "libai_real/rwkv_log_2022-08-23.log",
        RunFacts(4, 1, 1),
        Window(20, 140),
        (20, 20, 4 * 18),
        8,
        140 * 4 / (0.0498 * 158 - 0.0498 * 18),
    ),
    # Baichuan2-7B (README, 2024-09), 8 GPUs, pipeline parallel 8: the first line is k 87 =
    # iteration 88 (consumed 704 = 8 x 88), a mean over iterations 3..88 (86 x 4.2893 s, 688
    # samples); the only other record, k 88, lasts 4.2889 x 87 - 4.2893 x 86 s for 8 samples;
    # LiBai's own total_throughput there: 1.87
    RealLog(
        "libai",
        "libai_real/baichuan_readme_2024-09-19.log",
        RunFacts(1, 8, 1),
        Window(88, 1),
        (88, 88, 8 * 86),
        2,
        8 / (4.2889 * 87 - 4.2893 * 86),
        ("total_throughput", 1.87),
    ),
    # ---- ngc_tensorflow (release current: TF1 ConvNets' `--mode=training_benchmark` hook)
    # DLE issue #881 (2021-03-23), one line per step from k 120: the first line is that one step,
    # not 120 (the global batch, 256, is total_ips x the step's seconds: 2888.2 x 0.089002 =
    # 257.1). Window = steps 121..136, timed from k 120's stamp 11:48:38.824370 to k 136's
    # 11:48:40.247934 = 1.423564 s, 16 x 256 samples
    RealLog(
        "dle_tf1_rn50_benchmark",
        "dle_tf1_rn50_benchmark_real/dle_issue881_2021-03-23.log",
        RunFacts(256, 1, 1),
        Window(1, 16),
        (120, 1, 256),
        17,
        16 * 256 / 1.423564,
        rel=1e-6,
    ),
    # ---- paddle resnet50 (release current: PaddleClas' `[Train][Epoch e/E][Iter: i/n]`)
    # PaddleClas issue #2186 (2022-08-05), one GPU, batch 512 (ips x batch_cost: 444.43222 x
    # 1.15203 = 512.0), print_batch_step 10: epoch 3's `Iter: 0` is its first iteration (one,
    # 1.15203 s); `Iter: 10` covers the 10 after it at 0.77438 s each. Window = those 10; the
    # printed ips there: 661.17681
    RealLog(
        "paddleclas",
        "paddleclas_real/workerlog.0",
        RunFacts(512, 1, 1),
        Window(1, 10),
        (0, 1, 512),
        2,
        10 * 512 / (10 * 0.77438),
        ("ips", 661.17681),
    ),
]


@pytest.mark.parametrize("log", REAL_LOGS, ids=[log.file for log in REAL_LOGS])
def test_parsers_read_real_logs(log: RealLog):
    result = PARSERS[log.parser]([FIX / log.file], log.facts)
    first = result.records[0]
    assert (first.step, first.steps, first.samples) == log.first
    assert len(result.records) == log.records
    tp = run_throughput(result, log.window)
    assert tp.throughput_samples_per_s == pytest.approx(log.throughput, rel=log.rel)
    if log.reported is not None:
        name, value = log.reported
        window, _ = window_records(result.records, log.window)
        assert result.reported_over(name, window) == pytest.approx(value, rel=1e-9)


# ------------------------------------------------------------------------------------ hugectr


def test_hugectr_current_takes_an_evaluation_off_the_interval_that_holds_it():
    """Model::fit restarts its training timer before it evaluates: HugeCTR 3.8's `Iter: 1200
    Time(200 iters): 3.2728s` holds the 2.5486 s evaluation after iteration 1000 (the other
    intervals last 0.72-0.76 s, 1.78 s at 1000 and 2000)."""
    log = FIX / "hugectr_real" / "hugectr_remote_filesystem_3.8.log"
    result = PARSERS["hugectr_current"]([log], RunFacts(1024, 1, 1))
    durations = {r.step: r.duration_s for r in result.records}
    assert durations[1200] == pytest.approx(3.2728 - 2.5486)
    assert durations[1400] == pytest.approx(0.720984)
    assert any("1 evaluation(s), 2.5486s in all" in n for n in result.notes)


def test_hugectr_v1_takes_an_evaluation_off_the_interval_that_holds_it():
    """HugeCTR restarted its training timer before evaluating from v2.2 on (main.cpp), not only
    in Model::fit: 3.2's `Iter: 300 Time(100 iters): 2.332273s` holds the 0.054157 s evaluation
    after iteration 200 (its neighbours 2.27-2.28 s); parse_hugectr read it whole."""
    log = FIX / "hugectr_real" / "hugectr_multimodal_3.2.log"
    result = PARSERS["hugectr"]([log], RunFacts(2048, 1, 1))
    durations = {r.step: r.duration_s for r in result.records}
    assert durations[300] == pytest.approx(2.332273 - 0.054157)
    assert durations[900] == pytest.approx(2.447136 - 0.167787)
    assert durations[1000] == pytest.approx(2.376035)
    assert any("5 evaluation(s), 0.384464s in all" in n for n in result.notes)


# ------------------------------------------------------------------------------------ libai


def test_libai_keeps_its_total_throughput_beside_dlperfs_figure():
    """LiBai's `total_throughput` (global batch over its running mean since iteration 3) is kept
    per line in ParseResult.reported and never changes the records: RWKV's 8 lines, 80.23 to
    80.6 samples/s, beside dlperf's own 4 x 20 samples over each line's seconds."""
    log = FIX / "libai_real" / "rwkv_log_2022-08-23.log"
    result = PARSERS["libai"]([log], RunFacts(4, 1, 1))
    kept = result.reported["total_throughput"]
    assert list(kept.values()) == [80.24, 80.6, 80.23, 80.37, 80.33, 80.29, 80.36, 80.31]
    assert set(kept) == {(str(log), r.line) for r in result.records}
    # the second record, k 39: 0.0496 x 38 - 0.0498 x 18 s for 80 samples (80.94 samples/s by
    # dlperf's formula where LiBai printed 80.6: its running mean, 4 decimals)
    second = result.records[1]
    assert second.duration_s == pytest.approx(0.0496 * 38 - 0.0498 * 18)
    assert any(
        "kept beside dlperf's figure as reported['total_throughput']" in n for n in result.notes
    )


# ------------------------------------------------------------------------- ngc_tensorflow


def test_dle_tf1_rn50_benchmark_keeps_its_total_ips_beside_dlperfs_figure():
    """The hook's own `total_ips` of every line is kept in ParseResult.reported (the records are
    timed by the dllogger stamps, whatever it says): 17 lines, 2872.66 to 2906.88 images/s."""
    log = FIX / "dle_tf1_rn50_benchmark_real" / "dle_issue881_2021-03-23.log"
    result = PARSERS["dle_tf1_rn50_benchmark"]([log], RunFacts(256, 1, 1))
    kept = result.reported["total_ips"]
    assert len(kept) == 17
    assert kept[str(log), 5] == 2879.142978189404
    assert min(kept.values()) == 2872.6572422280487
    assert max(kept.values()) == 2906.883780615574
    assert any("reported['total_ips']" in n for n in result.notes)


# ------------------------------------------------------------------------------- paddleclas


def test_paddleclas_keeps_its_ips_beside_dlperfs_figure():
    """PaddleClas' printed `ips` (the rank's batch over batch_cost) is kept per line; dlperf's
    own figure comes from batch_cost and the iterations between lines."""
    log = FIX / "paddleclas_real" / "workerlog.0"
    result = PARSERS["paddleclas"]([log], RunFacts(512, 1, 1))
    assert result.reported == {"ips": {(str(log), 10): 444.43222, (str(log), 11): 661.17681}}


# ------------------------------------------------------------------------ mindspore_benchmark


def test_mindspore_benchmark_refuses_the_readmes_older_line_at_its_line():
    """The models repo's own README (at the pinned eab643f) shows gpu_resnet_benchmark.py's
    output from before per_step_time, whose `epoch: [0/1]` is the real epoch and `step: [20/5004]`
    the step in it, not the sink count release current reads: refused at its file:line, never
    read with another meaning."""
    log = FIX / "mindspore_benchmark_real" / "resnet_readme_eab643f.log"
    with pytest.raises(ParseError, match=r"resnet_readme_eab643f\.log:4: unreadable progress line"):
        PARSERS["mindspore_benchmark"]([log], RunFacts(256, 1, 1))
