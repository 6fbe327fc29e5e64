"""What every built-in workload shares: its command line (built by BuiltinWorkload.command), its
start-up, and the writer of the `dlperf-*` lines the built-in parser reads (dlperf.logline)."""

from __future__ import annotations

import argparse
import os
import resource

from dlperf.logline import emit as log  # noqa: F401  (the workloads' one writer of dlperf lines)


def workload_parser(
    description: str, precision_help: str, model_config_help: str
) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--model", choices=["resnet50", "bert_base"], required=True)
    p.add_argument("--batch-size", type=int, required=True, help="per device")
    p.add_argument("--precision", choices=["fp32", "amp"], default="fp32", help=precision_help)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--num-classes", type=int, default=1000)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--max-predictions", type=int, default=20)
    p.add_argument("--clip-grad-norm", type=float, default=1.0, help="BERT; 0 turns clipping off")
    p.add_argument("--threads", type=int, default=0, help="CPU threads per rank; 0: cores / ranks")
    p.add_argument("--memory-limit-gb", type=float, default=0, help="cap address space (CPU runs)")
    p.add_argument("--model-config", default="{}", help=model_config_help)
    return p


def start_rank(args: argparse.Namespace) -> tuple[int, int, int, int]:
    """Cap the address space if asked (a CPU run's real OOM), and read this rank's place from the
    environment torchrun/submitit/srun set: (rank, world size, local rank, local world size)."""
    if args.memory_limit_gb:
        limit = int(args.memory_limit_gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    env = os.environ
    return (
        int(env.get("RANK", 0)),
        int(env.get("WORLD_SIZE", 1)),
        int(env.get("LOCAL_RANK", 0)),
        int(env.get("LOCAL_WORLD_SIZE", 1)),
    )
