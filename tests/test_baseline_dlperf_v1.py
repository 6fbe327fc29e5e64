"""DLPerf v1.0's published figures (config/baselines/dlperf_v1.0.tsv) as a report baseline."""

from __future__ import annotations

import copy
import math
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from dlperf.adapters import REGISTRY
from dlperf.config import Suite, load, validate
from dlperf.matrix import CELL_ID_RE
from dlperf.measure.runs import RUN_COLUMNS
from dlperf.measure.tables import CELL_TABLE_COLUMNS, add_speedup, write_table
from dlperf.report.load import load_baseline
from dlperf.report.render import render_reports

ROOT = Path(__file__).resolve().parents[1]
TSV = ROOT / "config/baselines/dlperf_v1.0.tsv"
NAME = "DLPerf v1.0 (V100, published)"

# Throughputs as printed in reports/dlperf_benchmark_test_report_v1.md (Oct 2020).
PUBLISHED = {
    "oneflow.resnet50.fp32.noxla.b128.4n8g": 12411.97,
    "ngc_tensorflow.resnet50.amp.xla.b224.1n1g": 1198.55,
    "paddle.resnet50.amp.noxla.b196.2n8g": 6018.46,
    "ngc_pytorch.bert_base.amp.noxla.b64.1n8g": 3251.7,
    "mxnet_gluonnlp.bert_base.fp32.noxla.bmax-noclip.4n8g": 4340.89,
    "oneflow.bert_base.amp.noxla.bmax.4n8g": 15724.70,
}

# Speedups at 4n8g as printed in the top-level README.md's summary tables (2 decimals; Paddle's
# AMP with DALI to 1). Left out: NGC MXNet FP32 (the README prints 11233.92 and 28.67 where the
# report prints 11331.93) and Paddle AMP without DALI (10633.22 / 1034.64 = 10.28, printed 10.2).
PUBLISHED_SPEEDUP = {
    "oneflow.resnet50.fp32.noxla.b128.4n8g": (31.21, 2),
    "oneflow.resnet50.amp.noxla.b256.4n8g": (22.50, 2),
    "ngc_tensorflow.resnet50.fp32.noxla.b128.4n8g": (26.25, 2),
    "ngc_tensorflow.resnet50.amp.xla.b224.4n8g": (24.34, 2),
    "ngc_tensorflow.resnet50.amp.noxla.b224.4n8g": (26.17, 2),
    "ngc_pytorch.resnet50.fp32.noxla.b128.4n8g": (29.72, 2),
    "ngc_pytorch.resnet50.amp.noxla.b256.4n8g": (28.09, 2),
    "mxnet_gluoncv.resnet50.fp32.noxla.b128.4n8g": (24.93, 2),
    "mxnet_gluoncv.resnet50.amp.noxla.b256.4n8g": (12.67, 2),
    "tensorflow2.resnet50.fp32.noxla.b128.4n8g": (29.27, 2),
    "tensorflow2.resnet50.amp.noxla.b256.4n8g": (17.96, 2),
    "pytorch_examples.resnet50.fp32.noxla.b128.4n8g": (28.75, 2),
    "paddle.resnet50.fp32.noxla.b128.4n8g": (26.50, 2),
    "paddle.resnet50.amp.noxla.b196.4n8g": (13.1, 1),
}


@pytest.fixture(scope="module")
def baseline() -> pd.DataFrame:
    return load_baseline(NAME, TSV)


def test_ids_and_frameworks(baseline: pd.DataFrame) -> None:
    assert len(baseline) == baseline["cell_id"].nunique()
    for cell_id in baseline["cell_id"]:
        assert re.fullmatch(CELL_ID_RE, cell_id), cell_id
    assert set(baseline["framework"]) <= set(REGISTRY)
    assert set(baseline["model"]) == {"resnet50", "bert_base"}
    assert set(baseline["layout"]) == {"1n1g", "1n8g", "2n8g", "4n8g"}
    assert set(baseline["status"]) == {"ok", "oom"}
    assert (baseline["source"] == NAME).all()
    ok = baseline[baseline["status"] == "ok"]
    assert ok["throughput_median"].map(math.isfinite).all()
    assert baseline[baseline["status"] == "oom"]["throughput_median"].isna().all()


def test_covers_the_suite(baseline: pd.DataFrame) -> None:
    suite = {s.id for s in Suite(load(ROOT / "config/dlperf_v1.yaml")).cell_specs()}
    assert suite <= set(baseline["cell_id"])


@pytest.mark.parametrize(("cell_id", "value"), PUBLISHED.items())
def test_published_values(baseline: pd.DataFrame, cell_id: str, value: float) -> None:
    row = baseline.set_index("cell_id").loc[cell_id]
    assert row["status"] == "ok"
    assert row["throughput_median"] == value


