"""A cross-framework table from real runs: PyTorch and JAX through their adapters, one workflow."""

from __future__ import annotations

import importlib.util

import pandas as pd
import pytest
import yaml
from workflow_helpers import ROOT, snakemake

pytestmark = pytest.mark.integration


def test_pytorch_and_jax_columns_from_real_runs(tmp_path):
    if not all(importlib.util.find_spec(m) for m in ("jax", "keras", "keras_hub")):
        pytest.skip("the JAX column needs `make setup` (jax, keras, keras-hub)")
    config = yaml.safe_load((ROOT / "config" / "cross-framework.yaml").read_text())
    config |= {"repeats": 1, "window": {"warmup": 3, "measure": 8}}
    tiny = {
        "num_hidden_layers": 1,
        "hidden_size": 32,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "vocab_size": 512,
    }
    config["cases"] = [c for c in config["cases"] if c["model"] == "bert_base"]
    for case in config["cases"]:
        case["options"] = {"seq_len": 16, "max_predictions": 3, "threads": 1, "model_config": tiny}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    snakemake(tmp_path, "--cores", "2", "--configfile", "config.yaml")
    cells = pd.read_csv(tmp_path / "results/tables/cells.tsv", sep="\t").set_index("cell_id")
    for cell in ("pytorch.bert_base.fp32.noxla.b8", "jax.bert_base.fp32.xla.b8"):
        for layout in ("1n1g", "1n2g"):
            assert cells.loc[f"{cell}.{layout}", "status"] == "ok", cells.loc[f"{cell}.{layout}"]
            assert cells.loc[f"{cell}.{layout}", "throughput_median"] > 0
        assert cells.loc[f"{cell}.1n2g", "speedup"] == pytest.approx(
            cells.loc[f"{cell}.1n2g", "throughput_median"]
            / cells.loc[f"{cell}.1n1g", "throughput_median"],
            rel=1e-5,  # the table keeps 6 significant digits
        )
    report = (tmp_path / "results/report/report.en.md").read_text()
    assert "JAX" in report and "PyTorch" in report
