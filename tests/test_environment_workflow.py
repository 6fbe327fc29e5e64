"""Framework environments through the workflow: a pin that cannot be installed fails only that
framework's cells, with the reason and the build log; fixing the pin reruns only those cells."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml
from workflow_helpers import copy_workflow, planned_jobs, snakemake

from dlperf.adapters.builtin import TINY_IN_TRANSFORMERS_NAMES

pytestmark = [pytest.mark.integration, pytest.mark.frameworks]  # builds JAX's
TINY_BERT = TINY_IN_TRANSFORMERS_NAMES["bert_base"]  # transformers' names: both workloads'


def test_a_broken_pin_fails_its_framework_only_and_its_fix_reruns_only_it(tmp_path):
    snakefile = str(copy_workflow(tmp_path / "workflow"))
    pins = tmp_path / "workflow" / "envs" / "jax.txt"
    good = pins.read_text()
    pins.write_text(good + "dlperf-no-such-package-anywhere==0.0.1\n")
    suite = {
        "name": "envs",
        "repeats": 1,
        "window": {"warmup": 2, "measure": 4},
        "device": "cpu",
        "cases": [
            {"framework": f, "model": "bert_base", "xla": [f == "jax"], "batch_size": [2],
             "layouts": ["1n1g"], "options": TINY_BERT}
            for f in ("pytorch", "jax")
        ],
    }  # fmt: skip
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite))
    args = ("-s", snakefile, "--config", "suite=suite.yaml")
    snakemake(tmp_path, "--cores", "2", *args)
    cells = pd.read_csv(tmp_path / "results/tables/cells.tsv", sep="\t").set_index("cell_id")
    assert cells.loc["pytorch.bert_base.fp32.noxla.b2.1n1g", "status"] == "ok"
    jax = "jax.bert_base.fp32.xla.b2.1n1g"
    assert cells.loc[jax, "status"] == "failed"
    runs = pd.read_csv(tmp_path / "results/tables/runs.tsv", sep="\t").set_index("cell_id")
    detail = runs.loc[jax, "status_detail"]
    assert detail.startswith("environment jax failed to build: `uv pip install` exited")
    log = detail.split("build log: ")[1].rstrip(")")
    assert "dlperf-no-such-package-anywhere" in (tmp_path / log).read_text()
    assert (
        "environment jax failed to build" in (tmp_path / "results/report/report.en.md").read_text()
    )

    pins.write_text(good)  # the fix: only the JAX run is redone, then the tables and the report
    jobs = planned_jobs(tmp_path, *args)
    assert jobs["run_cell"] == [f"cell={jax}, repeat=1"]
    snakemake(tmp_path, "--cores", "2", *args)
    cells = pd.read_csv(tmp_path / "results/tables/cells.tsv", sep="\t").set_index("cell_id")
    assert cells.loc[jax, "status"] == "ok" and cells.loc[jax, "throughput_median"] > 0
    assert planned_jobs(tmp_path, *args) == {}  # the environment is cached: nothing to redo
