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
from dlperf.matrix import expand_case
from dlperf.report import fmt, plots
from dlperf.report import model as report_model
from dlperf.report.i18n import catalog, languages, placeholders
from dlperf.report.load import load_baseline
from dlperf.report.render import parse_target, render_reports
from dlperf.stats import Window
from dlperf.tables import CELL_TABLE_COLUMNS, RUN_COLUMNS, cells_table, planned_cells, write_table

GOLDEN = Path(__file__).parent / "golden"
GENERATED_AT = "2024-01-02 03:04 UTC"
WINDOW = Window(warmup=2, measure=4)

CONFIG: dict[str, Any] = {
    "name": "golden",
    "repeats": 3,
    "window": {"warmup": WINDOW.warmup, "measure": WINDOW.measure},
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
    # 2n2g: planned, never run (missing)
    "pytorch.resnet50.amp.noxla.b8.1n1g": [("failed", "exit code 1: RuntimeError: boom")] * 3,
    "pytorch.resnet50.amp.noxla.b8.1n2g": [
        ("ok", 350.5),
        ("ok", 352.0),
        ("timeout", "ran past the time limit"),
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
    "display_name": "PyTorch (dlperf built-in)",
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
                    "manifest": _write_run(cell, options, repeat, status),
                    "source": "measured",
                    "schema_version": 1,
                }
            )
    return pd.DataFrame(rows).reindex(columns=RUN_COLUMNS), planned_cells(specs)


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


