"""A cross-framework table from real runs: every built-in workload of config/cross-framework.yaml
through its adapter and its own environment, one workflow, BERT at toy size."""

from __future__ import annotations

import copy
import json

import pandas as pd
import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from workflow_helpers import ENVIRONMENTS, ROOT, snakemake

from dlperf.adapters import get_adapter
from dlperf.adapters.builtin import TINY_IN_TRANSFORMERS_NAMES
from dlperf.matrix import Cell, Layout

pytestmark = [pytest.mark.integration, pytest.mark.frameworks]
# one BERT for every column, in transformers' names (which every built-in workload takes)
TINY_BERT = TINY_IN_TRANSFORMERS_NAMES["bert_base"]


def pinned(requirements):
    """name -> version of every `name==version` line of a requirements file."""
    lines = (line.split("#")[0].strip() for line in requirements.read_text().splitlines())
    pins = (Requirement(line) for line in lines if line)
    return {
        canonicalize_name(pin.name): str(next(iter(pin.specifier)).version)
        for pin in pins
        if len(pin.specifier) == 1 and next(iter(pin.specifier)).operator == "=="
    }


def test_every_framework_has_a_real_column(tmp_path):
    config = yaml.safe_load((ROOT / "config" / "cross-framework.yaml").read_text())
    config |= {"repeats": 1, "window": {"warmup": 3, "measure": 8}}
    config["site"] = {"environments": {"root": str(ENVIRONMENTS)}}  # shared with the other tests
    config["cases"] = [c for c in config["cases"] if c["model"] == "bert_base"]
    for case in config["cases"]:
        case["options"] = copy.deepcopy(TINY_BERT)
        # one compile mode per framework (its first: eager where it has one, JAX's XLA): each
        # framework's own tests run its other mode (to_static, graph mode, jit_compile, hybridize)
        case["xla"] = case.get("xla", [False])[:1]
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(config))
    # 12 runs in five framework environments, built here first on a fresh machine (the first test
    # to need them); 20 runs took 4.2 to 9.2 minutes on 2 cores with the environments built
    snakemake(tmp_path, "--cores", "2", "--config", "suite=suite.yaml", timeout=3600)
    cells = pd.read_csv(tmp_path / "results/tables/cells.tsv", sep="\t").set_index("cell_id")
    runs = pd.read_csv(tmp_path / "results/tables/runs.tsv", sep="\t").set_index("cell_id")
    frameworks = sorted({case["framework"] for case in config["cases"]})
    assert set(frameworks) == {
        "pytorch", "jax", "paddlepaddle", "mxnet", "mindspore_builtin", "tensorflow"
    }  # fmt: skip
    for case in config["cases"]:
        for xla in case.get("xla", [False]):
            cell = Cell(case["framework"], "bert_base", "fp32", xla, 8, Layout(1, 1)).id
            wide = cell.replace(".1n1g", ".1n2g")
            for each in (cell, wide):
                assert cells.loc[each, "status"] == "ok", runs.loc[[each], "status_detail"].tolist()
                assert cells.loc[each, "throughput_median"] > 0
                # every framework states its FLOPs and measures its peak: MFU, never 0 or absent;
                # beside other work a calibration can run slower than the training did: then no
                # MFU, and the peak's source says why (never an MFU over 100%)
                figures = cells.loc[each]
                assert figures["achieved_tflops"] > 0 and figures["peak_tflops"] > 0, figures
                assert 0 < figures["mfu_pct"] < 100 or (
                    "below the achieved rate" in figures["peak_source"]
                ), figures
                assert cells.loc[each, "peak_mem_mib"] > 100  # an interpreter and a framework
            assert cells.loc[wide, "speedup"] == pytest.approx(
                cells.loc[wide, "throughput_median"] / cells.loc[cell, "throughput_median"],
                rel=1e-5,  # the table keeps 6 significant digits
            )
            manifest = json.loads((tmp_path / runs.loc[wide, "manifest"]).read_text())
            requirements = getattr(get_adapter(case["framework"]), "requirements", None)
            environment = manifest["environment"]
            if requirements is None:  # PyTorch: dlperf's own environment
                assert environment is None
                continue
            # its own environment, built from its pins; the workload ran on its interpreter
            assert environment["requirements"].endswith(requirements)
            assert "snakemake" not in environment["packages"]  # not dlperf's own environment
            installed = {canonicalize_name(n): v for n, v in environment["packages"].items()}
            for name, version in pinned(ROOT / requirements).items():  # exactly what it pins
                assert installed[name] == version, (case["framework"], name)
            assert manifest["tasks"][0]["command"][0] == environment["python"]
    report = (tmp_path / "results/report/report.en.md").read_text()
    for framework in frameworks:
        assert get_adapter(framework).display_name in report
