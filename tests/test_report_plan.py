"""The report's section on the campaign plan: the plan the workflow recorded (plan.json), in the
words of the site it was made for."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from dlperf.config import validate
from dlperf.i18n import Translator
from dlperf.plan.plan import machine_site
from dlperf.plan.rule import write_plan
from dlperf.report.build import build_report
from dlperf.report.load import REPORT_CELL_COLUMNS
from dlperf.report.planinfo import plan_info
from dlperf.report.render import render_text

SUITE: dict[str, Any] = {
    "name": "plan",
    "repeats": 2,
    "time_limit_min": 30,
    "cases": [
        {
            "framework": "pytorch",
            "model": "resnet50",
            "precision": ["fp32"],
            "batch_size": [8],
            "layouts": ["1n1g", "1n2g"],
        }
    ],
}


def _plan_section(tmp_path: Path, site: dict[str, Any], lang: str) -> str:
    config = validate(copy.deepcopy(SUITE))
    path = tmp_path / "plan.json"
    write_plan(config, tmp_path / "results", site, path, 1.0)
    found = json.loads(path.read_text())
    plan = plan_info(found) if found else None  # as dlperf.report.render reads it
    cells = pd.DataFrame(columns=REPORT_CELL_COLUMNS)
    runs = pd.DataFrame(columns=["cell_id", "repeat", "status", "status_detail", "manifest"])
    data = build_report(config, cells, runs, {}, "2024-01-02 03:04 UTC", plan=plan)
    text = render_text(data, lang, "md", {}, tmp_path)
    start = text.index(f"## {Translator(lang)('section.plan')}\n")
    return text[start : text.index("\n## ", start)]


@pytest.mark.parametrize(
    "lang, site_words, hours",
    [
        ("en", "Site: 1 node(s) x 4 CPUs,", "| Layout | Runs | Duration measured | "
         "Duration scaled | Duration = time limit | CPU-hours |"),
        ("zh", "集群：1 个节点，每节点 4 个 CPU，", "| 规模 | 运行次数 | 时长来自实测 | "
         "时长按比例估算 | 时长取时间上限 | CPU 小时 |"),
    ],
)  # fmt: skip
def test_a_cpu_site_plan_counts_cpu_hours(tmp_path, lang, site_words, hours):
    """Review: the local backend on a machine without GPUs plans its runs on its CPUs (plan.json's
    site says device_kind CPUs), yet the report called them devices and their hours GPU-hours."""
    section = _plan_section(tmp_path, machine_site(4, "CPUs"), lang)
    assert site_words in section
    assert hours in section
    assert "GPU" not in section
    # 2 repeats of 1n1g (1 CPU) and 1n2g (2 CPUs), each planned at the 30-minute limit
    assert "| 1n1g | 2 | 0 | 0 | 2 | 1.00 |" in section
    assert "| 1n2g | 2 | 0 | 0 | 2 | 2.00 |" in section


def test_a_gpu_site_plan_counts_gpu_hours(tmp_path):
    section = _plan_section(tmp_path, {"nodes": 2, "gpus_per_node": 2, "exclusive": True}, "en")
    assert "Site: 2 node(s) x 2 GPUs," in section and "| GPU-hours |" in section
    assert "CPU" not in section


def _one_run_plan(makespan_s: float, gpus_per_node: int, **keys: object) -> dict:
    """A plan.json of one run on one node, as dlperf.plan writes it (no device kind recorded)."""
    return {
        "runs": 1,
        "repeats": 1,
        "site": {
            "nodes": 1,
            "gpus_per_node": gpus_per_node,
            "exclusive": True,
            "origin": "site.nodes",
        },
        "makespan_s": makespan_s,
        "bounds": {"sequential_s": makespan_s, "lower_s": makespan_s},
        "gap": 0.0,
        "solver": {"method": "greedy", "status": "done"},
        "layouts": [],
    } | keys


def test_a_plan_recorded_before_its_device_kind_reads_as_gpus():
    assert plan_info(_one_run_plan(3600.0, gpus_per_node=8)).device_kind == "GPUs"


def test_the_reports_hours_are_written_as_the_plans():
    """Review: the report wrote a layout's GPU-hours with three decimals: a 1-second campaign's
    read 0.000 beside its makespan of 0.000278 h, and an hour 1.000 beside the plan's 1.00."""
    plan = _one_run_plan(
        1.0,
        gpus_per_node=1,
        solver={"method": "phase MILP", "status": "optimal within 1%"},
        layouts=[
            {"layout": "1n1g", "runs": 1, "measured": 1, "scaled": 0, "limit": 0, "gpu_hours": 1 / 3600},
            {"layout": "total", "runs": 1, "measured": 1, "scaled": 0, "limit": 0, "gpu_hours": 1.0},
        ],
    )  # fmt: skip
    info = plan_info(plan)
    assert info.makespan_h == "0.000278"
    assert [layout.gpu_hours for layout in info.layouts] == ["0.000278", "1.00"]


@pytest.mark.parametrize(
    "lang, said",
    [
        ("en", "- Schedule: phase MILP: No Solution Found; the runs follow the list schedule's own "
         "order instead: widest first, then longest.\n"),
        ("zh", "- 调度求解：分阶段 MILP，No Solution Found；实际采用列表调度自身的顺序：先按所需节点数"
         "从多到少，再按时长从长到短。\n"),
    ],
)  # fmt: skip
def test_the_report_says_which_order_the_runs_followed(tmp_path, monkeypatch, lang, said):
    """Review: where the MILP gave no order (or a longer schedule than the list schedule's own
    order), the plan followed widest, longest first, yet the report read only 'Schedule: phase
    MILP: No Solution Found.', as if the runs had followed the MILP."""
    import pulp

    from dlperf.plan import milp

    monkeypatch.setattr(milp, "_solve", lambda prob, time_limit_s: pulp.LpSolutionNoSolutionFound)
    section = _plan_section(tmp_path, {"nodes": 2, "gpus_per_node": 2, "exclusive": True}, lang)
    assert said in section


def test_a_site_too_small_to_plan_is_not_called_a_report_without_a_workflow(tmp_path):
    """Review: where the workflow could make no plan (the suite's 1n2g on 1 GPU per node: the
    plan rule wrote {} and logged why), the report said the tables 'were rendered without
    running the workflow', which they were not."""
    section = _plan_section(tmp_path, {"nodes": 1, "gpus_per_node": 1, "exclusive": True}, "en")
    assert json.loads((tmp_path / "plan.json").read_text()) == {}
    assert "or the workflow could make no plan of the suite on its site" in section
    assert "logs/plan.log" in section