def test_dimensions_from_ids(baseline: pd.DataFrame) -> None:
    row = baseline.set_index("cell_id").loc["mxnet_gluonnlp.bert_base.amp.noxla.bmax-noclip.2n8g"]
    assert (row["framework"], row["precision"], row["xla"]) == ("mxnet_gluonnlp", "amp", False)
    assert (row["batch_size"], row["variant"], row["nodes"], row["devices"]) == (
        "max",
        "noclip",
        2,
        16,
    )
    assert baseline.set_index("cell_id").loc["ngc_tensorflow.bert_base.amp.xla.b64.1n1g", "xla"]


def test_batch_size_used_is_the_ids_or_the_remarks(baseline: pd.DataFrame) -> None:
    """Review: a published cell of a numeric batch size read "Batch size used: n/a" in the spread
    tables (OneFlow's b256 AMP cells beside NGC TensorFlow's bsz=224 reading 224), a batch its
    table's title states; only the remarks' bsz= was read."""
    used = baseline.set_index("cell_id")["batch_size_resolved"]
    assert used["oneflow.resnet50.amp.noxla.b256.4n8g"] == 256
    assert used["ngc_tensorflow.resnet50.amp.noxla.b224.1n1g"] == 224
    assert used["ngc_tensorflow.resnet50.amp.noxla.b256.1n1g"] == 256  # its OOM cell
    assert used["oneflow.bert_base.amp.noxla.bmax.4n8g"] == 160  # a `max` as its remark says
    assert used["ngc_tensorflow.bert_base.amp.xla.bmax.4n8g"] == 96


@pytest.mark.parametrize(("cell_id", "printed"), PUBLISHED_SPEEDUP.items())
def test_speedup_from_baseline_alone(
    baseline: pd.DataFrame, cell_id: str, printed: tuple[float, int]
) -> None:
    value, digits = printed
    again = add_speedup(baseline).set_index("cell_id")
    for frame in (baseline.set_index("cell_id"), again):
        row = frame.loc[cell_id]
        assert round(row["speedup"], digits) == value
        assert row["efficiency"] == pytest.approx(row["speedup"] / 32)
        assert row["speedup_baseline_cell"] == cell_id.removesuffix(".4n8g") + ".1n1g"


def test_no_speedup_without_figure(baseline: pd.DataFrame) -> None:
    oom = baseline.set_index("cell_id").loc["paddle.resnet50.amp.noxla.b256.1n1g"]
    assert oom["status"] == "oom" and math.isnan(oom["speedup"])
    one = baseline.set_index("cell_id").loc["oneflow.bert_base.fp32.noxla.b32.1n1g"]
    assert one["speedup"] == 1.0 and one["efficiency"] == 1.0


CONFIG: dict[str, Any] = {
    "name": "baseline only",
    "repeats": 1,
    "window": {"warmup": 1, "measure": 2},
    "report": {"title": "DLPerf v1.0 baseline"},
    "baselines": [{"name": NAME, "path": str(TSV)}],
    "cases": [
        {
            "framework": "oneflow",
            "model": "resnet50",
            "precision": ["fp32"],
            "batch_size": [128],
            "layouts": ["1n1g", "4n8g"],
        },
    ],
}


def test_report_shows_published_numbers(tmp_path: Path) -> None:
    cells, runs = tmp_path / "tables/cells.tsv", tmp_path / "tables/runs.tsv"
    measured = pd.DataFrame(
        [
            {
                "cell_id": "oneflow.resnet50.fp32.noxla.b128.1n1g",
                "framework": "oneflow",
                "model": "resnet50",
                "precision": "fp32",
                "xla": False,
                "batch_size": "128",
                "variant": "default",
                "layout": "1n1g",
                "nodes": 1,
                "gpus_per_node": 1,
                "devices": 1,
                "status": "ok",
                "runs_planned": 1,
                "runs_done": 1,
                "runs_ok": 1,
                "statuses": "ok:1",
                "throughput_median": 401.25,
                "source": "measured",
            }
        ]
    ).reindex(columns=CELL_TABLE_COLUMNS)
    write_table(add_speedup(measured), cells)
    write_table(pd.DataFrame(columns=RUN_COLUMNS), runs)
    config = validate(copy.deepcopy(CONFIG))
    outputs = [tmp_path / "report/report.en.md", tmp_path / "report/report.zh.md"]
    render_reports(config, cells, runs, outputs, generated_at="2024-01-02 03:04 UTC")
    for path in outputs:
        md = path.read_text(encoding="utf-8")
        assert NAME in md
        assert "401.25 (1.00)" in md  # measured, beside the published figures
        assert "12411.97 (31.21)" in md  # OneFlow FP32 bsz 128 at 4n8g, as published
        assert "33141.02 (22.50)" in md  # OneFlow AMP bsz 256 at 4n8g
        assert "4340.89" in md  # MXNet (gluon-nlp) W/O clip FP32 bsz 64 (max) at 4n8g
