"""What the explaining measurements cost a run: the FLOP count, the GEMM calibration, the all-reduce
probe and the NVML sampling (dlperf.measure.efficiency), on the default suite's cells.

python benchmarks/explain_overhead.py [--repeats 5]

Runs the PyTorch workload as the default suite runs it (config/config.yaml: ResNet-50 at 32x32 and
the narrow BERT, batch 8, 50 steps, at 1 and 2 processes), alternating with and without
`--no-explain`. Two figures of the cost, as shares of the median run without (target: under 5%):
- timed: the seconds the count, the calibration and the probe state on their own lines (rank 0;
  the other ranks wait for it), the runs table's `explain_s`;
- set-up: the paired difference (median) of launch-to-first-step, with and without; on this
  machine it is as noisy as the cost is small.
During the steps only the NVML sampler runs, on GPUs; on a CPU the steps' difference is the
machine's drift alone (printed beside, to show its size). Prints, never asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from statistics import median

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from dlperf.logline import parse_line  # noqa: E402


def default_cases() -> list[dict]:
    suite = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    steps = suite["window"]["warmup"] + suite["window"]["measure"]
    return [case | {"steps": steps} for case in suite["cases"]]


def command(case: dict, explain: bool) -> list[str]:
    options = case.get("options", {})
    flags = [
        "--model", case["model"], "--batch-size", str(case["batch_size"][0]),
        "--steps", str(case["steps"]), "--device", "cpu",
    ]  # fmt: skip
    for key in ("image_size", "num_classes", "seq_len", "max_predictions"):
        if key in options:
            flags += [f"--{key.replace('_', '-')}", str(options[key])]
    if "model_config" in options:
        flags += ["--model-config", json.dumps(options["model_config"])]
    return [sys.executable, "-m", "dlperf.workloads.torch_train", *flags] + (
        [] if explain else ["--no-explain"]
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Timing:
    setup_s: float  # launch to rank 0's first step
    steps_s: float  # rank 0's first step start to its last step end
    wall_s: float  # launch to the last rank's exit
    explain_s: float  # the seconds rank 0's flops, peak and comm lines state they took


def timed_run(cmd: list[str], ranks: int) -> Timing:
    """Launch every rank as the harness does; time it by rank 0's step lines and the exits."""
    port = free_port()
    launched = time.time()
    with tempfile.TemporaryFile("w+") as out:
        procs = [
            subprocess.Popen(
                cmd,
                stdout=out if r == 0 else subprocess.DEVNULL,
                env=os.environ
                | {
                    "RANK": str(r),
                    "WORLD_SIZE": str(ranks),
                    "LOCAL_RANK": str(r),
                    "LOCAL_WORLD_SIZE": str(ranks),
                    "MASTER_ADDR": "127.0.0.1",
                    "MASTER_PORT": str(port),
                },  # fmt: skip
            )
            for r in range(ranks)
        ]
        codes = [p.wait() for p in procs]
        ended = time.time()
        if any(codes):
            raise SystemExit(f"{' '.join(cmd)} failed: exit codes {codes}")
        out.seek(0)
        lines = [p for p in map(parse_line, out) if p]
    steps = [fields for kind, fields in lines if kind == "step"]
    explain = sum(float(f.get("seconds", 0)) for k, f in lines if k in ("flops", "peak", "comm"))
    first, last = float(steps[0]["start"]), float(steps[-1]["end"])
    return Timing(first - launched, last - first, ended - launched, explain)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(
        f"{'case':<32} {'ranks':>5} {'set-up with / without, cost (s), share':>39}  "
        f"{'steps with / without, difference (s)':>36}  {'run (s)':>7}  {'timed (s), share':>16}"
    )
    for case in default_cases():
        for ranks in (1, 2):
            pairs: list[tuple[Timing, Timing]] = []
            for _ in range(args.repeats):  # interleaved: both sides see the same drift
                pairs.append(
                    (timed_run(command(case, True), ranks), timed_run(command(case, False), ranks))
                )
            on = [p[0] for p in pairs]
            off = [p[1] for p in pairs]
            setup_cost = median(a.setup_s - b.setup_s for a, b in pairs)
            steps_diff = median(a.steps_s - b.steps_s for a, b in pairs)
            run = median(b.wall_s for b in off)
            timed = median(a.explain_s for a in on)
            name = f"{case['model']} fp32 b{case['batch_size'][0]} x{case['steps']} steps"
            print(
                f"{name:<32} {ranks:>5} "
                f"{median(t.setup_s for t in on):>8.2f} / {median(t.setup_s for t in off):<6.2f} "
                f"{setup_cost:>7.2f} {setup_cost / run:>6.1%}  "
                f"{median(t.steps_s for t in on):>8.2f} / {median(t.steps_s for t in off):<6.2f} "
                f"{steps_diff:>+7.2f}  {run:>7.2f}  {timed:>6.2f} {timed / run:>6.1%}"
            )


if __name__ == "__main__":
    main()