@pytest.fixture(scope="module")
def suite_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results folder (cells.tsv, runs.tsv, manifests, logs, a baseline) rendered once."""
    root = tmp_path_factory.mktemp("suite")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)  # runs.tsv holds paths relative to the working directory, as in the workflow
        # A fixed adapter description, so that editing the real adapter does not move the goldens.
        mp.setattr(
            report_model, "framework_info", lambda name: FAKE_ADAPTER if name == "pytorch" else None
        )
        config = validate(copy.deepcopy(CONFIG))
        runs, planned = _runs_frame(config)
        cells = cells_table(runs, planned, WINDOW, config["repeats"])
        write_table(runs, Path("results/tables/runs.tsv"))
        write_table(cells, Path("results/tables/cells.tsv"))
        _write_baseline()
        render_reports(
            config=config,
            cells_path=Path("results/tables/cells.tsv"),
            runs_path=Path("results/tables/runs.tsv"),
            outputs=_outputs(),
            generated_at=GENERATED_AT,
        )
    return root


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
    assert fp32[0] == ["Node num", "Device num", PT, PT_BASE, "oneflow [DLPerf v1.0]"]
    assert _row(fp32, "1", "1") == {
        "Node num": "1",
        "Device num": "1",
        PT: "100.0 (1.00)",
        PT_BASE: "120.0 (1.00)",
        "oneflow [DLPerf v1.0]": "400.0 (1.00)",
    }
    one_two = _row(fp32, "1", "2")
    assert one_two[PT] == "185.0 (1.85)"
    assert one_two[PT_BASE] == "228.0 (1.90)"  # from the baseline's own 1n1g, not its 9.99
    assert one_two["oneflow [DLPerf v1.0]"] == "-"  # not in the baseline
    assert _row(fp32, "2", "4")[PT] == "-"  # planned, never run

    amp = _table_after(md, "ResNet-50 v1.5 AMP, batch size 8 ")
    assert _row(amp, "1", "1")[PT] == "failed [1]"
    assert _row(amp, "1", "2")[PT] == "351.2 (n/a)"  # no 1n1g figure: n/a, never 1.0 or 0
    assert (
        "[1] `pytorch.resnet50.amp.noxla.b8.1n1g`: failed: r1, r2, r3: "
        "exit code 1: RuntimeError: boom"
    ) in md

    oom = _table_after(md, "ResNet-50 v1.5 FP32, batch size 64 ")
    assert [r[2] for r in oom[1:]] == ["OOM", "OOM"]

    bert = _table_after(md, "BERT-base FP32, batch size 8 ")
    assert _row(bert, "1", "2")[PT] == "42.3 (n/a) [1]"
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
    assert row["Median"] == "185.0" and row["Min-max"] == "180.0-190.0"
    assert row["Speedup"] == "1.85" and row["Efficiency"] == "92.5%"
    assert row["Speedup baseline"] == "`pytorch.resnet50.fp32.noxla.b8.1n1g`"
    assert row["Method"] == "timestamps"

    runs = _table_after(md, "Appendix: every run")
    by_key = {(r[0], r[1]): dict(zip(runs[0], r, strict=True)) for r in runs[1:]}
    run = by_key[("`pytorch.resnet50.fp32.noxla.b8.1n2g`", "2")]
    assert run["Samples/s"] == "190.0" and run["Window (iterations)"] == "3-6"
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
    assert "| GPUs | NVIDIA H100, 81559 MiB, 550.54 |" in md
    assert "| Packages | torch 2.13.0, transformers 5.23.0 |" in md
    assert "#### PyTorch (dlperf built-in): BERT-base" in md
    assert '"num_hidden_layers": 2' in md  # the model configuration the workload printed
    assert '"id2label (entries)": 2' in md
    assert '"image_size": 32' in md  # the adapter options it was launched with
    assert "`params=1234567`" in md
    configs = md[md.index("### Model configurations") : md.index("## Results")]
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
        assert "<td>185.0 (1.85)</td>" in html


def test_markdown_links_plots(rendered: dict[str, str], suite_dir: Path) -> None:
    links = re.findall(r"!\[[^]]*\]\(([^)]+)\)", rendered["report.zh.md"])
    assert "../plots/resnet50.fp32.noxla.b8.throughput.zh.png" in links
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
    info = report_model.framework_info("pytorch")
    assert info is not None and set(FAKE_ADAPTER) <= set(info)
    assert {"resnet50", "bert_base"} <= set(info["models"])
    assert report_model.framework_info("no_such_framework") is None


def test_catalogs_agree() -> None:
    assert set(languages()) >= {"en", "zh"}
    en = catalog("en")
    for lang in languages():
        other = catalog(lang)
        assert set(other) == set(en), f"{lang}: keys differ from en"
        for key, text in en.items():
            assert placeholders(other[key]) == placeholders(text), f"{lang}: {key}"
            assert _numbers(other[key]) == _numbers(text), f"{lang}: digits of {key}"


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
        (PlotPoint("PyTorch", 1, 10.0, 1.0), PlotPoint("PyTorch", 2, 19.0, 1.9)),
    )
    labels = plots.PlotLabels("吞吐率", "设备数", "样本/秒", "框架", "理想（线性）")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for draw in (plots.throughput_plot, plots.speedup_plot):
            path = draw(group, labels, "zh", tmp_path / f"{draw.__name__}.png")
            assert path is not None and path.read_bytes()[:4] == b"\x89PNG"
    assert not [w for w in caught if "missing from font" in str(w.message)]


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


def test_output_names_are_checked() -> None:
    assert parse_target(Path("x/report.zh.html")).lang == "zh"
    with pytest.raises(ValueError, match="report.<lang>"):
        parse_target(Path("x/summary.md"))
    with pytest.raises(KeyError, match="fr"):
        parse_target(Path("x/report.fr.md"))


@pytest.mark.parametrize(
    ("value", "throughput", "speedup"),
    [
        (1234.56, "1234.6", "1234.56"),
        (5.4321, "5.43", "5.43"),
        (0.012345, "0.0123", "0.01"),
        (math.nan, "n/a", "n/a"),
        (None, "n/a", "n/a"),
    ],
)
def test_number_formats(value: float | None, throughput: str, speedup: str) -> None:
    assert fmt.throughput(value) == throughput
    assert fmt.speedup(value) == speedup
