"""The report stage: one data model rendered in English and Chinese, Markdown and HTML."""

from __future__ import annotations

import base64
import copy
import json
import logging
import math
import os
import re
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from dlperf.config import validate
from dlperf.i18n import Phrase, Translator, catalog, english, languages, placeholders
from dlperf.matrix import expand_case
from dlperf.measure.runs import RUN_COLUMNS, STEP_COLUMNS
from dlperf.measure.stats import Window
from dlperf.measure.tables import CELL_TABLE_COLUMNS, cells_table, planned_cells, write_table
from dlperf.plan.plan import hours
from dlperf.plan.rule import write_plan
from dlperf.report import fmt, plots
from dlperf.report import names as report_names
from dlperf.report.load import load_baseline
from dlperf.report.render import load_report_data, make_plots, parse_target, render_reports

GOLDEN = Path(__file__).parent / "golden"
GENERATED_AT = "2024-01-02 03:04 UTC"
PLAN_SITE = {"nodes": 2, "gpus_per_node": 2, "exclusive": True}
WINDOW = Window(warmup=2, measure=4)

CONFIG: dict[str, Any] = {
    "name": "golden",
    "repeats": 3,
    "window": {"warmup": WINDOW.warmup, "measure": WINDOW.measure},
    # the limit the unstable cell's flag states (its flags are set by hand below)
    "variance": {"max_cv_pct": 2.0},
    "report": {
        "title": "dlperf test report",
        "footnotes": {"pytorch.bert_base.*.1n2g": "BERT ran with a narrow 2-layer configuration."},
    },
    "baselines": [{"name": "DLPerf v1.0", "path": "baseline/cells.tsv"}],
    "cases": [
        {
            "framework": "pytorch",
            "model": "resnet50",
            "precision": ["fp32", "amp"],
            "batch_size": [8],
            "layouts": ["1n1g", "1n2g", "2n2g"],
            "options": {"image_size": 32},
        },
        {
            "framework": "pytorch",
            "model": "resnet50",
            "variant": "noddp",  # the model without DistributedDataParallel, at 1 device
            "precision": ["fp32"],
            "batch_size": [8],
            "layouts": ["1n1g"],
            "options": {"image_size": 32},
        },
        {
            "framework": "pytorch",
            "model": "resnet50",
            "precision": ["fp32"],
            "batch_size": [64],
            "layouts": ["1n1g", "1n2g"],
            "options": {"image_size": 32},
        },
        {
            "framework": "pytorch",
            "model": "bert_base",
            "precision": ["fp32", "amp"],
            "batch_size": [8],
            "layouts": ["1n2g"],
            "options": {"model_config": {"num_hidden_layers": 2, "hidden_size": 256}},
        },
    ],
}

# cell id -> per-repeat (status, throughput or detail)
RUNS: dict[str, list[tuple[str, Any]]] = {
    "pytorch.resnet50.fp32.noxla.b8.1n1g": [("ok", 101.0), ("ok", 100.0), ("ok", 98.0)],
    "pytorch.resnet50.fp32.noxla.b8.1n2g": [("ok", 185.0), ("ok", 190.0), ("ok", 180.0)],
    "pytorch.resnet50.fp32.noxla.b8-noddp.1n1g": [("ok", 110.0), ("ok", 111.0), ("ok", 112.0)],
    # 2n2g: planned, never run (missing)
    "pytorch.resnet50.amp.noxla.b8.1n1g": [("failed", "exit code 1: RuntimeError: boom")] * 3,
    "pytorch.resnet50.amp.noxla.b8.1n2g": [
        ("ok", 350.5),
        ("ok", 352.0),
        ("timeout", "ran past the time limit (30 min)"),
    ],
    "pytorch.resnet50.fp32.noxla.b64.1n1g": [("oom", "out of memory (see log)")] * 3,
    "pytorch.resnet50.fp32.noxla.b64.1n2g": [("oom", "out of memory (see log)")] * 3,
    "pytorch.bert_base.fp32.noxla.b8.1n2g": [("ok", 42.3), ("ok", 41.0), ("ok", 43.0)],
    "pytorch.bert_base.amp.noxla.b8.1n2g": [("skipped", "amp on a CPU without native bf16")] * 3,
}

NODE_A = {
    "host": "node-a",
    "cpu_model": "Test CPU 9000",
    "cpus_usable": 16,
    "memory_gb": 128.0,
    "os": "Linux-6.1-x86_64",
    "python": "3.11.7",
    "gpus": ["NVIDIA H100, 81559 MiB, 550.54"],
    "cuda_driver_version": "12.4",
    "topology": "\tGPU0\tGPU1\nGPU0\t X \tNV18\nGPU1\tNV18\t X ",
    "packages": {"torch": "2.13.0", "transformers": "5.23.0"},
}
NODE_B = NODE_A | {"host": "node-b", "gpus": [], "cuda_driver_version": None, "topology": None}

FAKE_ADAPTER = {
    "framework": "pytorch",
    "display_name": Phrase.of("adapter.builtin", framework="PyTorch"),
    "version": "2.13.0",
    "launcher": "per_device",
    "environment": "envs/pytorch.yaml",
    "features": ["DDP", "AMP"],
    "models": {
        "resnet50": "huggingface/transformers/ResNet",
        "bert_base": "huggingface/transformers/Bert",
    },
}

BASELINE_CELLS = [
    # framework, layout, median, speedup as published (wrong on purpose: it must be recomputed)
    ("pytorch", "1n1g", 120.0, 1.0),
    ("pytorch", "1n2g", 228.0, 9.99),
    ("oneflow", "1n1g", 400.0, 1.0),
]


def _model_config(model: str) -> dict[str, Any]:
    if model == "bert_base":
        return {"hidden_size": 256, "model_type": "bert", "num_hidden_layers": 2}
    return {
        "depths": [3, 4, 6, 3],
        "id2label": {"0": "LABEL_0", "1": "LABEL_1"},
        "label2id": {"LABEL_0": 0, "LABEL_1": 1},
        "model_type": "resnet",
    }


# The workload's wall time as the run's tasks timed it: the harness's own verdicts are told by it
# (a timeout that ran the whole 30-minute limit, an OOM its task saw in the log).
WORKLOAD_WALL_S = {"timeout": 1800.6, "oom": 12.0}


def _write_run(cell: dict[str, Any], options: dict[str, Any], repeat: int, status: str) -> str:
    """A run folder as the harness leaves it: manifest.json beside each rank's log."""
    run_dir = Path("results/runs") / cell["cell_id"] / f"r{repeat}"
    run_dir.mkdir(parents=True, exist_ok=True)
    node = NODE_B if cell["model"] == "bert_base" else NODE_A
    ranks = int(cell["devices"])
    for rank in range(ranks):
        config_line = (
            f"dlperf-config model={cell['model']} params=1234567 device=cuda amp_dtype=none "
            f"world_size={ranks} torch=2.13.0 model_config="
            + json.dumps(_model_config(cell["model"]), separators=(",", ":"))
        )
        steps = [f"dlperf-step rank={rank} step={s} samples=8" for s in range(1, 9)]
        lines = ["dlperf-skip reason=amp"] if status == "skipped" else [config_line, *steps]
        (run_dir / f"rank{rank}.log").write_text("\n".join(lines) + "\n")
    manifest = {
        "adapter": {"name": "pytorch", "version": "test", "launcher": "per_device"},
        "backend": "local",
        "cell": cell,
        "measure": {"cell": cell, "options": options, "steps": 8, "device": "auto"},
        "nodes": {f"{node['host']}#node0": node},
        "repeat": repeat,
        "status": status,
        "tasks": [{"log": f"rank{r}.log", "task": r} for r in range(ranks)],
    }
    path = run_dir / "manifest.json"
    path.write_text(json.dumps(manifest, indent=2))
    return str(path)


