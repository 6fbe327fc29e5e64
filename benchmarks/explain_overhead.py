"""What the explaining measurements cost a run: the FLOP count, the GEMM calibration, the all-reduce
probe and the NVML sampling (dlperf.efficiency), on the default suite's cells.

python benchmarks/explain_overhead.py [--repeats 3]

Runs the PyTorch workload as the default suite runs it (config/config.yaml: ResNet-50 at 32x32 and
the narrow BERT, batch 8, 50 steps, at 1 and 2 processes), alternating with and without
`--no-explain`, and prints the fastest wall time of each (contention only ever adds time) and the
difference as a share of the run (target: under 5%). Both sides are measured in the same
invocation, interleaved, since this machine's speed drifts. Prints, never asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


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


def wall_time(cmd: list[str], ranks: int) -> float:
    """Seconds from launching every rank to the last one exiting (as the harness sees a run)."""
    port = free_port()
    start = time.perf_counter()
    procs = [
        subprocess.Popen(
            cmd,
            stdout=subprocess.DEVNULL,
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
    if any(codes):
        raise SystemExit(f"{' '.join(cmd)} failed: exit codes {codes}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(
        f"{'case':<34} {'ranks':>5} {'with (s)':>9} {'without (s)':>11} {'cost (s)':>9} {'share':>7}"
    )
    for case in default_cases():
        for ranks in (1, 2):
            times: dict[bool, list[float]] = {True: [], False: []}
            for _ in range(args.repeats):
                for explain in (True, False):
                    times[explain].append(wall_time(command(case, explain), ranks))
            # the fastest of each: contention on a shared machine only ever adds time
            on, off = min(times[True]), min(times[False])
            name = f"{case['model']} fp32 b{case['batch_size'][0]} x{case['steps']} steps"
            print(
                f"{name:<34} {ranks:>5} {on:>9.2f} {off:>11.2f} {on - off:>9.2f} {(on - off) / on:>7.1%}"
            )


if __name__ == "__main__":
    main()
