"""Harness figures for the embedded default (issue targets in brackets). Prints, never asserts.

python benchmarks/harness.py plan        # dry-run of a 5,000-job matrix vs a bare Snakefile [<= 1.2x]
python benchmarks/harness.py aggregate   # parse + aggregate + report of 5,000 synthetic runs [< 10 s]
python benchmarks/harness.py overhead    # harness overhead per run, local executor [< 3 s]
python benchmarks/harness.py suite       # the default suite end to end, as `make run` does [< 10 min]
python benchmarks/harness.py biglog      # one run's 200 MB rank log read into its row [>= 50 MB/s,
                                         # memory bounded whatever the log's size]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
BATCH_SIZES = list(
    range(1, 126)
)  # 125 batch sizes x 2 precisions x 4 layouts x 5 repeats = 5,000 runs

BARE = """
CELLS = [f"c{i}" for i in range(1000)]
rule all:
    input: "results/report.md"
rule run_cell:
    output: "results/runs/{cell}/r{repeat}/manifest.json"
    params: measure=lambda w: w.cell
    shell: "echo {params.measure} > {output}"
rule report:
    input: expand("results/runs/{cell}/r{repeat}/manifest.json", cell=CELLS, repeat=range(1, 6))
    output: "results/report.md"
    shell: "touch {output}"