def _runs_frame(config: dict[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame]:
    specs = [spec for case in config["cases"] for spec in expand_case(case)]
    adapter_options = {"image_size": 224, "num_classes": 1000, "model_config": {}}
    rows = []
    for spec in specs:
        cell = spec.cell.key()
        options = adapter_options | spec.options
        for repeat, (status, value) in enumerate(RUNS.get(cell["cell_id"], []), start=1):
            ok = status == "ok"
            ranks = int(cell["devices"])
            logs = [
                f"results/runs/{cell['cell_id']}/r{repeat}/rank{r}.log:4-7" for r in range(ranks)
            ]
            rows.append(
                cell
                | {
                    "repeat": repeat,
                    "status": status,
                    "status_detail": "" if ok else value,
                    "throughput_samples_per_s": value if ok else math.nan,
                    "method": "timestamps" if ok else None,
                    "window_first_step": 3 if ok else math.nan,
                    "window_last_step": 6 if ok else math.nan,
                    "trace": " ".join(logs) if ok else None,
                    "p50_ms": 80.0 + repeat if ok else math.nan,
                    "p95_ms": 90.5 if ok else math.nan,
                    "workload_wall_s": WORKLOAD_WALL_S.get(status, math.nan),
                    "manifest": _write_run(cell, options, repeat, status),
                    "source": "measured",
                    "schema_version": 1,
                }
            )
    return pd.DataFrame(rows).reindex(columns=RUN_COLUMNS), planned_cells(specs)


# The newer columns (another stage adds them): figures for the ResNet-50 FP32 b8 cells only, so
# that every other cell shows n/a (NaN), never 0.
NEW_CELL_FIGURES = {
    "pytorch.resnet50.fp32.noxla.b8.1n1g": {
        "achieved_tflops": 1.234,
        "mfu_pct": 12.5,
        "peak_mem_mib": 2048.0,
        "energy_j_per_sample": 0.8123,
        "power_w_per_device": 81.2,
        "batch_size_resolved": 8,
        "unstable": False,
        "outlier_runs": 0,
    },
    "pytorch.resnet50.fp32.noxla.b8.1n2g": {
        "achieved_tflops": 2.31,
        "mfu_pct": 11.7,
        "peak_mem_mib": 2100.0,
        "energy_detail": "no power counter (NVML) on this node",
        "busbw_gb_s": 9.5,
        "speedup_ceiling": 1.97,
        "batch_size_resolved": 8,
        "unstable": True,
        "outlier_runs": 1,
        # the tables' English text, which the report does not read: it words the flags from
        # unstable, throughput_cv, the suite's limit and the runs' outlier column
        "flags": "unstable: CV 2.7% > 2%; outlier r3: 180.0 vs median 185.0 samples/s",
    },
}
# an outlier run: its robust z (column outlier_z) and the tables' English text for it
OUTLIER_RUN = (
    "pytorch.resnet50.fp32.noxla.b8.1n2g",
    3,
    -4.2,
    "180.0 vs median 185.0 samples/s: 5.0 away > 3 x scale 1.19",
)
# Window steps (warm-up 2, measure 4) as each rank's step durations in seconds, per ok run that
# has steps: (cell, repeat) -> durations per rank.
STEP_SECONDS = {
    ("pytorch.resnet50.fp32.noxla.b8.1n1g", r): [[0.1, 0.2, 0.3, 0.4]] for r in (1, 2, 3)
} | {
    ("pytorch.resnet50.fp32.noxla.b8.1n2g", 1): [[0.1, 0.2, 0.3, 0.4], [0.15, 0.1, 0.35, 0.2]],
    ("pytorch.resnet50.fp32.noxla.b8-noddp.1n1g", 1): [[0.05, 0.05, 0.05, 0.05]],
}


def _steps_frame() -> pd.DataFrame:
    """Per-step records with timestamps: 2 warm-up steps of 1 s, the window, 2 more of 1 s."""
    rows = []
    for (cell_id, repeat), ranks in STEP_SECONDS.items():
        for rank, window in enumerate(ranks):
            end = 1000.0
            for step, seconds in enumerate([1.0, 1.0, *window, 1.0, 1.0], start=1):
                start, end = end, end + seconds
                rows.append(
                    {
                        "cell_id": cell_id,
                        "repeat": repeat,
                        "rank": rank,
                        "step": step,
                        "steps": 1,
                        "samples": 8,
                        "time_s": end,
                        "start_s": start,
                        "path": f"results/runs/{cell_id}/r{repeat}/rank{rank}.log",
                        "line": step + 1,
                    }
                )
    return pd.DataFrame(rows).reindex(columns=STEP_COLUMNS)


def _with_new_columns(runs: pd.DataFrame, cells: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    cells = cells.copy()
    for cell_id, figures in NEW_CELL_FIGURES.items():
        for column, value in figures.items():
            cells.loc[cells["cell_id"] == cell_id, column] = value
    runs = runs.assign(outlier=False, outlier_detail="", outlier_z=math.nan)
    cell_id, repeat, z, detail = OUTLIER_RUN
    at = (runs["cell_id"] == cell_id) & (runs["repeat"] == repeat)
    runs.loc[at, "outlier"] = True
    runs.loc[at, "outlier_z"] = z
    runs.loc[at, "outlier_detail"] = detail
    return runs, cells


def _write_baseline() -> None:
    rows = []
    for framework, layout, median, speedup in BASELINE_CELLS:
        devices = int(layout[0]) * int(layout[2])
        rows.append(
            {
                "cell_id": f"{framework}.resnet50.fp32.noxla.b8.{layout}",
                "status": "ok",
                "throughput_median": median,
                "speedup": speedup,
                "devices": devices,
            }
        )
    Path("baseline").mkdir()
    pd.DataFrame(rows).to_csv("baseline/cells.tsv", sep="\t", index=False)


def _outputs() -> list[Path]:
    return [
        Path(f"results/report/report.{lang}.{ext}")
        for lang in ("en", "zh")
        for ext in ("md", "html")
    ]


def render_suite(root: Path, workers: int = 1) -> Path:
    """A results folder (cells.tsv, runs.tsv, steps, plan, manifests, logs, a baseline) under
    `root`, rendered once in every language and format (by `workers` processes)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)  # runs.tsv holds paths relative to the working directory, as in the workflow
        # A fixed adapter description, so that editing the real adapter does not move the goldens.
        mp.setattr(
            report_names, "framework_info", lambda name: FAKE_ADAPTER if name == "pytorch" else None
        )
        config = validate(copy.deepcopy(CONFIG))
        runs, planned = _runs_frame(config)
        runs, cells = _with_new_columns(runs, cells_table(runs, planned, WINDOW, config["repeats"]))
        write_table(runs, Path("results/tables/runs.tsv"))
        write_table(cells, Path("results/tables/cells.tsv"))
        write_table(_steps_frame(), Path("results/tables/steps.tsv.gz"))
        write_plan(config, Path("results"), PLAN_SITE, Path("results/tables/plan.json"), 1.0)
        _write_baseline()
        render_reports(
            config=config,
            cells_path=Path("results/tables/cells.tsv"),
            runs_path=Path("results/tables/runs.tsv"),
            outputs=_outputs(),
            generated_at=GENERATED_AT,
            steps_path=Path("results/tables/steps.tsv.gz"),
            plan_path=Path("results/tables/plan.json"),
            workers=workers,
        )
    return root


@pytest.fixture(scope="module")
def suite_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return render_suite(tmp_path_factory.mktemp("suite"))


def test_a_process_per_language_renders_the_same_files(suite_dir: Path, tmp_path: Path) -> None:
    """The reports and plots byte for byte as one process renders them."""
    two = render_suite(tmp_path, workers=2)
    found = [*(suite_dir / "results/report").iterdir(), *(suite_dir / "results/plots").iterdir()]
    one_files = sorted(p.relative_to(suite_dir) for p in found)
    plots = [p for p in one_files if p.suffix == ".png"]
    assert len(plots) >= 4 and {p.name.split(".")[-2] for p in plots} == {"en", "zh"}
    for name in one_files:
        assert (two / name).read_bytes() == (suite_dir / name).read_bytes(), name


@pytest.fixture
def rendered(suite_dir: Path) -> dict[str, str]:
    return {p.name: (suite_dir / p).read_text(encoding="utf-8") for p in _outputs()}


def _table_after(markdown: str, heading_part: str) -> list[list[str]]:
    """The first Markdown table after the heading that contains `heading_part`, as rows of cells."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("#") and heading_part in line)
    rows = []
    for line in lines[start + 1 :]:
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip().strip("|").split(" | ")])
        elif rows:
            break
    return [rows[0]] + rows[2:]  # header and body, without the --- line


def _row(table: list[list[str]], nodes: str, devices: str) -> dict[str, str]:
    header = table[0]
    row = next(r for r in table[1:] if r[0] == nodes and r[1] == devices)
    return dict(zip(header, row, strict=True))


PT = "PyTorch (dlperf built-in)"
PT_BASE = f"{PT} [DLPerf v1.0]"


def test_throughput_table_cells(rendered: dict[str, str]) -> None:
    md = rendered["report.en.md"]
    fp32 = _table_after(md, "ResNet-50 v1.5 FP32, batch size 8 ")
    assert fp32[0] == [
        "Node num",
        "Device num",
        PT,
        f"{PT} noddp",
        PT_BASE,
        "oneflow [DLPerf v1.0]",
    ]
    assert _row(fp32, "1", "1") == {
        "Node num": "1",
        "Device num": "1",
        PT: "100.00 (1.00)",
        f"{PT} noddp": "111.00 (1.00)",
        PT_BASE: "120.00 (1.00)",
        "oneflow [DLPerf v1.0]": "400.00 (1.00)",
    }
    one_two = _row(fp32, "1", "2")
    # an unstable cell with an outlier run: its figure is marked (review: it looked as sure as
    # the others, its doubts only in "Read this first" and the spread table)
    assert one_two[PT] == "185.00 (1.85) [1]"
    doubt = '[1] A figure to doubt: see "Read this first" (`pytorch.resnet50.fp32.noxla.b8.1n2g`).'
    assert doubt in md
    assert one_two[PT_BASE] == "228.00 (1.90)"  # from the baseline's own 1n1g, not its 9.99
    assert one_two["oneflow [DLPerf v1.0]"] == "-"  # not in the baseline
    assert _row(fp32, "2", "4")[PT] == "-"  # planned, never run

    amp = _table_after(md, "ResNet-50 v1.5 AMP, batch size 8 ")
    assert _row(amp, "1", "1")[PT] == "failed [1]"
    # no 1n1g figure: n/a, never 1.0 or 0; its r3 timed out: the median of two runs, marked
    assert _row(amp, "1", "2")[PT] == "351.25 (n/a) [2]"
    assert (
        "[1] `pytorch.resnet50.amp.noxla.b8.1n1g`: failed: r1, r2, r3: "
        "exit code 1: RuntimeError: boom"
    ) in md

    oom = _table_after(md, "ResNet-50 v1.5 FP32, batch size 64 ")
    assert [r[2] for r in oom[1:]] == ["OOM", "OOM"]

    bert = _table_after(md, "BERT-base FP32, batch size 8 ")
    assert _row(bert, "1", "2")[PT] == "42.30 (n/a) [1]"  # only its speedup is missing: no doubt
    bert_amp = _table_after(md, "BERT-base AMP, batch size 8 ")
    assert _row(bert_amp, "1", "2")[PT] == "skipped [1] [2]"  # the reason, then the config note
    assert "[1] `pytorch.bert_base.amp.noxla.b8.1n2g`: skipped: r1, r2, r3: amp on a CPU" in md
    assert "[2] BERT ran with a narrow 2-layer configuration. (cells: `pytorch.bert_base" in md
    assert (
        "[1] BERT ran with a narrow 2-layer configuration. "
        "(cells: `pytorch.bert_base.fp32.noxla.b8.1n2g`)"
    ) in md


