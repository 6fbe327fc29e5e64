"""`dlperf plan` figures (issue targets in brackets). Prints, never asserts.

python benchmarks/plan.py   # DLPerf v1.0 on 4 nodes x 8 GPUs [< 10 s]; a 5,000-run matrix (also 16x8)

Each case is planned from no earlier results (every run at the time limit) and from a synthetic
runs table (measured durations for some cells, the rest scaled). The planned makespan is shown as
a ratio to the sequential bound (every run one after another) and to the lower bound.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from dlperf.config import Suite, load, validate  # noqa: E402
from dlperf.plan.plan import make_plan  # noqa: E402


def big_config() -> dict:
    """125 batch sizes x 2 precisions x 4 layouts x 5 repeats = 5,000 runs."""
    return validate(
        {
            "suite": "plan-5000",
            "repeats": 5,
            "cases": [
                {
                    "framework": "pytorch",
                    "model": "resnet50",
                    "precision": ["fp32", "amp"],
                    "batch_size": list(range(1, 126)),
                    "layouts": ["1n1g", "1n8g", "2n8g", "4n8g"],
                }
            ],
        }
    )


def synthetic_runs(config: dict, results: Path, share: float, seed: int = 0) -> None:
    """A runs table with a `share` of the cells measured: start-up 60-120 s, work by batch."""
    rng = random.Random(seed)
    rows = []
    for spec in Suite(config).cell_specs():
        if rng.random() > share:
            continue
        cell = spec.cell
        batch = cell.batch_size if isinstance(cell.batch_size, int) else 128
        work_s = 120 + 2.5 * batch * (0.6 if cell.precision == "amp" else 1.0)
        work_s *= 1 + 0.05 * cell.layout.nodes
        for _ in range(Suite(config).repeats):
            startup_s = rng.uniform(60, 120)
            wall_s = startup_s + work_s * rng.uniform(0.95, 1.05)
            rows.append(
                {
                    "cell_id": spec.id,
                    "status": "ok",
                    "submitted_at": 1.7e9,
                    "noticed_at": 1.7e9 + wall_s,
                    "workload_wall_s": wall_s - startup_s,
                }
            )
    path = results / "tables" / "runs.tsv"
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(path, sep="\t", index=False)


def measure(name: str, config: dict, results: Path, exclusive: bool, nodes: int = 4) -> dict:
    start = time.perf_counter()
    plan = make_plan(config, results, nodes=nodes, gpus_per_node=8, exclusive=exclusive)
    plan_s = time.perf_counter() - start
    bounds, solver = plan.schedule.bounds, plan.schedule.solver
    sources = pd.Series([c.duration_source for c in plan.cells]).value_counts().to_dict()
    return {
        "case": name,
        "site": f"{nodes}x8 " + ("excl" if exclusive else "shared"),
        "runs": len(plan.schedule.placements),
        "sources": ",".join(f"{k}={v}" for k, v in sorted(sources.items())),
        "plan_s": round(plan_s, 2),
        "makespan_h": round(plan.makespan_s / 3600, 2),
        "vs_sequential": round(plan.makespan_s / bounds.sequential_s, 3),
        "vs_lower": round(plan.makespan_s / bounds.lower_s, 3),
        "solver": f"{solver.status} ({solver.groups}g x {solver.configurations}c)",
        "order": solver.order,
    }


def main() -> None:
    argparse.ArgumentParser(description=__doc__).parse_args()
    v1 = load(ROOT / "config" / "dlperf_v1.yaml")
    big = big_config()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, config, share in [("dlperf_v1", v1, 0.5), ("synthetic-5000", big, 0.3)]:
            measured = Path(tmp) / label
            synthetic_runs(config, measured, share)
            for exclusive in (False, True):
                rows.append(measure(f"{label}, no results", config, Path(tmp) / "none", exclusive))
                rows.append(measure(f"{label}, runs.tsv", config, measured, exclusive))
        rows.append(
            measure("synthetic-5000, runs.tsv", big, Path(tmp) / "synthetic-5000", False, 16)
        )
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(pd.DataFrame(rows).to_string(index=False))
    print("targets: plan_s < 10 for dlperf_v1 (1,176 runs); vs_lower = planned / lower bound")


if __name__ == "__main__":
    main()