"""
# The bare Snakefile with a run rule of dlperf's shape (an input function, a priority function, a
# log, a conda env, a params function): what Snakemake itself spends on those directives.
SHAPED = BARE.replace(
    '    output: "results/runs/{cell}/r{repeat}/manifest.json"',
    "    input: lambda w: []\n"
    '    output: "results/runs/{cell}/r{repeat}/manifest.json"\n'
    '    log: "results/logs/run_cell/{cell}/r{repeat}.log"\n'
    "    priority: lambda w: -int(w.repeat)\n"
    '    conda: "env.yaml"',
)
# The bare Snakefile with the Snakefile's own gc.freeze() (the objects alive at parse time left out
# of the collector's scans): what the same line buys Snakemake alone.
FROZEN = "import gc\ngc.freeze()\n" + BARE


def big_config() -> dict:
    return {
        "name": "plan-5000",
        "repeats": 5,
        "backend": "slurm",
        "cases": [
            {
                "framework": "pytorch",
                "model": "resnet50",
                "precision": ["fp32", "amp"],
                "batch_size": BATCH_SIZES,
                "layouts": ["1n1g", "1n8g", "2n8g", "4n8g"],
            },
        ],
    }


def timed(cmd: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - start


def plan(rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name, text in [("bare", BARE), ("shaped", SHAPED), ("frozen", FROZEN)]:
            (work / name).mkdir()
            (work / name / "Snakefile").write_text(text)
        (work / "shaped" / "env.yaml").write_text("dependencies: []\n")
        (work / "ours").mkdir()
        (work / "ours" / "big.yaml").write_text(yaml.safe_dump(big_config()))
        ours_cmd = [
            *SNAKEMAKE,
            "-s",
            str(ROOT / "Snakefile"),
            "-n",
            "--quiet",
            "rules",
            "--cores",
            "1",
            "--configfile",
            "big.yaml",
        ]
        bare_cmd = [*SNAKEMAKE, "-n", "--quiet", "rules", "--cores", "1"]
        ours, bare, shaped, frozen = [], [], [], []
        for _ in range(rounds):  # interleaved, so all see the same machine noise
            bare.append(timed(bare_cmd, work / "bare"))
            shaped.append(timed(bare_cmd, work / "shaped"))
            frozen.append(timed(bare_cmd, work / "frozen"))
            ours.append(timed(ours_cmd, work / "ours"))
    b, s, o = statistics.median(bare), statistics.median(shaped), statistics.median(ours)
    f = statistics.median(frozen)
    print(
        f"dry-run, 5,000 run jobs (+ tables, report): bare Snakefile {b:.2f} s, dlperf {o:.2f} s "
        f"(median of {rounds}); ratio {o / b:.2f}x [target <= 1.2x]; the bare Snakefile with a "
        f"run rule of dlperf's directives {s:.2f} s ({s / b:.2f}x): Snakemake's own share; the "
        f"bare Snakefile with dlperf's gc.freeze() {f:.2f} s: dlperf {o / f:.2f}x of it"
    )


def synthetic_results(root: Path, runs_wanted: int, steps: int) -> dict:
    """Manifests and rank logs shaped exactly like real runs, with jittered step times, that
    pass every check the tables make (each run's own adapter, every rank's log, the batch it
    trained, steps inside the task's run): the tables parse them all, as ok runs.

    DLPerf's shape: every built-in framework (the logs are the built-in format) x six (model,
    precision, batch size) groups x three layouts of at most two ranks (so each run has at most
    two rank logs, as the benchmark's earlier figures had); repeats as many as make `runs_wanted`.
    """
    import random

    from dlperf.adapters import REGISTRY
    from dlperf.adapters.builtin import BuiltinWorkload
    from dlperf.config import Suite, validate
    from dlperf.launch.measured import measure_of

    rng = random.Random(0)
    groups = [
        ("resnet50", "fp32", 128),
        ("resnet50", "amp", 256),
        ("bert_base", "fp32", 32),
        ("bert_base", "fp32", 48),
        ("bert_base", "amp", 64),
        ("bert_base", "amp", 96),
    ]
    layouts = ["1n1g", "1n2g", "2n1g"]
    builtin = [name for name, cls in REGISTRY.items() if issubclass(cls, BuiltinWorkload)]
    cases = [
        {
            "framework": fw,
            "model": model,
            "precision": [precision],
            "batch_size": [bsz],
            "layouts": layouts,
        }
        for model, precision, bsz in groups
        for fw in builtin
    ]
    cases = [c for c in cases if _accepted(c)]
    repeats = max(1, round(runs_wanted / (len(cases) * len(layouts))))
    config = {
        "name": "synthetic",
        "repeats": repeats,
        "window": {"warmup": 5, "measure": steps - 7},
        "backend": "slurm",
        "report": {"languages": ["en", "zh"]},
        "cases": cases,
    }
    suite = Suite(validate(config))
    for spec, repeat in suite.runs():
        cell = spec.cell
        run_dir = root / "results" / "runs" / cell.id / f"r{repeat}"
        run_dir.mkdir(parents=True)
        tasks = []
        batch = int(cell.batch_size)
        for rank in range(cell.layout.devices):  # at most two (the layouts above)
            began = 1.7e9 + rng.random()
            t = began
            lines = [f"dlperf-config model={cell.model}"]
            for step in range(1, steps + 1):
                d = 0.1 * (1 + 0.1 * rng.random())
                lines.append(
                    f"dlperf-step rank={rank} step={step} samples={batch} start={t:.6f} "
                    f"end={t + d:.6f} loss=1.0"
                )
                t += d
            (run_dir / f"rank{rank}.log").write_text("\n".join(lines) + "\n")
            node = rank // cell.layout.gpus_per_node
            tasks.append(
                {
                    "task": rank,
                    "log": f"rank{rank}.log",
                    "status": "ok",
                    "workload_wall_s": t - began + 0.5,
                    "started_at": began - 0.1,
                    "ended_at": t + 0.1,
                    "host": f"n{node + 1}",
                    "node_rank": node,
                }
            )
        manifest = {
            "schema_version": 1,
            "cell": cell.key(),
            "repeat": repeat,
            "status": "ok",
            "status_detail": "",
            "adapter": {"name": cell.framework},
            "measure": measure_of(spec, suite.config),  # the suite's own: no run is stale
            "backend": "slurm",
            "allocation": {},
            "job_id": "1",
            "tasks": tasks,
            "nodes": {f"n{n + 1}#node{n}": {"host": f"n{n + 1}"} for n in range(cell.layout.nodes)},
            "hosts": [f"n{n + 1}" for n in range(cell.layout.nodes)],
            "submitted_at": 1.7e9,
            "started_at": 1.7e9,
            "ended_at": 1.7e9 + 5,
            "noticed_at": 1.7e9 + 6,
        }
        (run_dir / "manifest.json").write_text(json.dumps(manifest))
    return suite.config


def _accepted(case: dict) -> bool:
    """Whether the case's adapter runs it as written (some refuse xla off, amp or a model)."""
    from dlperf.config import ConfigError, validate

    try:
        validate({"cases": [dict(case)]})
    except ConfigError:
        return False
    return True


def aggregate(runs_wanted: int) -> None:
    from dlperf.campaign import TABLES_READERS
    from dlperf.util import processes_for
    from dlperf.workflow import write_tables

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        config = synthetic_results(root, runs_wanted, 27)
        manifests = sorted((root / "results" / "runs").glob("*/r*/manifest.json"))
        workers = processes_for(TABLES_READERS)  # as the tables rule on this machine
        tdir = root / "results" / "tables"
        start = time.perf_counter()
        runs, cells = write_tables(
            config, manifests, config["repeats"], tdir / "steps.tsv.gz", tdir / "runs.tsv",
            tdir / "cells.tsv", root / "results" / "json", workers,
        )  # fmt: skip
        parsed = time.perf_counter()
        from dlperf.report.render import render_reports

        outputs = [
            root / "results" / "report" / f"report.{lang}.{ext}"
            for lang in ("en", "zh")
            for ext in ("md", "html")
        ]
        render_reports(
            config=config,
            cells_path=tdir / "cells.tsv",
            runs_path=tdir / "runs.tsv",
            outputs=outputs,
            workers=workers,
        )
        done = time.perf_counter()
    print(
        f"parse ({workers} processes) + aggregate of {len(manifests)} synthetic runs "
        f"({runs.status.value_counts().to_dict()}, {len(cells)} cells): "
        f"{parsed - start:.1f} s; report (en+zh, md+html, plots; a process per language): {done - parsed:.1f} s; "
        f"total {done - start:.1f} s [target < 10 s]"
    )


def overhead(repeats: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        config = yaml.safe_load((ROOT / "tests" / "data" / "tiny.yaml").read_text())
        config["cases"] = config["cases"][:1]
        config["repeats"] = repeats
        (work / "c.yaml").write_text(yaml.safe_dump(config))
        subprocess.run(
            [
                *SNAKEMAKE,
                "-s",
                str(ROOT / "Snakefile"),
                "--cores",
                "2",
                "results/tables/runs.tsv",
                "--configfile",
                "c.yaml",
            ],
            cwd=work,
            check=True,
            capture_output=True,
        )
        runs = pd.read_csv(work / "results" / "tables" / "runs.tsv", sep="\t")
    o = runs["harness_overhead_s"]
    print(
        f"harness overhead per run, local executor (submit->noticed minus workload process wall), "
        f"{len(o)} runs: median {o.median():.2f} s, max {o.max():.2f} s [target < 3 s]"
    )
    print(
        f"  workload process wall (imports, model build, all steps): median {runs['workload_wall_s'].median():.2f} s"
    )


def suite() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        shutil.copytree(ROOT / "config", work / "config")
        start = time.perf_counter()
        subprocess.run(
            [*SNAKEMAKE, "-s", str(ROOT / "Snakefile"), "--cores", "2"],
            cwd=work,
            check=True,
            capture_output=True,
        )
        took = time.perf_counter() - start
        runs = pd.read_csv(work / "results" / "tables" / "runs.tsv", sep="\t")
    print(
        f"default suite (config/config.yaml, {len(runs)} runs: {runs.status.value_counts().to_dict()}): "
        f"{took / 60:.1f} min [target < 10 min]"
    )


BIGLOG_READ = """
import resource, sys, time
from pathlib import Path
from dlperf.measure.runs import read_run
from dlperf.measure.stats import Window
manifest, warmup, measure = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
run = read_run(manifest, Window(warmup, measure))
took = time.perf_counter() - start
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(took, grown / 1024, run.row["status"], run.row.get("throughput_samples_per_s"))
"""


def biglog(log_mb: int) -> None:
    """One ok 1n1g run whose rank log is `log_mb` MB, read into its row in a fresh process: MB/s
    and how much the peak memory grew. Two shapes: step lines only (a long run, or a workload told
    to run far past the window), and a window's steps amid other output (a framework's warnings)."""
    for shape in ("steps", "noise"):
        _biglog(log_mb, shape)


def _biglog(log_mb: int, shape: str) -> None:
    from dlperf.launch.taskoutcome import log_fingerprint
    from dlperf.matrix import Cell

    cell = Cell.parse("pytorch.resnet50.fp32.noxla.b8.1n1g")
    step_line = "dlperf-step rank=0 step={} samples=8 start={:.6f} end={:.6f} loss=6.907755\n"
    noise = "W1124 14:00:00.000000 1234 warn.py:10] a framework's warning, repeated\n" * 1000
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "results" / "runs" / cell.id / "r1"
        run_dir.mkdir(parents=True)
        log = run_dir / "rank0.log"
        steps, t = 0, 1.7e9
        with open(log, "w") as f:
            f.write("dlperf-config model=resnet50\n")
            while f.tell() < log_mb * 1e6:
                lines = []
                for _ in range(10_000 if shape == "steps" else 10):
                    steps += 1
                    lines.append(step_line.format(steps, t, t + 0.1))
                    t += 0.1
                    if shape == "noise":
                        lines.append(noise)
                f.write("".join(lines))
            f.write("dlperf-memory rank=0 peak_rss_mb=812.4\n")
        manifest = {
            "schema_version": 1,
            "cell": cell.key(),
            "repeat": 1, "status": "ok", "status_detail": "",
            "adapter": {"name": "pytorch"},
            "measure": {"options": {}, "steps": steps, "device": "cpu"},
            "backend": "local", "allocation": {}, "job_id": "1",
            "tasks": [{"task": 0, "log": "rank0.log", "workload_wall_s": steps * 0.1,
                       "host": "n1", "node_rank": 0, **log_fingerprint(log)}],
            "nodes": {"n1#node0": {"host": "n1"}}, "hosts": ["n1"],
            "submitted_at": 1.7e9, "started_at": 1.7e9, "ended_at": t, "noticed_at": t,
        }  # fmt: skip
        (run_dir / "manifest.json").write_text(json.dumps(manifest))
        size_mb = log.stat().st_size / 1e6
        out = subprocess.run(
            [sys.executable, "-c", BIGLOG_READ, str(run_dir / "manifest.json"), "20", "100"],
            capture_output=True, text=True,
        )  # fmt: skip
        if out.returncode:
            sys.exit(out.stderr)
    took, grown_mb, status, figure = out.stdout.split()
    took, grown_mb = float(took), float(grown_mb)
    print(
        f"one run's {size_mb:.0f} MB rank log ({shape}: {steps:,} steps) read into its row: "
        f"{took:.1f} s, {size_mb / took:.0f} MB/s [target >= 50 MB/s]; peak memory grew "
        f"{grown_mb:.0f} MB ({grown_mb / size_mb:.2f}x the log) [bounded]; status {status}, "
        f"{float(figure):.1f} samples/s"
    )


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "what",
        nargs="*",
        default=["plan", "aggregate", "overhead"],
        choices=["plan", "aggregate", "overhead", "suite", "biglog"],
    )
    p.add_argument("--log-mb", type=int, default=200)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--runs", type=int, default=5000)
    args = p.parse_args()
    for what in args.what:
        {
            "plan": lambda: plan(args.rounds),
            "aggregate": lambda: aggregate(args.runs),
            "overhead": lambda: overhead(5),
            "suite": suite,
            "biglog": lambda: biglog(args.log_mb),
        }[what]()


if __name__ == "__main__":
    main()
