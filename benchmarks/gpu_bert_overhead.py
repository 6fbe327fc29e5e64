"""BERT-base AMP on one GPU, change by change: what each step towards a higher MFU buys.

Trains transformers' BertForPreTraining (seq 128, fused AdamW, clipping at 1.0: the built-in
workload's step) in one process, variant after variant, and prints per variant the samples/s,
its ratio to the first variant (all measured in this one run), the MFU, the device's and the
host's time per step and the peak memory. The variants, in order:

    all_tokens      the masked-LM head on every token (transformers' own loss; the workload before)
    masked          the head on the 20 masked positions (dlperf.workloads.torch_models.bert.Pretraining)
    masked_attn_eager  the same with transformers' eager attention instead of SDPA
    masked_bf16     bf16 autocast, no grad scaler (no unscale and no inf check)
    masked_nosync   no loss.item() per step (the host runs ahead of the device)
    compile         torch.compile, default mode (the workload's xla column)
    compile_cudagraphs  torch.compile mode="reduce-overhead": the step replayed as CUDA graphs
    b256, b256_compile, b256_compile_cudagraphs  the same at batch 256
    max_autotune    torch.compile mode="max-autotune" at batch 256 (minutes of compiling)
    b256_bf16_cudagraphs, b512_compile_cudagraphs, b512_bf16_cudagraphs  CUDA graphs with bf16
                    (no grad scaler) and at batch 512

MFU = samples/s x FLOPs per sample (counted by FlopCounterMode on that variant's own model and
head: forward + backward products) / the datasheet's dense fp16 (bf16) peak (dlperf.peaks).
Time per step: CUDA events around the measured steps (device), process CPU time (host; includes
the driver's spin-wait in syncs, so an upper bound of the host's work). A variant that would not
end inside `--budget-s` is skipped and named.

    python benchmarks/gpu_bert_overhead.py [--steps 30] [--budget-s 300] [--variants a,b]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from transformers import BertConfig, BertForPreTraining

from dlperf import peaks
from dlperf.workloads.torch_models.bert import Pretraining


@dataclass(frozen=True)
class Variant:
    name: str
    batch: int = 64
    head: str = "masked"  # or all_tokens
    compile_mode: str | None = None
    dtype: torch.dtype = torch.float16
    attention: str = "sdpa"
    sync: bool = True

    def cost_s(self) -> float:  # a guess for the budget: compiling dominates
        return {None: 15.0, "max-autotune": 240.0}.get(self.compile_mode, 75.0)


VARIANTS = [
    Variant("all_tokens", head="all_tokens"),
    Variant("masked"),
    Variant("masked_attn_eager", attention="eager"),
    Variant("masked_bf16", dtype=torch.bfloat16),
    Variant("masked_nosync", sync=False),
    Variant("compile", compile_mode="default"),
    Variant("compile_cudagraphs", compile_mode="reduce-overhead"),
    Variant("b256", batch=256),
    Variant("b256_compile", batch=256, compile_mode="default"),
    Variant("b256_compile_cudagraphs", batch=256, compile_mode="reduce-overhead"),
    Variant("max_autotune", batch=256, compile_mode="max-autotune"),
    Variant(
        "b256_bf16_cudagraphs", batch=256, compile_mode="reduce-overhead", dtype=torch.bfloat16
    ),
    Variant("b512_compile_cudagraphs", batch=512, compile_mode="reduce-overhead"),
    Variant(
        "b512_bf16_cudagraphs", batch=512, compile_mode="reduce-overhead", dtype=torch.bfloat16
    ),
]


def batch_of(v: Variant, vocab: int, device: torch.device) -> dict[str, torch.Tensor]:
    """The workload's batch: 20 masked positions per sequence (labels -100 elsewhere for the
    all-token head)."""
    g = torch.Generator().manual_seed(0)
    b, s = v.batch, 128
    ids = torch.randint(0, vocab, (b, s), generator=g)
    positions = torch.rand(b, s, generator=g).argsort(dim=1)[:, :20]
    common = {
        "input_ids": ids,
        "token_type_ids": (torch.arange(s) >= s // 2).long().expand(b, s).contiguous(),
        "attention_mask": torch.ones(b, s, dtype=torch.long),
        "next_sentence_label": torch.randint(0, 2, (b,), generator=g),
    }
    if v.head == "all_tokens":
        labels = torch.full((b, s), -100).scatter_(1, positions, ids.gather(1, positions))
        batch = common | {"labels": labels}
    else:
        batch = common | {"mlm_positions": positions, "mlm_labels": ids.gather(1, positions)}
    return {k: t.to(device) for k, t in batch.items()}


def loss_function(v: Variant, model: nn.Module) -> Callable[..., torch.Tensor]:
    if v.head == "all_tokens":
        return lambda **batch: model(**batch).loss
    return model


def counted_flops_per_sample(v: Variant, device: torch.device) -> float:
    from torch.utils.flop_counter import FlopCounterMode

    model = build(v, device)
    few = {k: t[:2] for k, t in batch_of(v, model.config.vocab_size, device).items()}
    counter = FlopCounterMode(display=False)
    with counter, torch.autocast("cuda", dtype=v.dtype):
        loss_function(v, model)(**few).backward()
    return float(counter.get_total_flops()) / 2


def build(v: Variant, device: torch.device) -> nn.Module:
    torch.manual_seed(0)
    model = BertForPreTraining(BertConfig(attn_implementation=v.attention))
    return (model if v.head == "all_tokens" else Pretraining(model)).to(device)


def measure(v: Variant, steps: int, warmup: int, peak: float | None) -> dict[str, Any]:
    device = torch.device("cuda")
    per_sample = counted_flops_per_sample(v, device)
    model = build(v, device)
    step_model = torch.compile(model, mode=v.compile_mode) if v.compile_mode else model
    loss_of = loss_function(v, step_model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, fused=True)
    scaler = torch.amp.GradScaler("cuda", enabled=v.dtype == torch.float16)
    batch = batch_of(v, model.config.vocab_size, device)

    def step() -> torch.Tensor:
        with torch.autocast("cuda", dtype=v.dtype):
            loss = loss_of(**batch)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        return loss

    torch.cuda.reset_peak_memory_stats()
    warm = time.perf_counter()
    for _ in range(warmup):
        step().item()
    warm_s = time.perf_counter() - warm
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    cpu0 = time.process_time()
    start.record()
    for _ in range(steps):
        loss = step()
        if v.sync:
            loss.item()
    end.record()
    end.synchronize()
    cpu = time.process_time() - cpu0
    device_s = start.elapsed_time(end) / 1000
    samples_per_s = v.batch * steps / device_s
    return {
        "variant": v.name,
        "batch_size": v.batch,
        "samples_per_s": round(samples_per_s, 1),
        "flops_per_sample": per_sample,
        "mfu_percent": round(100 * peaks.mfu(per_sample, samples_per_s, peak), 2),
        "device_ms_per_step": round(1000 * device_s / steps, 2),
        "host_cpu_ms_per_step": round(1000 * cpu / steps, 2),
        "peak_allocated_mib": round(torch.cuda.max_memory_allocated() / 2**20),
        "warmup_s": round(warm_s, 1),
        "loss": round(float(loss.item()), 4),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=8)
    p.add_argument("--budget-s", type=float, default=300.0)
    p.add_argument("--variants", help="names, comma-separated (default: all, in order)")
    args = p.parse_args()
    chosen = args.variants.split(",") if args.variants else [v.name for v in VARIANTS]
    by_name = {v.name: v for v in VARIANTS}
    gpu = torch.cuda.get_device_name()
    print(f"{gpu}, torch {torch.__version__}, steps {args.steps} after {args.warmup}", flush=True)
    started, results, skipped = time.monotonic(), [], []
    for name in chosen:
        v = by_name[name]
        if time.monotonic() - started + v.cost_s() > args.budget_s:
            skipped.append(name)
            continue
        try:
            peak = peaks.peak_tflops(gpu, "bf16" if v.dtype == torch.bfloat16 else "fp16")
            result = measure(v, args.steps, args.warmup, peak)
        except Exception as err:  # an OOM or a compile failure is a finding, not the end
            result = {"variant": name, "error": f"{type(err).__name__}: {err}"[:300]}
        print(json.dumps(result), flush=True)
        results.append(result)
        torch.cuda.empty_cache()
    base = next((r["samples_per_s"] for r in results if "samples_per_s" in r), None)
    for r in results:
        if "error" in r:
            print(f"{r['variant']:>24}: {r['error']}")
            continue
        print(
            f"{r['variant']:>24}: b{r['batch_size']:<4} {r['samples_per_s']:8.1f} samples/s"
            f" ({r['samples_per_s'] / base:.2f}x), MFU {r['mfu_percent']:5.2f}%,"
            f" device {r['device_ms_per_step']} ms, host CPU {r['host_cpu_ms_per_step']} ms"
            f" per step, {r['peak_allocated_mib']} MiB"
        )
    if skipped:
        print(f"skipped (budget {args.budget_s:.0f}s): {', '.join(skipped)}")


if __name__ == "__main__":
    main()