def test_spread_and_runs_appendix(rendered: dict[str, str]) -> None:
    md = rendered["report.en.md"]
    spread = _table_after(md, "Spread of the runs")  # the first group's: ResNet-50 FP32 b8
    row = next(dict(zip(spread[0], r, strict=True)) for r in spread[1:] if r[:2] == [PT, "1n2g"])
    assert row["Runs ok/done/planned"] == "3/3/3"
    assert row["Median"] == "185.00" and row["Min-max"] == "180.00-190.00"
    assert row["Speedup"] == "1.85" and row["Efficiency"] == "92.5%"
    assert row["Speedup baseline"] == "`pytorch.resnet50.fp32.noxla.b8.1n1g`"
    assert row["Method"] == "timestamps"
    # the newer figures, with units in the headers; NaN is n/a, never 0
    assert row["MFU (%)"] == "11.7" and row["Achieved (TFLOP/s)"] == "2.31"
    assert row["Peak memory (MiB)"] == "2100" and row["Energy (J/sample)"] == "n/a"
    assert row["Speedup ceiling (communication)"] == "1.97" and row["Outlier runs"] == "1"
    assert row["Flags"] == "CV 2.7% above 2.0%; r3 outlier"
    one = next(dict(zip(spread[0], r, strict=True)) for r in spread[1:] if r[:2] == [PT, "1n1g"])
    assert one["Energy (J/sample)"] == "0.812" and one["Power (W/device)"] == "81.2"

    runs = _table_after(md, "Appendix: every run")
    by_key = {(r[0], r[1]): dict(zip(runs[0], r, strict=True)) for r in runs[1:]}
    run = by_key[("`pytorch.resnet50.fp32.noxla.b8.1n2g`", "2")]
    assert run["Samples/s"] == "190.00" and run["Window (iterations)"] == "3-6"
    assert run["Trace (log:lines)"] == (
        "`results/runs/pytorch.resnet50.fp32.noxla.b8.1n2g/r2/rank0.log:4-7` "
        "`results/runs/pytorch.resnet50.fp32.noxla.b8.1n2g/r2/rank1.log:4-7`"
    )
    assert (
        by_key[("`pytorch.resnet50.amp.noxla.b8.1n2g`", "3")]["Detail"] == "ran past the time limit"
    )
    assert len(runs) - 1 == sum(len(v) for v in RUNS.values())


def test_environment_and_model_configuration(rendered: dict[str, str]) -> None:
    md = rendered["report.en.md"]
    assert "### Node node-a" in md and "### Node node-b" in md
    assert "```text\n\tGPU0\tGPU1\nGPU0\t X \tNV18" in md  # nvidia-smi topo -m, verbatim
    assert "GPU topology: not available" in md  # node-b has none
    assert "| GPUs | NVIDIA H100, 81,559 MiB, driver 550.54 |" in md
    assert "| Packages | torch 2.13.0, transformers 5.23.0 |" in md
    assert "### PyTorch (dlperf built-in): BERT-base" in md
    assert '"num_hidden_layers": 2' in md  # the model configuration the workload printed
    assert '"id2label (entries)": 2' in md
    assert '"image_size": 32' in md  # the adapter options it was launched with
    assert "`params=1234567`" in md
    configs = md[md.index("## Appendix: model configurations") : md.index("## Appendix: every")]
    assert "`pytorch.bert_base.fp32.noxla.b8 (1n2g)`" in configs
    assert "bert_base.amp" not in configs  # skipped runs launched nothing
    assert "| PyTorch (dlperf built-in) (`pytorch`) |" in md
    assert "- DLPerf v1.0: `baseline/cells.tsv` (3 cells)" in md


def _numbers(text: str) -> Counter[str]:
    return Counter(re.findall(r"\d+(?:\.\d+)?", text))


def test_languages_same_sections_and_numbers(rendered: dict[str, str]) -> None:
    en, zh = rendered["report.en.md"], rendered["report.zh.md"]
    levels = [
        [len(line) - len(line.lstrip("#")) for line in md.splitlines() if line.startswith("#")]
        for md in (en, zh)
    ]
    assert levels[0] == levels[1] and len(levels[0]) > 10
    assert _numbers(en) == _numbers(zh)
    assert [line.count("|") for line in en.splitlines()] == [
        line.count("|") for line in zh.splitlines()
    ]
    assert "## 测试环境" in zh and "## 测试结果" in zh and "失败 [1]" in zh
    html_en, html_zh = rendered["report.en.html"], rendered["report.zh.html"]
    ids = [re.findall(r'<section id="([^"]+)"', h) for h in (html_en, html_zh)]
    assert ids[0] == ids[1] and "environment" in ids[0]
    tables = [re.findall(r"<td[^>]*>(.*?)</td>", h) for h in (html_en, html_zh)]
    assert [_numbers(c) for c in tables[0]] == [_numbers(c) for c in tables[1]]


def test_html_is_self_contained(rendered: dict[str, str]) -> None:
    for lang in ("en", "zh"):
        html = rendered[f"report.{lang}.html"]
        assert 'src="http' not in html and "<link" not in html and "<script" not in html
        sources = re.findall(r'<img[^>]* src="([^"]+)"', html)
        # throughput plots for the 3 tables with a figure (b64 is all OOM), speedup only for fp32 b8
        assert len(sources) == 4
        for src in sources:
            assert src.startswith("data:image/png;base64,")
            assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
        assert "<td>185.00 (1.85)<sup>[1]</sup></td>" in html
        assert '<td class="num">185.00 †</td>' in html


def test_markdown_links_plots(rendered: dict[str, str], suite_dir: Path) -> None:
    links = re.findall(r"!\[[^]]*\]\(([^)]+)\)", rendered["report.zh.md"])
    assert "../plots/resnet50.fp32.b8.throughput.zh.png" in links
    assert len(links) == 4
    for link in links:
        assert (suite_dir / "results/report" / link).read_bytes()[:4] == b"\x89PNG"


def test_golden(rendered: dict[str, str]) -> None:
    """The Markdown reports match tests/golden exactly (DLPERF_UPDATE_GOLDEN=1 rewrites them)."""
    for lang in ("en", "zh"):
        text = rendered[f"report.{lang}.md"]
        golden = GOLDEN / f"report.{lang}.md"
        if os.environ.get("DLPERF_UPDATE_GOLDEN") == "1":
            golden.parent.mkdir(parents=True, exist_ok=True)
            golden.write_text(text, encoding="utf-8")
        assert text == golden.read_text(encoding="utf-8"), (
            f"{golden} differs; see DLPERF_UPDATE_GOLDEN"
        )


def test_real_adapter_describes_what_the_report_shows() -> None:
    info = report_names.framework_info("pytorch")
    assert info is not None and set(FAKE_ADAPTER) <= set(info)
    assert {"resnet50", "bert_base"} <= set(info["models"])
    assert report_names.framework_info("no_such_framework") is None


def test_catalogs_agree() -> None:
    assert set(languages()) >= {"en", "zh"}
    en = catalog("en")
    for lang in languages():
        other = catalog(lang)
        assert set(other) == set(en), f"{lang}: keys differ from en"
        for key, text in en.items():
            assert placeholders(other[key]) == placeholders(text), f"{lang}: {key}"
            assert _numbers(other[key]) == _numbers(text), f"{lang}: digits of {key}"


def test_the_peak_memory_header_names_what_the_method_defines() -> None:
    """Review: the Chinese header of the peak memory figure read 显存峰值 (GPU memory) though
    the figure is the peak RSS on a CPU (the embedded default) and for MXNet on a GPU, as its own
    method line (峰值内存 = ...) and the English header (Peak memory) say. Each language's header
    names the term its method line defines."""
    for lang in languages():
        words = catalog(lang)
        header = re.split(r"[（(]", words["figure.peak_mem"])[0].strip()
        assert words["method.memory"].startswith(header), lang


def test_a_group_of_1n1g_cells_alone_has_no_speedup_plot(tmp_path: Path) -> None:
    """Review: a results table with only 1n1g cells drew a speedup plot of one dot at 1.0 (the
    baseline against itself); the report says there is no speedup to plot instead."""
    from dlperf.report.model import Column, Group, PlotPoint

    def group(*points: PlotPoint) -> Group:
        column = Column("pytorch", "measured", "PyTorch")
        return Group("g", "resnet50", "ResNet-50", "fp32", "FP32", False, "8", "default",
                     (column,), (), (), (), points)  # fmt: skip

    labels = plots.PlotLabels("Speedup", "devices", "speedup", "framework", "ideal")
    alone = group(PlotPoint("PyTorch", "1n1g", 10.0, 1.0))
    assert plots.speedup_plot(alone, labels, "en", tmp_path / "alone.png") is None
    assert not (tmp_path / "alone.png").exists()
    assert plots.throughput_plot(alone, labels, "en", tmp_path / "bars.png") is not None
    unmeasured = group(
        PlotPoint("PyTorch", "1n1g", 10.0, 1.0), PlotPoint("PyTorch", "1n2g", 19.0, float("nan"))
    )
    assert plots.speedup_plot(unmeasured, labels, "en", tmp_path / "unmeasured.png") is None
    scaled = group(PlotPoint("PyTorch", "1n1g", 10.0, 1.0), PlotPoint("PyTorch", "1n2g", 19.0, 1.9))
    assert (
        plots.speedup_plot(scaled, labels, "en", tmp_path / "scaled.png") == tmp_path / "scaled.png"
    )


def test_chinese_plot_labels_have_glyphs(tmp_path: Path) -> None:
    if plots.cjk_font_family() is None:
        pytest.skip("no CJK font installed (fonts-noto-cjk)")
    from dlperf.report.model import Column, Group, PlotPoint

    group = Group(
        "g",
        "resnet50",
        "ResNet-50",
        "fp32",
        "FP32",
        False,
        "8",
        "default",
        (Column("pytorch", "measured", "PyTorch"),),
        (),
        (),
        (),
        (PlotPoint("PyTorch", "1n1g", 10.0, 1.0), PlotPoint("PyTorch", "1n2g", 19.0, 1.9)),
    )
    labels = plots.PlotLabels("吞吐率", "设备数", "样本/秒", "框架", "理想（线性）")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for draw in (plots.throughput_plot, plots.speedup_plot):
            path = draw(group, labels, "zh", tmp_path / f"{draw.__name__}.png")
            assert path is not None and path.read_bytes()[:4] == b"\x89PNG"
    assert not [w for w in caught if "missing from font" in str(w.message)]


