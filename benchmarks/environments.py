"""Per framework: its environment's set-up time and the harness overhead of one of its runs.

python benchmarks/environments.py [tensorflow paddlepaddle ...]   # default: every built-in one

Set-up is timed three ways, each in a fresh folder: `cold` (an empty uv download cache: what a
fresh machine pays), `warm` (uv's cache filled: a pin changed elsewhere, or another node) and
`cached` (the environment exists: every later run). The overhead is the local executor's submit
to noticed minus the workload process's wall time, over 3 tiny runs of the framework's BERT (the
environment is ready by then, so its build is not in it). Prints, never asserts.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

from dlperf import environments
from dlperf.adapters import REGISTRY

ROOT = Path(__file__).resolve().parents[1]
TINY_BERT = {
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
}


def built_in_frameworks() -> list[str]:
    return [name for name, cls in REGISTRY.items() if getattr(cls, "requirements", None)]


def setup_times(framework: str, work: Path) -> dict[str, float]:
    pins = ROOT / REGISTRY[framework].requirements  # type: ignore[attr-defined]
    times = {}
    with tempfile.TemporaryDirectory() as uv_cache:
        for kind in ("cold", "warm"):
            env = environments.environment_for(pins, work / kind)
            environ = {"UV_CACHE_DIR": uv_cache}
            start = time.perf_counter()
            with _environ(environ):
                environments.ensure(env)
            times[kind] = time.perf_counter() - start
    start = time.perf_counter()
    environments.ensure(environments.environment_for(pins, work / "warm"))
    times["cached"] = time.perf_counter() - start
    times["size_mb"] = _size_mb(environments.environment_for(pins, work / "warm").root)
    return times


class _environ:
    def __init__(self, values: dict[str, str]) -> None:
        self.values, self.saved = values, {}  # type: ignore[var-annotated]

    def __enter__(self) -> None:
        import os

        self.saved = {k: os.environ.get(k) for k in self.values}
        os.environ.update(self.values)

    def __exit__(self, *exc: object) -> None:
        import os

        for key, value in self.saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _size_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def overhead(framework: str, work: Path) -> pd.Series:
    xla = framework in ("jax",)  # JAX has only the compiled step
    suite = {
        "name": f"overhead-{framework}",
        "repeats": 3,
        "window": {"warmup": 2, "measure": 4},
        "device": "cpu",
        "site": {"environments": {"root": str(work / "warm")}},
        "cases": [
            {
                "framework": framework,
                "model": "bert_base",
                "xla": [xla],
                "batch_size": [2],
                "layouts": ["1n1g"],
                "options": TINY_BERT,
            }
        ],
    }
    (work / "suite.yaml").write_text(yaml.safe_dump(suite))
    subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--cores", "2",
         "results/tables/runs.tsv", "--config", "suite=suite.yaml"],
        cwd=work, check=True, capture_output=True,
    )  # fmt: skip
    runs = pd.read_csv(work / "results" / "tables" / "runs.tsv", sep="\t")
    return runs.set_index("repeat")[["status", "harness_overhead_s", "workload_wall_s"]]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("frameworks", nargs="*", default=built_in_frameworks())
    args = p.parse_args()
    for framework in args.frameworks:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            t = setup_times(framework, work)
            runs = overhead(framework, work)
        ok = runs[runs.status == "ok"]
        print(
            f"{framework}: environment set-up cold {t['cold']:.1f} s, warm {t['warm']:.1f} s, "
            f"cached {t['cached'] * 1000:.1f} ms ({t['size_mb']:.0f} MB); harness overhead per "
            f"run median {ok.harness_overhead_s.median():.2f} s, max "
            f"{ok.harness_overhead_s.max():.2f} s over {len(ok)} ok runs "
            f"(workload process {ok.workload_wall_s.median():.1f} s) [target < 3 s]"
        )


if __name__ == "__main__":
    main()
