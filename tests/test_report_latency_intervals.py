"""The latency section says what its percentiles are of: a source that logs one line per
interval of iterations (Megatron-LM, --log-interval 10) pools interval means, not iterations.
The rows are the first H100 run's (2026-11-27): its Megatron-LM GPT cell's steps table."""

from __future__ import annotations

import io

import pandas as pd

from dlperf.measure.stats import Window
from dlperf.report.latency import latency_tables

CELL = "megatron.gpt.amp.noxla.b8.1n1g"
LOG = f"results/runs/{CELL}/r1/node0.log"
# step, iterations, duration_s, line (node0.log's `elapsed time per iteration` lines, as parsed)
MEGATRON_STEPS = [
    (1, 1, 2.6514, 1078), (10, 9, 0.7666, 1090), (20, 10, 1.213, 1102), (30, 10, 1.095, 1103),
    (40, 10, 1.035, 1104), (50, 10, 1.092, 1105), (60, 10, 1.078, 1106), (70, 10, 1.045, 1107),
    (80, 10, 0.952, 1108), (90, 10, 0.900, 1109), (100, 10, 0.958, 1110), (110, 10, 1.110, 1111),
    (120, 10, 1.045, 1112), (130, 10, 1.047, 1113),
]  # fmt: skip


def megatron_tables() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    steps = pd.DataFrame(
        [
            {"cell_id": CELL, "repeat": 1, "rank": -1, "step": step, "steps": n,
             "samples": 8.0 * n, "time_s": None, "start_s": None, "duration_s": seconds,
             "rate": None, "path": LOG, "line": line}
            for step, n, seconds, line in MEGATRON_STEPS
        ]
    )  # fmt: skip
    key = {"cell_id": CELL, "framework": "megatron", "model": "gpt", "precision": "amp",
           "xla": False, "batch_size": "8", "variant": "default", "layout": "1n1g", "devices": 1}  # fmt: skip
    cells = pd.DataFrame([key | {"source": "measured", "status": "ok"}])
    runs = pd.DataFrame([{"cell_id": CELL, "repeat": 1, "status": "ok", "method": "step_times"}])
    # through a TSV, as the report reads the tables
    buffer = io.StringIO()
    steps.to_csv(buffer, sep="\t", index=False)
    return cells, runs, pd.read_csv(io.StringIO(buffer.getvalue()), sep="\t")


def test_megatrons_percentiles_say_they_are_of_ten_iteration_interval_means():
    """The H100's report read "1/10" steps pooled and p50 0.104 s/iter, as if of single
    iterations; they are of 10 interval means (iterations 21-120), and the row says so."""
    cells, runs, steps = megatron_tables()
    (table,) = latency_tables(cells, runs, steps, Window(warmup=20, measure=100))
    (row,) = table.rows
    assert (row.runs, row.steps, row.iterations_per_record) == (1, 10, "10")
    assert row.sec_per_iter[0] == "0.104"  # the median of 1.095/10 ... 1.045/10
    assert row.pooled.key == "latency.pooled_intervals"
    assert dict(row.pooled.values) == {"runs": "1", "intervals": "10", "iterations": "10"}


def test_the_report_says_so_in_both_languages(tmp_path):
    from dataclasses import replace

    from dlperf.config import validate
    from dlperf.measure.runs import RUN_COLUMNS
    from dlperf.measure.tables import CELL_TABLE_COLUMNS
    from dlperf.report.build import build_report
    from dlperf.report.render import render_text

    cells, runs, steps = megatron_tables()
    tables = tuple(latency_tables(cells, runs, steps, Window(warmup=20, measure=100)))
    case = {"framework": "megatron", "model": "gpt", "precision": ["amp"], "batch_size": [8],
            "layouts": ["1n1g"], "options": {"release": "current"}}  # fmt: skip
    config = validate({"name": "h100", "cases": [case], "baselines": []})
    empty = build_report(
        config, pd.DataFrame(columns=CELL_TABLE_COLUMNS), pd.DataFrame(columns=RUN_COLUMNS), {}, "t"
    )
    data = replace(empty, latency=tables)
    en, zh, html = (
        render_text(data, lang, fmt, {}, tmp_path)
        for lang, fmt in (("en", "md"), ("zh", "md"), ("en", "html"))
    )
    assert "| 0.104 | 76.56 |" in en and "| 1/10 intervals of 10 iterations |" in en
    assert "each value pooled is an interval's mean time per iteration, not one iteration's" in en
    assert "| 1/10 个区间，每个区间 10 次迭代 |" in zh and "区间平均值的百分位数" in zh
    assert "1/10 intervals of 10 iterations</td>" in html
    assert "| 1/10 |" not in en
