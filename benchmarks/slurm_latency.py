"""Latency and footprint of the Slurm path, on the running test cluster. Prints, never asserts.

    scripts/slurm-test-cluster.sh start && export SLURM_CONF=$PWD/.slurm-test/etc/slurm.conf
    python benchmarks/slurm_latency.py                 # the tiny suite (config/test-slurm.yaml)
    python benchmarks/slurm_latency.py --cores 1       # one run at a time: latencies without load

Runs `snakemake --profile slurm` (the repository's profile, copied verbatim) in a scratch
directory and reads every run's manifest. Per job (issue targets in brackets):
  submit->start    first task started on its node minus submission (Slurm scheduling, srun,
                   submitit unpickling; no target: it is the cluster's)
  end->noticed     submitter noticed the outcome minus the last task's end [within 5 s]
  overhead         noticed minus submitted minus the workload's wall time [under 5 s]
and the peak RSS (VmHWM, sampled from /proc) of each waiting submitter, `dlperf run-cell`
[under 150 MB].
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "config" / "test-slurm.yaml"
TARGETS = {"end_to_noticed_s": 5.0, "overhead_s": 5.0, "submitter_peak_rss_mb": 150.0}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2, help="repeats per cell (default 2)")
    parser.add_argument("--layouts", default="1n1g,1n2g,2n1g", help="comma-separated layouts")
    parser.add_argument("--cores", type=int, help="concurrent submitters (default: the profile's)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = parser.parse_args()

    problem = cluster_problem()
    if problem:
        print(
            f"slurm_latency: {problem}\n  scripts/slurm-test-cluster.sh start && "
            f"export SLURM_CONF={ROOT}/.slurm-test/etc/slurm.conf",
            file=sys.stderr,
        )
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="dlperf-slurm-latency-"))
    try:
        prepare(workdir, args.repeats, args.layouts.split(","))
        wall, rss = run_workflow(workdir, args.cores)
        report(workdir, wall, rss)
    finally:
        if args.keep:
            print(f"\nkept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


def cluster_problem() -> str | None:
    if not os.environ.get("SLURM_CONF"):
        default = ROOT / ".slurm-test" / "etc" / "slurm.conf"
        if not default.exists():
            return "SLURM_CONF is not set and no test cluster config exists"
        os.environ["SLURM_CONF"] = str(default)
    try:
        ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"scontrol ping failed: {err}"
    return (
        None
        if "is UP" in ping.stdout
        else f"the Slurm controller does not answer: {ping.stdout.strip()}"
    )


def prepare(workdir: Path, repeats: int, layouts: list[str]) -> None:
    shutil.copytree(ROOT / "slurm", workdir / "slurm")
    config = yaml.safe_load(SUITE.read_text())
    config["repeats"] = repeats
    config["cases"][0]["layouts"] = layouts
    (workdir / "config").mkdir()
    (workdir / "config" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def run_workflow(workdir: Path, cores: int | None) -> tuple[float, dict[int, float]]:
    """Run the workflow (tables only) while sampling the submitters' peak RSS; return wall, RSS."""
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "-s",
        str(ROOT / "Snakefile"),
        "--profile",
        "slurm",
        "results/tables/cells.tsv",
    ]
    if cores:
        cmd += ["--cores", str(cores)]
    peak: dict[int, float] = {}
    done = threading.Event()
    sampler = threading.Thread(target=sample_rss, args=(workdir, peak, done), daemon=True)
    start = time.time()
    sampler.start()
    with open(workdir / "snakemake.out", "w") as out:
        proc = subprocess.run(cmd, cwd=workdir, stdout=out, stderr=subprocess.STDOUT, check=False)
    wall = time.time() - start
    done.set()
    sampler.join()
    if proc.returncode != 0:
        tail = (workdir / "snakemake.out").read_text()[-3000:]
        raise SystemExit(f"snakemake failed ({proc.returncode}):\n{tail}")
    return wall, peak


def sample_rss(workdir: Path, peak: dict[int, float], done: threading.Event) -> None:
    """VmHWM (peak resident set) of every `dlperf run-cell` process working in `workdir`."""
    target = str(workdir.resolve())
    while not done.is_set():
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes().split(b"\0")
                if b"run-cell" not in cmdline or b"dlperf" not in cmdline:
                    continue
                if os.readlink(entry / "cwd") != target:
                    continue
                for line in (entry / "status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        mb = int(line.split()[1]) / 1024
                        peak[int(entry.name)] = max(mb, peak.get(int(entry.name), 0.0))
            except OSError:
                continue  # the process ended meanwhile
        time.sleep(0.2)


def report(workdir: Path, wall: float, rss: dict[int, float]) -> None:
    rows = []
    for path in sorted((workdir / "results" / "runs").glob("*/r*/manifest.json")):
        m: dict[str, Any] = json.loads(path.read_text())
        workload = max((t.get("workload_wall_s") or 0.0) for t in m["tasks"]) if m["tasks"] else 0.0
        rows.append(
            {
                "run": f"{m['cell']['layout']}/r{m['repeat']}",
                "job": m["job_id"],
                "status": m["status"],
                "nodes": ",".join(m.get("node_names", m["hosts"])),
                "submit_to_start_s": m["started_at"] - m["submitted_at"],
                "end_to_noticed_s": m["noticed_at"] - m["ended_at"],
                "workload_s": workload,
                "overhead_s": m["noticed_at"] - m["submitted_at"] - workload,
            }
        )
    print(f"{len(rows)} runs on Slurm in {wall:.1f} s (snakemake wall time, tables included)\n")
    header = (
        f"{'run':<10} {'job':>5} {'status':<8} {'nodes':<12} {'submit->start':>13} "
        f"{'end->noticed':>12} {'workload':>9} {'overhead':>9}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['run']:<10} {r['job']:>5} {r['status']:<8} {r['nodes']:<12} "
            f"{r['submit_to_start_s']:>12.2f}s {r['end_to_noticed_s']:>11.2f}s "
            f"{r['workload_s']:>8.2f}s {r['overhead_s']:>8.2f}s"
        )
    print()
    summary("submit->start", [r["submit_to_start_s"] for r in rows], None)
    summary("end->noticed", [r["end_to_noticed_s"] for r in rows], TARGETS["end_to_noticed_s"])
    summary("harness overhead per run", [r["overhead_s"] for r in rows], TARGETS["overhead_s"])
    summary(
        "submitter peak RSS",
        list(rss.values()),
        TARGETS["submitter_peak_rss_mb"],
        unit=" MB",
        note=f"{len(rss)} run-cell processes sampled",
    )


def summary(
    name: str, values: list[float], target: float | None, unit: str = " s", note: str = ""
) -> None:
    if not values:
        print(f"{name}: no samples")
        return
    worst = max(values)
    verdict = (
        ""
        if target is None
        else (f"  [target < {target:g}{unit}: {'met' if worst < target else 'MISSED'}]")
    )
    extra = f" ({note})" if note else ""
    print(
        f"{name:<26} median {statistics.median(values):7.2f}{unit}  max {worst:7.2f}{unit}{verdict}{extra}"
    )


if __name__ == "__main__":
    sys.exit(main())