def test_another_cjk_font_is_used_where_noto_sans_cjk_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Review: a machine whose Chinese font was not Noto Sans CJK (here: Noto Serif CJK alone, as
    WenQuanYi or Source Han elsewhere) drew the Chinese plots' labels as boxes, with a warning
    to install fonts-noto-cjk."""
    find = plots.font_manager.findfont
    try:
        find(
            plots.font_manager.FontProperties(family="Noto Serif CJK SC"), fallback_to_default=False
        )
    except ValueError:
        pytest.skip("no Noto Serif CJK installed")

    def without_sans_cjk(prop: Any, *args: Any, **kwargs: Any) -> str:
        if any(family.startswith("Noto Sans CJK") for family in prop.get_family()):
            raise ValueError("hidden")
        return find(prop, *args, **kwargs)

    plots.cjk_font_family.cache_clear()
    monkeypatch.setattr(plots.font_manager, "findfont", without_sans_cjk)
    try:
        assert plots.cjk_font_family() == "Noto Serif CJK SC"
    finally:
        plots.cjk_font_family.cache_clear()


def test_missing_cjk_font_warns(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    plots.cjk_font_family.cache_clear()
    monkeypatch.setattr(plots, "_known_family", lambda families: None)
    monkeypatch.setattr(plots.font_manager, "findSystemFonts", lambda: [])
    with caplog.at_level(logging.WARNING, logger="dlperf.report.plots"):
        assert plots.cjk_font_family() is None
    assert "fonts-noto-cjk" in caplog.text
    plots.cjk_font_family.cache_clear()


def test_baseline_from_runs_table(tmp_path: Path) -> None:
    runs = pd.DataFrame(
        {
            "cell_id": ["oneflow.resnet50.fp32.noxla.b8.1n1g"] * 3
            + ["oneflow.resnet50.fp32.noxla.b8.1n2g"] * 2,
            "repeat": [1, 2, 3, 1, 2],
            "status": ["ok", "ok", "ok", "ok", "oom"],
            "throughput_samples_per_s": [10.0, 12.0, 11.0, 20.0, math.nan],
        }
    )
    path = tmp_path / "runs.tsv"
    runs.to_csv(path, sep="\t", index=False)
    cells = load_baseline("old", path).set_index("cell_id")
    assert cells.loc["oneflow.resnet50.fp32.noxla.b8.1n1g", "throughput_median"] == 11.0
    two = cells.loc["oneflow.resnet50.fp32.noxla.b8.1n2g"]
    assert (
        two["speedup"] == pytest.approx(20 / 11) and two["devices"] == 2 and two["source"] == "old"
    )
    assert two["runs_ok"] == 1 and two["statuses"] == "ok:1,oom:1"


def test_empty_tables_render(tmp_path: Path) -> None:
    cells, runs = tmp_path / "tables/cells.tsv", tmp_path / "tables/runs.tsv"
    write_table(pd.DataFrame(columns=CELL_TABLE_COLUMNS), cells)
    write_table(pd.DataFrame(columns=RUN_COLUMNS), runs)
    config = validate(copy.deepcopy(CONFIG) | {"baselines": []})
    outputs = [tmp_path / "report/report.en.md", tmp_path / "report/report.zh.html"]
    assert render_reports(config, cells, runs, outputs, generated_at=GENERATED_AT) == outputs
    md = outputs[0].read_text()
    assert (
        "No cells were planned." in md and "No cells to show." in md and "No runs recorded." in md
    )


def test_a_suite_with_adaptive_repeats_says_its_rule_not_a_fixed_count(tmp_path: Path) -> None:
    """Review: with adaptive repeats a cell gets from `repeats` to their `max` runs, but the
    report said "3 runs planned per cell" (and 3 repeats per cell in its options) beside cells of
    14 runs, and never said how their count was decided. Both languages state the rule."""
    cells, runs = tmp_path / "tables/cells.tsv", tmp_path / "tables/runs.tsv"
    write_table(pd.DataFrame(columns=CELL_TABLE_COLUMNS), cells)
    write_table(pd.DataFrame(columns=RUN_COLUMNS), runs)
    adaptive = {"max": 20, "ci_width_pct": 2.5, "level": 0.9}
    config = validate(copy.deepcopy(CONFIG) | {"baselines": [], "adaptive_repeats": adaptive})
    outputs = [tmp_path / "report/report.en.md", tmp_path / "report/report.zh.md"]
    render_reports(config, cells, runs, outputs, generated_at=GENERATED_AT)
    en, zh = (path.read_text() for path in outputs)
    assert "3 runs planned per cell" not in en
    assert (
        "3 runs per cell, then one more at a time (adaptive repeats) while the 90% confidence "
        "interval of the median is wider than 2.5% of the median, at most 20 runs" in en
    )
    assert (
        "| Repeats per cell | 3, then one more at a time up to 20 while the 90% CI of the median "
        "is wider than 2.5% of it |" in en
    )
    assert "先运行 3 次，之后只要中位数的 90% 置信区间宽于中位数的 2.5%" in zh
    assert "最多 20 次" in zh and "计划运行 3 次" not in zh


def test_the_report_says_what_a_framework_lacks_and_where_a_release_ran(tmp_path: Path) -> None:
    """Issues 17 and 18.5: the frameworks section names a suite model a framework does not run,
    with its adapter's reason, and where each upstream release the suite uses has run for real
    (in both languages; the reasons are the adapters' own words)."""
    from dlperf.adapters import get_adapter

    cells, runs = tmp_path / "tables/cells.tsv", tmp_path / "tables/runs.tsv"
    write_table(pd.DataFrame(columns=CELL_TABLE_COLUMNS), cells)
    write_table(pd.DataFrame(columns=RUN_COLUMNS), runs)
    cases = [
        {"framework": "pytorch", "model": "gpt", "batch_size": [2], "layouts": ["1n1g"]},
        {"framework": "mxnet", "model": "resnet50", "batch_size": [2], "layouts": ["1n1g"]},
        {"framework": "paddlepaddle", "model": "gpt", "batch_size": [2], "layouts": ["1n1g"]},
        {"framework": "tensorflow2", "model": "resnet50", "batch_size": [2],
         "layouts": ["1n1g"], "options": {"release": "current"}},
    ]  # fmt: skip
    config = validate({"name": "lacks", "cases": cases, "baselines": []})
    outputs = [tmp_path / f"report/report.{name}" for name in ("en.md", "zh.md", "en.html")]
    render_reports(config, cells, runs, outputs, generated_at=GENERATED_AT)
    en, zh, html = (path.read_text() for path in outputs)
    mxnet, tf2 = get_adapter("mxnet"), get_adapter("tensorflow2")
    zh_says = Translator("zh").say
    gpt, ran = mxnet.lacks["gpt"], tf2.evidence_of("current")
    assert english(ran.phrase()).startswith("runs in CI: tests/")
    assert f"- {english(mxnet.title())} does not run GPT: {english(gpt)}" in en
    assert f"- {tf2.display_name}, release `current`: {english(ran.phrase())}" in en
    # dlperf's own words in Chinese; the release's note, recorded text, marked as such
    assert f"MXNet（dlperf 内置，GluonCV/GluonNLP 模型） 不运行 GPT：{zh_says(gpt)}" in zh
    assert f"的版本 `current`：在 CI 中运行：原文“{ran.on}”" in zh
    assert "GluonNLP 0.10 的库中没有" in zh_says(gpt)
    assert "does not run ResNet" not in en  # pytorch runs every model of the suite
    # a framework that trains a suite's model without sharding says why (pytorch shards GPT)
    paddle = get_adapter("paddlepaddle")
    unsharded = paddle.fsdp_lacks["gpt"]
    assert (
        f"- {english(paddle.title())} trains GPT data parallel only, without sharding: fsdp: "
        f"{english(unsharded)}" in en
    )
    assert f"只以数据并行训练 GPT，不支持 sharding: fsdp：{zh_says(unsharded)}" in zh
    assert zh_says(unsharded) != english(unsharded) and "分片数据并行" in zh_says(unsharded)
    assert en.count("without sharding: fsdp") == 1
    assert html.count("trains GPT data parallel only, without sharding: fsdp") == 1


def test_output_names_are_checked() -> None:
    assert parse_target(Path("x/report.zh.html")).lang == "zh"
    with pytest.raises(ValueError, match="report.<lang>"):
        parse_target(Path("x/summary.md"))
    with pytest.raises(KeyError, match="fr"):
        parse_target(Path("x/report.fr.md"))


@pytest.mark.parametrize(
    ("value", "throughput", "speedup"),
    [
        (1234.56, "1234.56", "1234.56"),
        (5.4321, "5.43", "5.43"),
        (0.012345, "0.0123", "0.01"),
        (math.nan, "n/a", "n/a"),
        (None, "n/a", "n/a"),
    ],
)
def test_number_formats(value: float | None, throughput: str, speedup: str) -> None:
    assert fmt.throughput(value) == throughput
    assert fmt.speedup(value) == speedup


def _section(markdown: str, heading: str) -> str:
    start = markdown.index(f"\n## {heading}")
    end = markdown.find("\n## ", start + 1)
    return markdown[start : end if end > 0 else None]


def test_report_leads_with_the_answer(rendered: dict[str, str]) -> None:
    md = rendered["report.en.md"]
    headings = [line for line in md.splitlines() if line.startswith("## ")]
    assert headings[:3] == [
        "## Summary",
        "## Read this first: what weakens these numbers",
        "## Results",
    ]
    assert headings[-2:] == ["## Appendix: model configurations", "## Appendix: every run"]
    table = _table_after(md, "Summary")
    rows = {(r[0], r[1], r[2], r[3]): dict(zip(table[0], r, strict=True)) for r in table[1:]}
    # the largest layout with a figure (2n2g was never run), with its newer figures
    row = rows[("ResNet-50 v1.5", "FP32", "8", PT)]
    assert row["Largest layout"] == "1n2g"
    assert (row["Throughput (samples/s)"], row["Speedup"], row["Efficiency"]) == (
        "185.00 †",  # unstable, an outlier run: a figure to doubt, marked as the intro says
        "1.85",
        "92.5%",
    )
    throughput = {key: r["Throughput (samples/s)"] for key, r in rows.items()}
    assert throughput["ResNet-50 v1.5", "AMP", "8", PT] == "351.25 †"  # r3 timed out
    assert throughput["ResNet-50 v1.5", "FP32", "8", f"{PT} noddp"] == "111.00"
    assert throughput["BERT-base", "FP32", "8", PT] == "42.30"  # only its speedup is missing
    assert 'or a figure marked †: see "Read this first"' in md
    assert (row["Achieved (TFLOP/s)"], row["MFU (%)"], row["Peak memory (MiB)"]) == (
        "2.31",
        "11.7",
        "2100",
    )
    assert "Energy (J/sample)" not in table[0]  # NaN at every largest layout: not a column of 0
    assert rows[("ResNet-50 v1.5", "FP32", "8", f"{PT} noddp")]["MFU (%)"] == "n/a"
    assert rows[("ResNet-50 v1.5", "FP32", "64", PT)]["Throughput (samples/s)"] == "OOM"
    assert rows[("BERT-base", "AMP", "8", PT)]["Throughput (samples/s)"] == "skipped"
    assert rows[("ResNet-50 v1.5", "AMP", "8", PT)]["Speedup"] == "n/a"


def test_read_this_first_lists_what_weakens_the_numbers(rendered: dict[str, str]) -> None:
    section = _section(rendered["report.en.md"], "Read this first")
    kinds = [line[4:] for line in section.splitlines() if line.startswith("### ")]
    assert kinds == [
        "Runs that failed, ran out of memory or timed out",
        "Skipped cells",
        "Cells planned but not run",
        "Unstable cells",
        "Outlier runs",
        "Speedups without a baseline",
    ]

    def rows(kind: str) -> list[list[str]]:
        return _table_after(section, kind)[1:]

    assert [
        "`pytorch.resnet50.amp.noxla.b8.1n2g`",
        "timeout",
        "r3",
        "ran past the time limit",
    ] in rows("Runs that failed")
    assert [
        "`pytorch.resnet50.amp.noxla.b8.1n1g`",
        "failed",
        "r1, r2, r3",
        "exit code 1: RuntimeError: boom",
    ] in rows("Runs that failed")
    assert rows("Skipped cells")[0][3] == "amp on a CPU without native bf16"
    assert {r[0] for r in rows("Cells planned but not run")} == {
        "`pytorch.resnet50.fp32.noxla.b8.2n2g`",
        "`pytorch.resnet50.amp.noxla.b8.2n2g`",
    }
    assert rows("Unstable cells") == [
        ["`pytorch.resnet50.fp32.noxla.b8.1n2g`", "ok", "-", "CV 2.7% above 2.0%; r3 outlier"]
    ]
    assert rows("Outlier runs") == [
        ["`pytorch.resnet50.fp32.noxla.b8.1n2g`", "ok", "r3", "MAD z = 4.2 (below the median)"]
    ]
    # each cell's own status (it has a figure), its 1n1g cell's beside the 1n1g cell
    assert rows("Speedups without a baseline") == [
        [
            "`pytorch.bert_base.fp32.noxla.b8.1n2g`",
            "ok",
            "-",
            "pytorch.bert_base.fp32.noxla.b8.1n1g (missing)",
        ],
        [
            "`pytorch.resnet50.amp.noxla.b8.1n2g`",
            "ok",
            "-",
            "pytorch.resnet50.amp.noxla.b8.1n1g (failed)",
        ],
    ]
    runs = _table_after(rendered["report.en.md"], "Appendix: every run")
    assert ["`pytorch.resnet50.fp32.noxla.b8.1n2g`", "3", "ok (outlier)"] == runs[
        next(
            i for i, r in enumerate(runs) if r[:2] == ["`pytorch.resnet50.fp32.noxla.b8.1n2g`", "3"]
        )
    ][:3]


def test_latency_percentiles_from_the_steps(rendered: dict[str, str]) -> None:
    """Hand-computed: 1n1g pools 3 runs of window steps 0.1, 0.2, 0.3, 0.4 s (12 values; linear
    interpolation: p50 = 0.25, p75 = 0.325, p90 = p95 = 0.4); 1n2g takes per step the slower of
    two ranks (0.15, 0.2, 0.35, 0.4: p50 = 0.275), with 2 x 8 samples per step."""
    table = _table_after(rendered["report.en.md"], "PyTorch (dlperf built-in): ResNet-50 v1.5 FP32")
    by_layout = {r[0]: dict(zip(table[0], r, strict=True)) for r in table[1:]}
    assert list(by_layout) == ["1n1g, no DDP", "1n1g", "1n2g"]  # as the DDP benchmark orders them
    one = by_layout["1n1g"]
    assert [one[f"p{q} sec/iter"] for q in (50, 75, 90, 95)] == ["0.250", "0.325", "0.400", "0.400"]
    assert [one[f"p{q} samples/s"] for q in (50, 75, 90)] == ["32.00", "24.62", "20.00"]
    assert one["Runs/steps pooled"] == "3/12"
    two = by_layout["1n2g"]
    assert (two["p50 sec/iter"], two["p50 samples/s"]) == ("0.275", "58.18")
    assert (two["p75 sec/iter"], two["p75 samples/s"]) == ("0.363", "44.14")  # 16 / 0.3625
    assert by_layout["1n1g, no DDP"]["p95 samples/s"] == "160.00"
    zh = rendered["report.zh.md"]
    assert "| 1n1g，无 DDP | 1 |" in zh and "p50 秒/迭代" in zh


def test_plan_that_was_followed(rendered: dict[str, str], suite_dir: Path) -> None:
    section = _section(rendered["report.en.md"], "The plan the runs followed")
    plan = json.loads((suite_dir / "results/tables/plan.json").read_text())
    assert f"Planned makespan {hours(plan['makespan_s'])} h" in section
    assert f"lower bound {hours(plan['bounds']['lower_s'])} h" in section
    table = _table_after(section, "The plan")
    # 11 cells x 3 repeats; no earlier runs timed, so every duration is the time limit
    assert [r[:5] for r in table[1:]] == [
        ["1n1g", "12", "0", "0", "12"],
        ["1n2g", "15", "0", "0", "15"],
        ["2n2g", "6", "0", "0", "6"],
        ["total", "33", "0", "0", "33"],
    ]
    assert "2 node(s) x 2 GPUs" in section
    assert "| 合计 | 33 |" in rendered["report.zh.md"]


def _drawn_figures(suite_dir: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, dict[str, Any]]:
    """The golden suite's report data, and a dict that collects each figure the plots save, by
    its first axes' title."""
    from matplotlib.figure import Figure

    drawn: dict[str, Figure] = {}
    original = Figure.savefig

    def keep(fig: Figure, *args: Any, **kwargs: Any) -> None:
        drawn[fig.axes[0].get_title()] = fig
        original(fig, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep)
    monkeypatch.chdir(suite_dir)
    config = validate(copy.deepcopy(CONFIG))
    data = load_report_data(
        config, Path("results/tables/cells.tsv"), Path("results/tables/runs.tsv"), GENERATED_AT
    )
    return data, drawn


def test_plots_show_spread_and_ceiling(suite_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data, figures = _drawn_figures(suite_dir, monkeypatch)
    make_plots(data, "en", suite_dir / "plots-check")
    drawn = {title: figure.axes[0] for title, figure in figures.items()}
    title = "ResNet-50 v1.5 FP32, batch size 8 per device"
    bars = drawn[f"{title}: throughput"]
    caps = [line for c in bars.containers if hasattr(c, "lines") for line in c.lines[2]]
    segments = [seg for coll in caps for seg in coll.get_segments()]
    spans = sorted((round(s[0][1], 3), round(s[1][1], 3)) for s in segments)
    assert (98.0, 101.0) in spans and (180.0, 190.0) in spans  # min-max of the runs
    speedup = drawn[f"{title}: speedup"]
    labels = [line.get_label() for line in speedup.get_lines()]
    assert "Ideal (linear)" in labels
    assert f"{PT}: communication ceiling" in labels
    ceiling = next(line for line in speedup.get_lines() if line.get_label().endswith("ceiling"))
    assert list(ceiling.get_ydata()) == [1.97]


def test_a_figure_to_doubt_is_marked_on_the_plots(
    suite_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review: a figure its table footnotes as one to doubt (1n2g: an outlier run; "Read this
    first") was a plain bar and point, as sure as the others; it is hatched on the throughput
    plot, hollow on the speedup plot, and the note under the axes says why."""
    data, drawn = _drawn_figures(suite_dir, monkeypatch)
    from dlperf.i18n import Translator
    from dlperf.report.render import in_words

    (group,) = [in_words(g, Translator("en")) for g in data.groups if g.slug == "resnet50.fp32.b8"]
    measured = {p.layout: p.doubted for p in group.points if p.column == PT}
    assert measured == {"1n1g": False, "1n2g": True}
    make_plots(data, "en", suite_dir / "plots-doubt")
    title = "ResNet-50 v1.5 FP32, batch size 8 per device"
    bars = drawn[f"{title}: throughput"]
    mine = next(c for c in bars.axes[0].containers if c.get_label() == PT)
    assert [bar.get_hatch() for bar in mine] == [None, "//"]
    notes = [t.get_text() for t in bars.texts]
    assert notes == [
        'Error bars: min-max of the runs\nHatched: a figure to doubt (see "Read this first")'
    ]
    speedup = drawn[f"{title}: speedup"].axes[0]
    hollow = [line for line in speedup.get_lines() if line.get_markerfacecolor() == "white"]
    assert [list(line.get_ydata()) for line in hollow] == [
        [p.speedup for p in group.points if p.column == PT and p.doubted]
    ]


def _without_notes(table: list[list[str]]) -> list[list[str]]:
    """The table with footnote marks ("[1] [2]") taken off its column headers."""
    return [[re.sub(r"( \[\d+\])+$", "", h) for h in table[0]], *table[1:]]


V1_TSV = Path(__file__).resolve().parents[1] / "config/baselines/dlperf_v1.0.tsv"


@pytest.fixture(scope="module")
def dlperf_v1(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """`dlperf report` on the DLPerf v1.0 baseline alone: the published tables, nothing run."""
    from dlperf.cli import main

    out = tmp_path_factory.mktemp("v1")
    assert main(["report", str(V1_TSV), "--out", str(out), "--name", "DLPerf v1.0"]) == 0
    return {p.name: p.read_text(encoding="utf-8") for p in out.glob("report.*")}


def test_dlperf_report_reproduces_the_published_v1_tables(dlperf_v1: dict[str, str]) -> None:
    """Values as printed in reports/dlperf_benchmark_test_report_v1.md and README.md."""
    md = dlperf_v1["report.en.md"]
    assert set(dlperf_v1) == {
        f"report.{lang}.{ext}" for lang in ("en", "zh") for ext in ("md", "html")
    }
    fp32 = _table_after(md, "ResNet-50 v1.5 FP32, batch size 128 ")
    assert fp32[0][2:] == [
        "OneFlow",
        "NGC MXNet",
        "NGC TensorFlow 1.x",
        "NGC PyTorch",
        "MXNet",
        "TensorFlow 2.x",
        "PyTorch",
        "PaddlePaddle",
    ]
    four = _row(fp32, "4", "32")
    assert four["OneFlow"] == "12411.97 (31.21)" and four["PaddlePaddle"] == "9348.17 (26.50)"
    assert _row(fp32, "2", "16")["NGC MXNet"] == "5758.49 (14.68)"
    # AMP bsz=256: NGC TensorFlow at bsz=224 with and without XLA, Paddle at 196 and 224 (OOM)
    amp = _without_notes(_table_after(md, "ResNet-50 v1.5 AMP, batch size 256 "))
    header = amp[0]
    assert "NGC TensorFlow 1.x w/XLA bsz=224" in header
    assert "PaddlePaddle bsz=196" in header and "PaddlePaddle bsz=224" in header
    assert not any(h.endswith(("TensorFlow 1.x", "PaddlePaddle")) for h in header)  # 256: OOM
    row = dict(zip(header, next(r for r in amp[1:] if r[1] == "32"), strict=True))
    assert row["NGC TensorFlow 1.x w/XLA bsz=224"] == "29171.69 (24.34)"
    assert row["NGC TensorFlow 1.x bsz=224"] == "24734.22 (26.17)"
    assert row["PaddlePaddle bsz=196"] == "11617.57 (13.10)"
    assert row["PaddlePaddle bsz=224"] == "10633.22 (10.28)"
    assert (
        "bsz=256 ran out of memory (OOM) at 1n1g, so bsz=224 is shown "
        "(`ngc_tensorflow.resnet50.amp.xla.b256.1n1g`)."
    ) in md
    assert "] w/DALI, bsz=196" in md  # the published remark, as a footnote
    # BERT-base FP32 bsz=max: each framework's own max in its header
    bmax = _without_notes(_table_after(md, "BERT-base FP32, batch size max "))
    assert _row(bmax, "4", "32")["OneFlow bsz=96"] == "4664.10 (29.89)"
    assert _row(bmax, "4", "32")["MXNet noclip bsz=64"] == "4340.89 (27.69)"
    xla = _without_notes(_table_after(md, "BERT-base AMP, batch size 64 "))
    assert _row(xla, "1", "8")["NGC TensorFlow 1.x w/XLA"] == "3112.73 (7.37)"
    oom = _table_after(_section(md, "Read this first"), "Runs that failed")
    assert [r[0] for r in oom[1:]] == [
        "`ngc_tensorflow.resnet50.amp.noxla.b256.1n1g` [dlperf_v1.0]",
        "`ngc_tensorflow.resnet50.amp.xla.b256.1n1g` [dlperf_v1.0]",
        "`paddle.resnet50.amp.noxla.b256.1n1g` [dlperf_v1.0]",
    ]
    assert "nothing was run to make it" in md
    assert "No plan was recorded" in md
    zh = dlperf_v1["report.zh.md"]
    assert "在 1n1g 下显存不足（OOM），因此列出 bsz=224 的结果" in zh
    assert "12411.97 (31.21)" in zh and "没有运行任何测试" in zh


def test_dlperf_report_bad_input_names_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from dlperf.cli import main

    assert main(["report", str(tmp_path / "nope.tsv"), "--out", str(tmp_path)]) == 2
    assert "nope.tsv: no such cells table" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "cell_id,throughput_median\npytorch.resnet50.fp32.noxla.b8.1n1g,10\nnot-a-cell,3\n"
    )
    assert main(["report", str(bad), "--out", str(tmp_path)]) == 2
    assert f"{bad}:3:" in capsys.readouterr().err


def test_chinese_reads_as_chinese(rendered: dict[str, str]) -> None:
    """Every heading and table header in the Chinese report is Chinese (English kept only for
    technical terms and data: names, ids, units)."""
    zh = rendered["report.zh.md"]
    english_words = re.compile(
        r"\b(?:the|of|and|per|runs?|cells?|layout|throughput|speedup|status|median)\b", re.I
    )
    lines = zh.splitlines()
    headers = [line for i, line in enumerate(lines[:-1]) if lines[i + 1].startswith("| ---")]
    for line in [line for line in lines if line.startswith("#")] + headers:
        if not line.startswith("# "):  # the title is the suite's own
            assert not english_words.search(line), line
    headings = [line for line in zh.splitlines() if line.startswith("## ")]
    assert headings[:3] == ["## 结论概览", "## 请先阅读：影响结果可信度的因素", "## 测试结果"]
    for en_text, zh_text in (
        ("Read this first", "请先阅读"),
        ("Unstable cells", "结果不稳定的用例"),
    ):
        assert en_text in rendered["report.en.md"] and zh_text in zh
    assert "| 模型 | 精度 | batch size | 框架 | 最大规模 | 吞吐量（样本/秒） |" in zh


@pytest.mark.integration
def test_snakemake_report_holds_plots_and_tables(tmp_path: Path) -> None:
    """One tiny workflow run, then `snakemake --report`: the reports, plots and tables are
    categorised report outputs, and the plan rule recorded the plan the report states."""
    import zipfile

    import yaml
    from workflow_helpers import TINY_SUITE, snakemake

    suite = yaml.safe_load(TINY_SUITE.read_text())
    suite["cases"] = suite["cases"][:1]  # ResNet-50 at 1n1g and 1n2g, 2 repeats each
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(suite))
    snakemake(tmp_path, "--cores", "2", "--configfile", "config.yaml")
    plan = json.loads((tmp_path / "results/tables/plan.json").read_text())
    assert plan["runs"] == 4 and plan["layouts"][-1]["limit"] == 4  # planned before any run
    md = (tmp_path / "results/report/report.en.md").read_text()
    assert f"Planned makespan {hours(plan['makespan_s'])} h" in md
    assert "| 1n2g | 2 |" in md  # the latency table from the steps table

    snakemake(tmp_path, "--cores", "1", "--configfile", "config.yaml", "--report", "report.zip")
    with zipfile.ZipFile(tmp_path / "report.zip") as archive:
        names = archive.namelist()
    files = {Path(n).name for n in names}
    plots = {
        f"resnet50.fp32.b2.{kind}.{lang}.png"
        for kind in ("throughput", "speedup")
        for lang in ("en", "zh")
    }
    assert plots <= files
    assert {"cells.tsv", "runs.tsv", "report.en.html", "report.zh.md"} <= files
    assert any(n.endswith("report.html") for n in names)
    snakemake(tmp_path, "--cores", "1", "--configfile", "config.yaml", "--report", "report.html")
    html = (tmp_path / "report.html").read_text()
    for category in ("Plots", "Tables", "Reports", "resnet50 fp32 b2"):
        assert category in html
    assert "resnet50.fp32.b2.speedup.zh.png" in html


def test_user_text_cannot_inject_markdown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 20.12: a title with a newline added a heading to the Markdown report."""
    monkeypatch.setitem(CONFIG["report"], "title", "Mine\n# injected | heading")
    root = render_suite(tmp_path)
    for lang in ("en", "zh"):
        md = (root / f"results/report/report.{lang}.md").read_text(encoding="utf-8")
        assert md.startswith("# Mine \\# injected \\| heading\n")
        assert "\n# injected" not in md
        html = (root / f"results/report/report.{lang}.html").read_text(encoding="utf-8")
        assert "Mine\n# injected | heading" in html or "Mine # injected | heading" in html


def test_report_modules_import_no_cycle() -> None:
    """No import cycle among the report's modules, imports inside functions and under
    TYPE_CHECKING included (issue 16: headline and model imported each other)."""
    import ast

    import dlperf.report

    root = Path(dlperf.report.__file__).parent
    graph: dict[str, set[str]] = {}
    for path in root.glob("*.py"):
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "dlperf.report":
                deps |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "dlperf.report."
            ):
                deps.add(str(node.module).removeprefix("dlperf.report."))
            elif isinstance(node, ast.Import):
                prefix = "dlperf.report."
                deps |= {
                    a.name.removeprefix(prefix) for a in node.names if a.name.startswith(prefix)
                }
        graph[path.stem] = deps
    assert {"headline", "model", "build", "groups"} <= set(graph)

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, " -> ".join((*path, module))
        for dep in graph.get(module, ()):
            visit(dep, (*path, module))

    for module in graph:
        if module != "__init__":  # the package imports its modules; they never import it whole
            visit(module, ())


def test_reasons_are_told_from_the_tables_values() -> None:
    """The report words a run's reason, an outlier and a cell's flags from structured values;
    English text columns are shown (as recorded text) only where a table lacks the values."""
    from dlperf.i18n import Translator
    from dlperf.report.reasons import (
        Limits,
        cell_flags,
        outlier_reason,
        run_reason,
        with_outlier_z,
    )

    en, zh = Translator("en"), Translator("zh")
    limits = Limits(max_cv=0.05, time_limit_s=1800.0)
    timeout = {"status": "timeout", "status_detail": "ran past the time limit (30 min)"}
    assert en.say(run_reason(timeout | {"workload_wall_s": 1800.2}, limits)) == (
        "ran past the time limit"
    )
    assert zh.say(run_reason(timeout | {"workload_wall_s": 1800.2}, limits)) == "超过了单次运行时限"
    lost = {"status": "timeout", "status_detail": "no outcome 1920 s after start: job lost"}
    assert zh.say(run_reason(lost | {"workload_wall_s": math.nan}, limits)) == (
        "原文“no outcome 1920 s after start: job lost”"  # not the harness's verdict: as recorded
    )
    oom = {"status": "oom", "status_detail": "task 1 ended first: out of memory (see log)"}
    assert zh.say(run_reason(oom | {"workload_wall_s": 3.0}, limits)) == "显存不足（详见日志）"

    # a runs table older than outlier_z: the z is computed from the throughputs
    runs = pd.DataFrame(
        {
            "cell_id": ["c"] * 3,
            "repeat": [1, 2, 3],
            "status": ["ok"] * 3,
            "throughput_samples_per_s": [57.0, 57.0, 4.1],
            "outlier": [False, False, True],
            "outlier_detail": ["", "", "4.1 vs median 57.0 samples/s: 52.9 away > 3 x scale 0.57"],
        }
    )
    flagged = with_outlier_z(runs).to_dict("records")[2]
    assert en.say(outlier_reason(flagged)) == "MAD z = 92.8 (below the median)"  # 52.9 / 0.57
    assert zh.say(outlier_reason(flagged)) == "MAD z = 92.8（低于中位数）"

    cell = {"source": "measured", "unstable": True, "throughput_cv": 0.776, "outlier_runs": 1}
    runs = runs.assign(batch_size_resolved=[16, 16, 8])
    assert zh.say(cell_flags(cell, runs, limits)) == (
        "变异系数 77.6%，高于 5.0%；r3 离群；各次运行所用的 batch size 不同：8、16"
    )
    baseline = cell | {"source": "DLPerf v1.0"}
    assert en.say(cell_flags(baseline, runs.iloc[0:0], limits)) == (
        "unstable: CV 77.6%; outlier runs: 1"  # a baseline's limit is not the suite's
    )
    stall = runs.assign(longest_step_ms=[6.0, 15020.0, 6.0], p50_ms=5.8, window_time_s=17.3)
    assert zh.say(cell_flags({"source": "measured"}, stall.iloc[:2], limits)) == (
        "r2 出现停顿：窗口内有一步耗时 15.0 秒（其中位数 5.8 毫秒），占窗口时间的 87%"
    )
    other = {"source": "measured", "baseline_hardware": "AMD EPYC 9654"}
    assert zh.say(cell_flags(other, runs.iloc[0:0], limits)) == (
        "其 1n1g 用例在另一种硬件上运行（AMD EPYC 9654）：加速比是两台机器结果之比"
    )
    losses = runs.assign(nonfinite_loss_steps=[math.nan, 3, 2])
    assert en.say(cell_flags({"source": "measured"}, losses, limits)) == (
        "r3 outlier; runs trained with batch sizes 8, 16; "
        "loss nan or inf in 5 window steps (r2, r3): steps that may not have trained"
    )
    assert zh.say(cell_flags({"source": "measured"}, losses, limits)).endswith(
        "测量窗口内有 5 步的 loss 为 nan 或 inf（r2、r3）：这些步可能没有真正训练"
    )
    # a stale or failed run at another batch size is in no median: no mixed batch sizes (review:
    # a cell redone after its `max` search changed said so until its old run was redone)
    stale = runs.assign(status=["ok", "ok", "stale"], outlier=False)
    assert en.say(cell_flags({"source": "measured"}, stale, limits)) == ""
    old = {"source": "measured", "unstable": math.nan, "flags": "unstable: CV 7.7% > 5%"}
    assert zh.say(cell_flags(old, runs.iloc[0:0], limits)) == "原文“unstable: CV 7.7% > 5%”"


def _amp_skip_reason(framework: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """What a built-in workload's amp cell records on a CPU without bf16 units: its skip reason,
    by the code path a run takes."""
    from dlperf.adapters import builtin, get_adapter
    from dlperf.matrix import Cell, Layout

    monkeypatch.setattr(builtin, "has_cuda_hint", lambda: False)
    monkeypatch.setattr(builtin, "cpu_has_native_bf16", lambda: False)
    adapter = get_adapter(framework)
    cell = Cell(framework, "resnet50", "amp", True, 8, Layout(1, 1))
    reason = adapter.node_skip_reason(cell, adapter.resolved_options({}))
    assert reason is not None
    return reason


def test_dlperfs_own_run_details_are_said_in_the_reports_language(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 16: a run's status_detail in dlperf's own words (an amp cell's skip reason, the
    harness's verdicts) is said from the catalog: in English as recorded, in Chinese in the
    Chinese report, its evidence (a log line, an error) verbatim inside it; any other text stays
    verbatim, marked as the original."""
    from dlperf.adapters import REGISTRY, get_adapter
    from dlperf.adapters.builtin import BuiltinWorkload
    from dlperf.launch.outcome import first_cause
    from dlperf.launch.task import _exited
    from dlperf.matrix import Cell, Layout
    from dlperf.report.reasons import Limits, run_reason

    en, zh = Translator("en"), Translator("zh")
    limits = Limits(max_cv=0.05, time_limit_s=1800.0)

    def said(status: str, detail: str) -> tuple[str, str]:
        run = {"status": status, "status_detail": detail, "workload_wall_s": math.nan}
        return en.say(run_reason(run, limits)), zh.say(run_reason(run, limits))

    builtins = [name for name, cls in REGISTRY.items() if issubclass(cls, BuiltinWorkload)]
    assert len(builtins) >= 6
    for framework in builtins:
        reason = _amp_skip_reason(framework, monkeypatch)
        english_text, chinese = said("skipped", reason)
        assert english_text == reason, framework  # the report's English is the recorded sentence
        assert chinese.startswith("在没有原生 bf16 单元（无 avx512_bf16/amx_bf16）的 CPU 上，amp ")
        assert chinese.endswith("；如仍要测量，请设置选项 amp_on_cpu: run"), framework
        assert "native" not in chinese and "measures" not in chinese and "原文" not in chinese
    pytorch = _amp_skip_reason("pytorch", monkeypatch)
    assert said("skipped", pytorch)[1] == (
        "在没有原生 bf16 单元（无 avx512_bf16/amx_bf16）的 CPU 上，amp 是模拟执行的，比 fp32 慢数十倍；"
        "如仍要测量，请设置选项 amp_on_cpu: run"
    )

    # the harness's: a rank killed first, with its log's last line verbatim (an upstream's English)
    killed = english(_exited(-9, "RuntimeError: NCCL error: unhandled system error"))
    other = english(_exited(1, "RuntimeError: Connection reset by peer"))
    outcomes = {
        0: {"status": "failed", "ended_at": 2.0, "detail": other},
        1: {"status": "failed", "ended_at": 1.0, "detail": killed},
    }
    detail = first_cause(outcomes, "failed")
    assert said("failed", detail) == (
        "task 1 ended first: killed by SIGKILL (exit code -9); last line: RuntimeError: NCCL "
        "error: unhandled system error",
        "任务 1 最先结束：被 SIGKILL 终止（退出码 -9）；日志最后一行：“RuntimeError: NCCL error: "
        "unhandled system error”",
    )
    assert said("failed", english(_exited(2, ""))) == (
        "exit code 2; last line: (empty log)",
        "退出码 2；日志为空",
    )
    assert said("timeout", "ran past the time limit (30 min)")[1] == "超过了单次运行时限（30 分钟）"
    # an upstream source's skip reason, in dlperf's words
    oneflow = get_adapter("oneflow")
    bert = Cell("oneflow", "bert_base", "fp32", False, 32, Layout(1, 1))
    no_data = oneflow.skip_reason(bert, oneflow.resolved_options({}))
    assert no_data is not None and said("skipped", no_data) == (
        no_data,
        f"{oneflow.display_name} 没有 bert_base 的合成输入：请将选项 data_dir 设为各节点上准备好的数据集",
    )
    # JAX's xla-off cells, and a run measured with other parameters than the suite's now
    jax = get_adapter("jax")
    eager = Cell("jax", "resnet50", "fp32", False, 32, Layout(1, 1))
    xla_only = jax.skip_reason(eager, jax.resolved_options({}))
    assert xla_only is not None and said("skipped", xla_only)[0] == xla_only
    assert said("skipped", xla_only)[1].startswith("JAX 用 XLA（jax.jit）编译整个训练步")
    stale = english(Phrase.of("detail.stale", measured="0123abcd", expected="4567ef01"))
    assert said("stale", stale)[1] == (
        "测量时的参数与当前测试集不同（测量摘要 0123abcd，测试集的为 4567ef01：选项、测量窗口、设备、"
        "负载代码、框架的环境，或站点设置的环境变量、setup 命令或镜像已改变）；下次运行会重做"
    )
    # another's words, or a detail this dlperf no longer writes: verbatim, marked
    for text in ("exit code 1: RuntimeError: boom", "amp on a CPU without native bf16"):
        assert said("failed", text) == (text, f"原文“{text}”")
    unknown = first_cause({0: {"status": "failed", "detail": "boom"}, 1: {}}, "failed")
    assert said("failed", unknown) == ("task 0 ended first: boom", "任务 0 最先结束：原文“boom”")


def test_every_recorded_detail_phrase_is_recognised_back() -> None:
    """Each detail.* phrase of the catalog, as a run records it in English, is recognised as
    itself (no two templates read the same sentence), and said in every language."""
    from dlperf.i18n import DETAIL, NESTED, NUMBERS, recognise

    for key, text in catalog("en").items():
        if not key.startswith(DETAIL):
            continue
        values = {
            name: "12" if name in NUMBERS else Phrase.of("detail.oom") if name in NESTED else "x y"
            for name in placeholders(text)
        }
        phrase = Phrase.of(key, **values)
        found = recognise(english(phrase))
        assert found is not None and found.key == key, key
        assert dict(found.values) == values, key
        for lang in languages():
            assert Translator(lang).say(phrase), (lang, key)


def test_the_chinese_report_says_a_real_amp_skip_in_chinese(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 16: the skip reason a run of the default suite records on a CPU (12 cells of it) is
    Chinese in report.zh and as recorded in report.en."""
    reason = _amp_skip_reason("pytorch", monkeypatch)
    monkeypatch.setitem(RUNS, "pytorch.bert_base.amp.noxla.b8.1n2g", [("skipped", reason)] * 3)
    root = render_suite(tmp_path)
    en, zh = (
        (root / f"results/report/report.{lang}.md").read_text(encoding="utf-8")
        for lang in ("en", "zh")
    )
    assert f"skipped: r1, r2, r3: {reason}" in en
    assert (
        "已跳过：r1、r2、r3：在没有原生 bf16 单元（无 avx512_bf16/amx_bf16）的 CPU 上，amp 是模拟"
        in zh
    )
    assert "without native bf16" not in zh and "set option" not in zh


def test_solver_status_in_words() -> None:
    from dlperf.i18n import Translator
    from dlperf.plan.milp import MILP_FEASIBLE, MILP_METHOD
    from dlperf.report.planinfo import solver_text

    en, zh = Translator("en"), Translator("zh")
    assert en.say(solver_text(MILP_METHOD, MILP_FEASIBLE)) == "phase MILP: time limit, feasible"
    assert (
        zh.say(solver_text(MILP_METHOD, MILP_FEASIBLE)) == "分阶段 MILP，达到求解时限，得到可行解"
    )
    # PuLP's own status is evidence: as recorded
    assert zh.say(solver_text(MILP_METHOD, "No Solution Found")) == "分阶段 MILP，No Solution Found"


def test_the_chinese_golden_has_none_of_dlperfs_own_english_sentences() -> None:
    """Issue 16: the sentences dlperf writes (a built-in workload's name, its adapters' reasons)
    come from the catalogs, so the Chinese golden has none of their English, which the English
    golden keeps."""
    en, zh = ((GOLDEN / f"report.{lang}.md").read_text(encoding="utf-8") for lang in ("en", "zh"))
    assert "PyTorch (dlperf built-in)" in en and "PyTorch（dlperf 内置）" in zh
    for sentence in ("dlperf built-in",):
        assert sentence not in zh, sentence


def test_chinese_report_words_what_dlperf_composes(rendered: dict[str, str]) -> None:
    """Issue 16: flags, outliers, the harness's verdicts and the solver's status are Chinese in
    report.zh; evidence (an error, a skip reason) stays verbatim, marked as the original text."""
    zh = rendered["report.zh.md"]
    for sentence in (
        "ran past the time limit",
        "out of memory (see log)",
        "below the median",
        "outlier",
        "optimal within",
        "phase MILP",
    ):
        assert sentence not in zh, sentence
    assert "| 变异系数 2.7%，高于 2.0%；r3 离群 |" in zh
    assert "| MAD z = 4.2（低于中位数） |" in zh
    assert "失败：r1、r2、r3：原文“exit code 1: RuntimeError: boom”" in zh
    assert "调度求解：分阶段 MILP，最优（相对间隙在 1% 以内）。" in zh


def test_memory_rounds_and_a_published_figure_keeps_its_digits() -> None:
    """Review: a peak of 415.9 MiB read 415 (truncated) beside a ratio of the full values."""
    assert [fmt.integer(v) for v in (415.9, 413.4, 2.5e6, math.nan)] == [
        "416",
        "413",
        "2500000",
        "n/a",
    ]
    assert [fmt.as_printed(v) for v in (56.601, 104.458, 65.0, None)] == [
        "56.601",
        "104.458",
        "65",
        "n/a",
    ]


def test_layouts_of_one_device_count_each_have_their_place_on_the_plots() -> None:
    """Review: 1n2g (180) and 2n1g (120) were drawn at one x: the 120 bar hidden in the 180 one,
    the speedups joined by a vertical segment."""
    place, ticks = plots.x_axis(["2n1g", "1n1g", "1n2g"], numeric=True)
    assert place == {"1n1g": 0.0, "1n2g": 1.0, "2n1g": 2.0}
    assert ticks == ["1 (1n1g)", "2 (1n2g)", "2 (2n1g)"]
    place, ticks = plots.x_axis(["1n8g", "1n1g", "2n8g"], numeric=True)  # DLPerf's: devices
    assert place == {"1n1g": 1.0, "1n8g": 8.0, "2n8g": 16.0} and ticks == ["1", "8", "16"]
    place, ticks = plots.x_axis(["1n8g", "1n1g", "2n8g"], numeric=False)  # bars: side by side
    assert place == {"1n1g": 0.0, "1n8g": 1.0, "2n8g": 2.0} and ticks == ["1", "8", "16"]


def test_read_this_first_lists_a_baselines_cells_and_the_run_flags() -> None:
    """Review: a baseline's failed cell of an id the suite measured was dropped from "Read this
    first" (its own runs were looked for among the measured ones); stalls, non-finite losses and
    other hardware were in no caveat; special-case cells (no 1n1g speedup by design) filled
    "Speedups without a baseline"."""
    from dlperf.report.caveats import caveats

    one, two = "pytorch.resnet50.fp32.noxla.b8.1n1g", "pytorch.resnet50.fp32.noxla.b8.1n2g"
    gpt = "megatron.gpt.amp.noxla.b4-tensor_parallel_2.1n2g"
    row = {"status": "ok", "throughput_median": 100.0, "speedup": 1.0, "devices": 1}
    cells = pd.DataFrame(
        [
            row | {"cell_id": one, "source": "measured"},
            row | {"cell_id": two, "source": "measured", "devices": 2, "speedup": 1.8,
                   "baseline_hardware": "AMD EPYC 9654"},
            row | {"cell_id": two, "source": "DLPerf", "status": "failed", "devices": 2},
            row | {"cell_id": gpt, "source": "measured", "devices": 2, "speedup": math.nan},
        ]
    )  # fmt: skip
    runs = pd.DataFrame(
        [
            {"cell_id": one, "repeat": 1, "status": "ok", "throughput_samples_per_s": 100.0,
             "longest_step_ms": 15000.0, "p50_ms": 6.0, "window_time_s": 20.0},
            {"cell_id": two, "repeat": 1, "status": "ok", "throughput_samples_per_s": 180.0},
        ]
    )  # fmt: skip
    found = {(c.kind, c.cell_id, c.source) for c in caveats(cells, runs)}
    assert ("runs_failed", two, "DLPerf") in found
    assert ("flagged", one, "measured") in found and ("flagged", two, "measured") in found
    assert not any(kind == "no_speedup_baseline" for kind, *_ in found)


def test_numbers_in_names_sort_as_numbers() -> None:
    """Review: W&D columns came out vocab_size 12800000, 25600000, 3200000 (text order), and GPT
    rows put b16 before b2."""
    from dlperf.report.order import natural_key

    names = ["vocab_size_25600000", "vocab_size_3200000", "default", "vocab_size_12800000"]
    assert sorted(names, key=natural_key) == [
        "default", "vocab_size_3200000", "vocab_size_12800000", "vocab_size_25600000"
    ]  # fmt: skip


def test_read_this_first_says_which_cells_trained_other_work_than_their_1n1g_cell() -> None:
    """Review: a bsz=max cell at 1n8g (128 per device) against its 1n1g cell (256) had its speedup
    refused and no caveat said why."""
    from dlperf.report.caveats import caveats

    base = "pytorch.resnet50.fp32.noxla.bmax"
    row = {"status": "ok", "source": "measured", "throughput_median": 401.0, "devices": 1}
    cells = pd.DataFrame(
        [
            row | {"cell_id": f"{base}.1n1g", "batch_size_resolved": 256, "speedup": 1.0},
            row | {"cell_id": f"{base}.1n8g", "batch_size_resolved": 128, "devices": 8,
                   "speedup": math.nan},
        ]
    )  # fmt: skip
    (found,) = [c for c in caveats(cells, pd.DataFrame()) if c.kind == "no_speedup_other_work"]
    assert found.cell_id == f"{base}.1n8g"
    assert found.detail == f"{base}.1n1g: bsz=256 ≠ bsz=128"


def test_read_this_first_and_the_runs_appendix_list_cells_in_their_natural_order() -> None:
    """Review: both sorted cell ids as text: b16 before b8, 1n16g before 1n1g."""
    from dlperf.report.build import _run_entries
    from dlperf.report.caveats import caveats
    from dlperf.report.reasons import Limits

    ids = [f"pytorch.resnet50.fp32.noxla.{c}" for c in ("b16.1n1g", "b8.1n16g", "b8.1n1g")]
    runs = pd.DataFrame(
        [{"cell_id": i, "repeat": 1, "status": "failed", "status_detail": "x"} for i in ids]
    )
    natural = [ids[2], ids[1], ids[0]]
    assert [c.cell_id for c in caveats(pd.DataFrame(), runs)] == natural
    assert [e.cell_id for e in _run_entries(runs, Limits())] == natural


def _report_rule_on(outputs: list[Path], plots: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The report rule on these outputs, its rendering left out."""
    from types import SimpleNamespace

    from dlperf.report import render, rule

    monkeypatch.setattr(rule, "rule_logging", lambda smk: None)
    monkeypatch.setattr(render, "render_reports", lambda **kwargs: None)
    files = {k: f"{k}.tsv" for k in ("cells", "runs", "steps", "plan")}
    output = SimpleNamespace(plots=str(plots), reports=[str(p) for p in outputs])
    rule.report_rule(
        SimpleNamespace(config={}, input=SimpleNamespace(**files), output=output, threads=1)
    )


def test_the_report_rule_removes_the_old_reports_of_its_own_results_folder(tmp_path, monkeypatch):
    """A language no longer asked for: its report goes, from the results folder ResultPaths
    names for the rule's reports. Review: the rule took any output's grandparent for the
    results folder, so an output that is no report would have emptied another folder's."""
    from dlperf.paths import ResultPaths

    results = ResultPaths(tmp_path / "results")
    old = results.report("zh", "md")
    old.parent.mkdir(parents=True)
    old.write_text("old figures")
    _report_rule_on([results.report("en", "md")], results.plots, monkeypatch)
    assert not old.exists()

    other = ResultPaths(tmp_path / "other").report("zh", "md")
    other.parent.mkdir(parents=True)
    other.write_text("another folder's report")
    with pytest.raises(ValueError, match="not a results folder's report"):
        _report_rule_on([tmp_path / "other" / "out" / "report.en.md"], tmp_path / "p", monkeypatch)
    assert other.read_text() == "another folder's report"
    assert ResultPaths.of_report(results.report("en", "html")) == results
