"""Where BERT-base AMP's step time goes on one GPU: host (Python, kernel launches) or device.

Trains transformers' BertForPreTraining (AMP fp16, grad scaler, fused AdamW, clipping at 1.0: the
built-in workload's step) in one process, variant after variant, and prints per variant the
samples/s, the host's CPU time per step and the device's time per step (CUDA events around the
window). The CPU time includes the CUDA driver's spin-wait inside synchronisations, so it is an
upper bound of the host's work, not a proof that the host is the bottleneck: torch.profiler's
CPU and CUDA self times say that. Ratios are measured in this one run.

    python benchmarks/gpu_bert_overhead.py [--batch-size 64] [--steps 30]
"""

from __future__ import annotations

import argparse
import json
import time

import torch
from torch import nn
from transformers import BertConfig, BertForPreTraining


def batch_of(b: int, s: int, vocab: int, device: torch.device) -> dict[str, torch.Tensor]:
    ids = torch.randint(0, vocab, (b, s), device=device)
    labels = torch.full((b, s), -100, device=device)
    labels[:, :20] = ids[:, :20]
    return {
        "input_ids": ids,
        "token_type_ids": torch.zeros(b, s, dtype=torch.long, device=device),
        "attention_mask": torch.ones(b, s, dtype=torch.long, device=device),
        "labels": labels,
        "next_sentence_label": torch.randint(0, 2, (b,), device=device),
    }


def measure(name: str, args: argparse.Namespace, compile_mode: str | None, sync: bool) -> dict:
    device = torch.device("cuda")
    torch.manual_seed(0)
    config = BertConfig()
    model = BertForPreTraining(config).to(device)
    step_model = torch.compile(model, mode=compile_mode) if compile_mode else model
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    scaler = torch.amp.GradScaler("cuda")
    batch = batch_of(args.batch_size, 128, config.vocab_size, device)

    def step() -> torch.Tensor:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = step_model(**batch).loss
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        return loss

    warm = time.perf_counter()
    for _ in range(args.warmup):
        step().item()
    warm_s = time.perf_counter() - warm
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    start.record()
    for _ in range(args.steps):
        loss = step()
        if sync:
            loss.item()
    end.record()
    end.synchronize()
    wall = time.perf_counter() - wall0
    cpu = time.process_time() - cpu0
    device_s = start.elapsed_time(end) / 1000
    result = {
        "variant": name,
        "batch_size": args.batch_size,
        "samples_per_s": round(args.batch_size * args.steps / device_s, 1),
        "device_ms_per_step": round(1000 * device_s / args.steps, 2),
        "host_cpu_ms_per_step": round(1000 * cpu / args.steps, 2),
        "wall_ms_per_step": round(1000 * wall / args.steps, 2),
        "warmup_s": round(warm_s, 1),
    }
    print(json.dumps(result), flush=True)
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=8)
    p.add_argument("--variants", default="eager,eager_nosync,compile,compile_cudagraphs")
    args = p.parse_args()
    variants = {
        "eager": (None, True),
        "eager_nosync": (None, False),
        "compile": ("default", True),
        "compile_cudagraphs": ("reduce-overhead", True),
    }
    results = []
    for name in args.variants.split(","):
        results.append(measure(name, args, *variants[name]))
        torch.cuda.empty_cache()
    base = results[0]["samples_per_s"]
    for r in results:
        print(
            f"{r['variant']:>20}: {r['samples_per_s']:8.1f} samples/s ({r['samples_per_s'] / base:.2f}x), "
            f"device {r['device_ms_per_step']} ms, host CPU {r['host_cpu_ms_per_step']} ms per step"
        )


if __name__ == "__main__":
    main()
