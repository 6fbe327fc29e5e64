"""Adaptive repeats for real: a cell whose median is not known well enough gets more runs, one at
a time (Snakemake checkpoints), up to adaptive_repeats.max; a plain suite's jobs are unchanged."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest
import yaml
from workflow_helpers import TINY_SUITE, planned_jobs, snakemake, write_config

pytestmark = pytest.mark.integration
CELL = "pytorch.bert_base.fp32.noxla.b2.1n1g"
SUITE = {
    "name": "adaptive",
    "repeats": 2,
    # no real cell's median CI is 1e-6 % wide: every cell is noisy against this target
    "adaptive_repeats": {"max": 4, "ci_width_pct": 1e-6, "level": 0.5},
    "window": {"warmup": 2, "measure": 3},
    "device": "cpu",
    "time_limit_min": 3,
    "report": {"languages": ["en"]},
    "cases": [
        {
            "framework": "pytorch",
            "model": "bert_base",
            "batch_size": [2],
            "layouts": ["1n1g"],
            "options": {
                "seq_len": 16,
                "max_predictions": 3,
                "threads": 1,
                "model_config": {
                    "num_hidden_layers": 1,
                    "hidden_size": 32,
                    "num_attention_heads": 2,
                    "intermediate_size": 64,
                    "vocab_size": 512,
                },
            },
        }
    ],
}


def tables(workdir, name):
    return pd.read_csv(workdir / "results/tables" / name, sep="\t")


def test_a_noisy_cell_gets_more_runs_up_to_max_and_a_laxer_target_stops_it_early(tmp_path):
    write_config(tmp_path, SUITE)
    snakemake(tmp_path, "--cores", "2", "--configfile", "config.yaml")
    decisions = tmp_path / "results/repeats" / CELL
    after = {k: json.loads((decisions / f"after_r{k}.json").read_text()) for k in (2, 3)}
    assert after[2]["more"] and after[3]["more"] and after[3]["runs"] == 3
    assert "> target" in after[2]["reason"]
    assert not (decisions / "after_r4.json").exists()  # 4 runs: max reached, nothing to decide
    runs = tables(tmp_path, "runs.tsv")
    assert sorted(runs.loc[runs.cell_id == CELL, "repeat"]) == [1, 2, 3, 4]
    assert set(runs.status) == {"ok"}
    cell = tables(tmp_path, "cells.tsv").set_index("cell_id").loc[CELL]
    assert (cell.runs_planned, cell.runs_done, cell.runs_ok) == (4, 4, 4)
    assert cell.throughput_median == pytest.approx(
        runs.throughput_samples_per_s.median(),
        rel=1e-5,  # the table keeps 6 significant digits
    )
    listing = json.loads((decisions / "runs.json").read_text())
    assert listing["runs"] == 4 and "adaptive_repeats.max" in listing["stopped"]

    # a target any two runs meet: the first decision says no more; no run is redone
    lax = SUITE | {"adaptive_repeats": {"max": 4, "ci_width_pct": 1000, "level": 0.5}}
    (tmp_path / "lax.yaml").write_text(yaml.safe_dump(lax))
    proc = snakemake(tmp_path, "--cores", "2", "--configfile", "lax.yaml")
    assert "run_cell" not in proc.stderr + proc.stdout
    assert not json.loads((decisions / "after_r2.json").read_text())["more"]
    cell = tables(tmp_path, "cells.tsv").set_index("cell_id").loc[CELL]
    assert (cell.runs_planned, cell.runs_done) == (2, 2)
    assert sorted(tables(tmp_path, "runs.tsv").repeat) == [1, 2]

    # the first target again, Snakemake's records lost: the decision made with the lax target
    # is made again (it records its settings), and the cell has its four runs back, none redone
    shutil.rmtree(tmp_path / ".snakemake")
    proc = snakemake(tmp_path, "--cores", "2", "--configfile", "config.yaml")
    assert "run_cell" not in proc.stderr + proc.stdout
    assert json.loads((decisions / "after_r2.json").read_text())["more"]
    cell = tables(tmp_path, "cells.tsv").set_index("cell_id").loc[CELL]
    assert (cell.runs_planned, cell.runs_done) == (4, 4)

    # a run the decisions added, its manifest deleted: asked for by name and redone, as a
    # planned run is (it stayed in the tables, from nothing on disk)
    (tmp_path / f"results/runs/{CELL}/r3/manifest.json").unlink()
    proc = snakemake(tmp_path, "--cores", "2", "--configfile", "config.yaml")
    assert (tmp_path / f"results/runs/{CELL}/r3/manifest.json").exists()
    runs = tables(tmp_path, "runs.tsv")
    assert sorted(runs.repeat) == [1, 2, 3, 4] and set(runs.status) == {"ok"}


def test_a_plain_repeats_suite_plans_the_same_jobs_as_before(tmp_path):
    shutil.copy(TINY_SUITE, tmp_path / "config.yaml")
    jobs = planned_jobs(tmp_path, "--configfile", "config.yaml")
    assert set(jobs) == {"run_cell", "tables", "plan", "report", "all"}
    assert len(jobs["run_cell"]) == 6 * 2
