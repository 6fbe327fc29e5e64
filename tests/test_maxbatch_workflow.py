"""`batch_size: max` for real: the workflow finds it by probe runs that really run out of memory
(the workload's memory_limit_gb caps its address space), caches it, and trains at it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from workflow_helpers import TINY_SUITE, planned_jobs, snakemake, write_config

pytestmark = pytest.mark.integration
CELL = "pytorch.resnet50.fp32.noxla.bmax.1n1g"
# On this tiny ResNet at 128x128 each sample costs about 1.3 MB of address space, so 1.3 GB holds
# about 250 samples (measured: 240 fits, 270 does not); how many exactly moves with what the
# interpreter has loaded (transformers imports scipy when it is installed: 180 MB, 140 samples),
# and a step that hits the cap near it may die by SIGSEGV in native code rather than report it. So the search's sizes stay a factor of 1.4 clear of it on both sides:
# doubling from 11, 176 fits and 352 does not, and granularity 176 leaves nothing to bisect (the
# bisection is checked in test_maxbatch.py); a whole run at 176 confirms it.
# glibc's tunables make the address space track live memory: per-thread arenas reserve 64 MB of it
# each, and a dynamic mmap threshold lets freed blocks pile up in the heap from step to step.
SUITE = {
    "name": "maxbatch",
    "repeats": 1,
    "window": {"warmup": 1, "measure": 2},
    "device": "cpu",
    "time_limit_min": 3,
    "report": {"languages": ["en"]},
    "max_batch_search": {"start": 11, "ceiling": 1024, "granularity": 176, "probe_steps": 3},
    "site": {"env": {"MALLOC_ARENA_MAX": "1", "MALLOC_MMAP_THRESHOLD_": "65536"}},
    "cases": [
        {
            "framework": "pytorch",
            "model": "resnet50",
            "batch_size": ["max"],
            "layouts": ["1n1g"],
            "options": {
                "image_size": 128,
                "num_classes": 10,
                "threads": 1,
                "memory_limit_gb": 1.3,
                "model_config": {
                    "depths": [1, 1, 1, 1],
                    "hidden_sizes": [16, 32, 64, 128],
                    "embedding_size": 16,
                },
            },
        }
    ],
}


@pytest.fixture(scope="module")
def searched(tmp_path_factory) -> Path:
    workdir = tmp_path_factory.mktemp("maxbatch")
    write_config(workdir, SUITE)
    snakemake(workdir, "--cores", "2", "--configfile", "config.yaml")
    return workdir


def test_the_search_resolves_max_by_real_out_of_memory_probes(searched):
    result = json.loads((searched / f"results/maxbatch/{CELL}.json").read_text())
    found = result["value"]
    assert result["status"] == "ok"
    probes = [p for p in result["probes"] if not p["full_length"]]
    doubling = [11, 22, 44, 88, 176, 352]
    assert [p["value"] for p in probes[:6]] == doubling  # doubling from start
    assert [p["status"] for p in probes[:6]] == ["ok"] * 5 + ["oom"]
    assert probes[6:] == []  # 352 - 176 is within the granularity: nothing to bisect
    ok = {p["value"] for p in probes if p["status"] == "ok"}
    oom = {p["value"] for p in probes if p["status"] == "oom"}
    assert max(ok) < min(oom) <= max(ok) + 176
    # confirmed by a whole run: the largest that fit, or (should that one run out of memory over
    # a whole run) the next that fit below it
    confirmations = [(p["value"], p["status"]) for p in result["probes"] if p["full_length"]]
    assert confirmations[-1] == (found, "ok") and found in ok
    assert all(status == "oom" and size > found for size, status in confirmations[:-1])
    assert confirmations[0][0] == max(ok)
    for probe in result["probes"]:  # each probe a real run, its status in its own manifest
        manifest = json.loads((searched / probe["manifest"]).read_text())
        assert manifest["status"] == probe["status"]
        assert manifest["batch_size_resolved"] == probe["value"]
        log = (searched / probe["manifest"]).with_name("rank0.log").read_text()
        if probe["status"] == "oom":
            assert "can't allocate memory" in log
        else:
            steps = 3 if not probe["full_length"] else 1 + 2 + 2
            assert log.count(f"samples={probe['value']} ") == steps


def test_the_runs_train_at_the_size_found_and_the_tables_say_so(searched):
    found = json.loads((searched / f"results/maxbatch/{CELL}.json").read_text())["value"]
    manifest = json.loads((searched / f"results/runs/{CELL}/r1/manifest.json").read_text())
    assert manifest["batch_size_resolved"] == found
    command = manifest["tasks"][0]["command"]
    assert command[command.index("--batch-size") + 1] == str(found)
    runs = pd.read_csv(searched / "results/tables/runs.tsv", sep="\t").set_index("cell_id")
    cells = pd.read_csv(searched / "results/tables/cells.tsv", sep="\t").set_index("cell_id")
    assert runs.loc[CELL, "batch_size"] == "max" and runs.loc[CELL, "batch_size_resolved"] == found
    assert runs.loc[CELL, "status"] == "ok"
    assert runs.loc[CELL, "window_samples"] == 2 * found
    assert cells.loc[CELL, "batch_size_resolved"] == found and cells.loc[CELL, "status"] == "ok"


def test_the_search_is_cached_and_redone_only_when_the_cell_changes(searched, tmp_path):
    assert planned_jobs(searched, "--configfile", "config.yaml") == {}
    wider = yaml.safe_load((searched / "config.yaml").read_text())
    wider["cases"][0]["options"]["memory_limit_gb"] = 1.5
    (searched / "wider.yaml").write_text(yaml.safe_dump(wider))
    jobs = planned_jobs(searched, "--configfile", "wider.yaml")
    assert jobs["find_max_batch"] == [f"cell={CELL}"] and len(jobs["run_cell"]) == 1
    reported = yaml.safe_load((searched / "config.yaml").read_text())
    reported["report"]["title"] = "another title"
    (searched / "title.yaml").write_text(yaml.safe_dump(reported))
    assert "find_max_batch" not in planned_jobs(searched, "--configfile", "title.yaml")


def test_a_suite_without_max_cells_plans_no_search(tmp_path):
    shutil.copy(TINY_SUITE, tmp_path / "config.yaml")
    assert "find_max_batch" not in planned_jobs(tmp_path, "--configfile", "config.yaml")


# Wide & Deep's vocabulary, searched as an option (issue 17.2). Under a 2 GB address-space cap
# with 8-wide embeddings and Adam, 4,000,000 rows train (1.1 GB peak RSS) and 8,000,000 do not
# (measured); doubling from 1,000,000 meets both a factor 1.4 clear of the edge, and granularity
# 4,000,000 leaves nothing to bisect.
VOCAB_CELL = "pytorch.wide_deep.fp32.noxla.b64-vocab_size_max.1n1g"
VOCAB_SUITE = SUITE | {
    "cases": [
        {
            "framework": "pytorch",
            "model": "wide_deep",
            "batch_size": [64],
            "layouts": ["1n1g"],
            "options": {
                "deep_embedding_vec_size": 8,
                "hidden_units_num": 1,
                "hidden_size": 16,
                "threads": 1,
                "memory_limit_gb": 2,
            },
            "sweep": {"vocab_size": ["max"]},
            "max_search": {"start": 1000000, "ceiling": 64000000, "granularity": 4000000},
        }
    ],
}


def test_the_largest_value_of_an_option_is_found_by_real_oom_probes_and_trained_at(tmp_path):
    write_config(tmp_path, VOCAB_SUITE)
    snakemake(tmp_path, "--cores", "2", "--configfile", "config.yaml")
    result = json.loads((tmp_path / f"results/maxbatch/{VOCAB_CELL}.json").read_text())
    assert (result["status"], result["option"], result["value"]) == ("ok", "vocab_size", 4000000)
    probes = [(p["value"], p["status"]) for p in result["probes"]]
    assert probes == [
        (1000000, "ok"),
        (2000000, "ok"),
        (4000000, "ok"),
        (8000000, "oom"),
        (4000000, "ok"),  # the confirmation, as long as the cell's runs
    ]
    probe = json.loads((tmp_path / result["probes"][3]["manifest"]).read_text())
    assert probe["cell"]["cell_id"] == "pytorch.wide_deep.fp32.noxla.b64-vocab_size_8000000.1n1g"
    manifest = json.loads((tmp_path / f"results/runs/{VOCAB_CELL}/r1/manifest.json").read_text())
    assert manifest["options_resolved"] == {"vocab_size": 4000000}
    command = manifest["tasks"][0]["command"]
    assert command[command.index("--vocab-size") + 1] == "4000000"
    cells = pd.read_csv(tmp_path / "results/tables/cells.tsv", sep="\t").set_index("cell_id")
    assert cells.loc[VOCAB_CELL, "status"] == "ok"
    assert json.loads(cells.loc[VOCAB_CELL, "setting"]) == {"vocab_size": 4000000}
    runs = pd.read_csv(tmp_path / "results/tables/runs.tsv", sep="\t").set_index("cell_id")
    assert json.loads(runs.loc[VOCAB_CELL, "setting"]) == {"vocab_size": "max"}  # as planned


# A sweep of several values (issue 17.1) with a real OOM among them: the same cap and sizes as
# VOCAB_SUITE's search (4,000,000 rows train, 8,000,000 do not), here as two cells of their own.
SWEPT = "pytorch.wide_deep.fp32.noxla.b64-vocab_size_{}.1n1g"
SWEEP_SUITE = VOCAB_SUITE | {
    "cases": [
        {k: v for k, v in VOCAB_SUITE["cases"][0].items() if k != "max_search"}
        | {"sweep": {"vocab_size": [1000000, 8000000]}}
    ],
}


def test_a_swept_value_that_runs_out_of_memory_is_its_own_oom_cell_beside_the_ok_one(tmp_path):
    write_config(tmp_path, SWEEP_SUITE)
    snakemake(tmp_path, "--cores", "2", "--configfile", "config.yaml")
    cells = pd.read_csv(tmp_path / "results/tables/cells.tsv", sep="\t").set_index("cell_id")
    assert cells.loc[SWEPT.format(1000000), "status"] == "ok"
    assert cells.loc[SWEPT.format(8000000), "status"] == "oom"
    assert json.loads(cells.loc[SWEPT.format(8000000), "setting"]) == {"vocab_size": 8000000}
    runs = pd.read_csv(tmp_path / "results/tables/runs.tsv", sep="\t").set_index("cell_id")
    assert runs.loc[SWEPT.format(1000000), "status"] == "ok"
    assert runs.loc[SWEPT.format(8000000), "status"] == "oom"
    # the planned setting, so the runs table read as cells places each figure in its row
    assert json.loads(runs.loc[SWEPT.format(8000000), "setting"]) == {"vocab_size": 8000000}
    log = tmp_path / f"results/runs/{SWEPT.format(8000000)}/r1/rank0.log"
    assert "can't allocate memory" in log.read_text()
    # the report's W&D table: a row per vocabulary size, the OOM one as OOM, not as a figure
    report = (tmp_path / "results/report/report.en.md").read_text()
    rows = [line for line in report.splitlines() if line.startswith("| vocab_size=")]
    assert [row.split(" | ")[0] for row in rows] == [
        "| vocab_size=1,000,000",
        "| vocab_size=8,000,000",
    ]
    assert "OOM" not in rows[0] and rows[1].count("OOM") == 2  # latency and memory
    # changing one swept value plans only its own cell's runs; the measured ones stay
    changed = SWEEP_SUITE | {
        "cases": [SWEEP_SUITE["cases"][0] | {"sweep": {"vocab_size": [1000000, 2000000]}}]
    }
    write_config(tmp_path, changed)
    jobs = planned_jobs(tmp_path, "--configfile", "config.yaml")
    assert jobs["run_cell"] == [f"cell={SWEPT.format(2000000)}, repeat=1"]
