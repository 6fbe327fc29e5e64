"""Built-in PyTorch workload: a model of dlperf.workloads.torch_models trained on synthetic data.

Models come from transformers configs (ResNetConfig defaults are ResNet-50 v1.5, BertConfig
defaults are BERT-base), built without any download. Every rank prints one line per step:

    dlperf-step rank=0 step=12 samples=32 start=1763780000.123456 end=1763780000.234567 loss=6.9

Ranks come from the environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), as
torchrun, submitit or srun set them. DistributedDataParallel over gloo on CPU, NCCL on CUDA.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from dlperf import flops
from dlperf.measure.ceiling import measure_allreduce_busbw
from dlperf.workloads.common import (
    fp32_math,
    leave_together,
    log,
    log_memory,
    start_rank,
    train_steps,
    workload_parser,
)
from dlperf.workloads.options import COMPILE_MODE, CUDA_AMP_DTYPE
from dlperf.workloads.torch_models import RECIPES
from dlperf.workloads.torch_models.recipe import Recipe


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = workload_parser(
        __doc__.splitlines()[0],
        precision_help="amp: autocast in --cuda-amp-dtype on CUDA (float16: with a grad scaler), "
        "bf16 on a CPU",
        model_config_help="JSON overrides of the transformers config (e.g. a smaller BERT for a CPU)",
    )
    p.add_argument("--compile", action="store_true", help="torch.compile (the xla=on column)")
    COMPILE_MODE.add_to(p)
    CUDA_AMP_DTYPE.add_to(p)
    return p.parse_args(argv)


def recipe(args: argparse.Namespace) -> Recipe:
    if args.model not in RECIPES:
        raise SystemExit(
            f"dlperf: the PyTorch workload has no {args.model} (it has: {', '.join(RECIPES)})"
        )
    return RECIPES[args.model]


def build_model(args: argparse.Namespace) -> tuple[nn.Module, dict[str, Any]]:
    """The model with its training loss (forward returns the loss), and its config's facts."""
    return recipe(args).build(args)


def synthetic_batch(
    args: argparse.Namespace, model: nn.Module, device: torch.device
) -> dict[str, torch.Tensor]:
    """One fixed batch on the device; the same tensors are fed every step (no input pipeline)."""
    return recipe(args).batch(args, model, device)


def formula_flops_per_sample(args: argparse.Namespace, model_config: dict[str, Any]) -> float:
    """dlperf.flops' stated formula for the same model, where it describes it (else nan)."""
    return recipe(args).formula(args, model_config)


def autocast_dtype(args: argparse.Namespace, device: torch.device) -> torch.dtype:
    """What an amp cell's autocast runs in: --cuda-amp-dtype on CUDA, bf16 on a CPU."""
    return getattr(torch, args.cuda_amp_dtype) if device.type == "cuda" else torch.bfloat16


def math_dtype(args: argparse.Namespace, device: torch.device) -> str:
    """The precision the model's matrix products run in (the peak MFU is taken against)."""
    if args.precision == "amp":
        return "fp16" if autocast_dtype(args, device) == torch.float16 else "bf16"
    if device.type != "cuda":
        return "fp32"
    # PyTorch's defaults: cuDNN convolutions may use TF32, cuBLAS matmuls may not (unless an NGC
    # image's TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 makes cuBLAS use it whatever the flag says)
    tf32 = (
        torch.backends.cudnn.allow_tf32
        if recipe(args).tf32_flag == "cudnn"
        else torch.backends.cuda.matmul.allow_tf32
        or os.environ.get("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE") == "1"
    )
    return fp32_math(torch.cuda.get_device_capability(device), tf32)


def counted_flops_per_sample(model: nn.Module, batch: dict[str, torch.Tensor]) -> float:
    """Forward + backward FLOPs per sample, counted by torch's FlopCounterMode on one step of two
    of the run's own samples (FLOPs grow linearly with the batch; two, since batch norm needs
    more than one value per channel): matrix products and convolutions, 2 per multiply-add.
    Attention runs as plain products here: FlopCounterMode has no formula for the CPU's fused
    attention kernel, and would miss it (5% of a small Llama)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    few = {k: v[:2] for k, v in batch.items()}
    counter = FlopCounterMode(display=False)
    with counter, sdpa_kernel(SDPBackend.MATH):
        model(**few).backward()
    model.zero_grad(set_to_none=True)
    return float(counter.get_total_flops()) / len(next(iter(few.values())))


class DeviceClock:
    """The device's own clock at each step's end: a CUDA event recorded after the optimizer step,
    read once the step has finished, as seconds since an event before the first step
    (`device_s=`). The window's time on it checks the host timestamps (dlperf.gpuproof)."""

    def __init__(self, device: torch.device) -> None:
        self.on = device.type == "cuda"
        if self.on:
            self.origin = torch.cuda.Event(enable_timing=True)
            self.origin.record()
            self.last = self.origin

    def mark(self) -> None:
        if self.on:
            self.last = torch.cuda.Event(enable_timing=True)
            self.last.record()

    def fields(self) -> dict[str, str]:
        if not self.on:
            return {}
        self.last.synchronize()
        return {"device_s": f"{self.origin.elapsed_time(self.last) / 1000:.6f}"}


def cuda_graph_fields(args: argparse.Namespace, device: torch.device) -> dict[str, str]:
    """The graphs that compile mode reduce-overhead left out of CUDA graphs on CUDA (inductor's
    count; TORCH_LOGS=cudagraphs says why): a skipped graph runs as compile's default mode,
    measured under the CUDA-graphs cell's id (dlperf.gpuproof flags it)."""
    if not (args.compile and args.compile_mode == "reduce-overhead" and device.type == "cuda"):
        return {}
    from torch._dynamo.utils import counters

    return {"cudagraph_skips": str(counters["inductor"]["cudagraph_skips"])}


def pick_device(choice: str, local_rank: int) -> torch.device:
    if choice == "cuda" or (choice == "auto" and torch.cuda.is_available()):
        if not torch.cuda.is_available():
            raise SystemExit("dlperf: --device cuda but torch sees no CUDA device")
        torch.cuda.set_device(local_rank % torch.cuda.device_count())
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rank, world, local_rank, local_world = start_rank(args)
    device = pick_device(args.device, local_rank)
    if device.type == "cpu":
        torch.set_num_threads(args.threads or max(1, (os.cpu_count() or 1) // local_world))
    if world > 1:
        dist.init_process_group(
            "nccl" if device.type == "cuda" else "gloo",
            device_id=device if device.type == "cuda" else None,
        )
    torch.manual_seed(0)
    how = recipe(args)
    model, model_config = how.build(args)
    model.to(device)
    if device.type == "cuda" and how.channels_last:
        model = model.to(memory_format=torch.channels_last)  # type: ignore[call-overload]
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True  # one input shape: the fastest kernels, picked once
    plain = model  # FLOPs are counted on the module itself, not its compiled or DDP wrapper
    sharded = args.sharding == "fsdp" and world > 1
    if sharded:  # FSDP2 shards the module in place, before it is compiled
        if how.shard is None:
            raise SystemExit(f"dlperf: sharding fsdp: no FSDP recipe for {args.model}")
        how.shard(plain)
    if args.compile:
        model = torch.compile(model, mode=args.compile_mode)  # type: ignore[assignment]
    ddp = how.wrap(model, device) if world > 1 and not sharded else model
    # On CUDA: fused optimizer kernels where a recipe's optimizer is safe fused (one launch for
    # every parameter, the grad scaler's inf check on the device); SGD declines (recipe.momentum_sgd).
    optimizer = how.optimizer(model.parameters(), True if device.type == "cuda" else None)
    amp_dtype = autocast_dtype(args, device)
    use_amp = args.precision == "amp"
    # float16's narrow range needs the loss scaled; bfloat16 has float32's
    scaler = torch.amp.GradScaler(device.type, enabled=use_amp and amp_dtype == torch.float16)
    batch = how.batch(args, plain, device)
    if device.type == "cuda" and how.channels_last:
        batch["pixel_values"] = batch["pixel_values"].contiguous(memory_format=torch.channels_last)
    if rank == 0:
        log(
            "config",
            model=args.model,
            params=sum(p.numel() for p in model.parameters()),
            device=device.type,
            amp_dtype=str(amp_dtype).removeprefix("torch.") if use_amp else "none",
            world_size=world,
            sharding=args.sharding if world > 1 else "none",
            compile=args.compile_mode if args.compile else "none",
            torch=torch.__version__,
            cuda=torch.version.cuda or "none",
            cudnn=torch.backends.cudnn.version() or "none",
            nccl=".".join(map(str, torch.cuda.nccl.version())) if device.type == "cuda" else "none",
            gpu=torch.cuda.get_device_name(device).replace(" ", "_")
            if device.type == "cuda"
            else "none",
            model_config=json.dumps(model_config, sort_keys=True, separators=(",", ":")),
        )
    math = math_dtype(args, device)
    # Each explaining measurement states the seconds it took the run (`seconds`): what it cost.
    # a forward that communicates (a split classifier, gathered shards) runs on every rank
    if args.explain and (rank == 0 or how.collective_forward or sharded):
        started = time.perf_counter()
        # without cuDNN's autotuning: the count's 2-sample shapes are never trained with, and
        # tuning them took 19 s of a ResNet-50 AMP run on an H100
        with torch.backends.cudnn.flags(enabled=True, benchmark=False):
            per_sample = counted_flops_per_sample(plain, batch)
    if rank == 0 and args.explain:
        log(
            "flops",
            rank=rank,
            per_sample=f"{per_sample:.6g}",
            math=math,
            method="counted_FlopCounterMode",
            formula=f"{how.formula(args, model_config):.6g}",
            seconds=f"{time.perf_counter() - started:.3f}",
        )
        if args.calibrate_s > 0:  # on as many threads as this rank trains with
            started = time.perf_counter()
            peak = flops.measure_gemm_peak_tflops(math, str(device), args.calibrate_s)
            log(
                "peak",
                rank=rank,
                math=math,
                measured_tflops=f"{peak:.4g}",
                gpu=torch.cuda.get_device_name(device).replace(" ", "_")
                if device.type == "cuda"
                else "none",
                seconds=f"{time.perf_counter() - started:.3f}",
            )
    if world > 1 and args.comm_probe_iters > 0 and args.explain:
        # one size on every rank: a classifier split across the ranks (InsightFace, 101 classes
        # as 51 + 50) gives each rank its own parameter bytes, and gloo aborts an all-reduce of
        # mismatched sizes; the largest rank's is what the gradients' all-reduce would carry
        mine = sum(p.numel() * p.element_size() for p in plain.parameters())
        agreed = torch.tensor([mine], dtype=torch.int64, device=device)
        torch.distributed.all_reduce(agreed, op=torch.distributed.ReduceOp.MAX)
        grad_bytes = int(agreed.item())
        started = (
            time.perf_counter()
        )  # the other ranks wait in it for rank 0's count: its time is the probe's
        probe = measure_allreduce_busbw(grad_bytes, iters=args.comm_probe_iters, warmup=1)
        if rank == 0:
            log(
                "comm",
                rank=rank,
                backend=probe.backend,
                world=probe.world_size,
                bytes=probe.size_bytes,
                iters=probe.iterations,
                time_per_op_s=f"{probe.time_per_op_s:.6g}",
                busbw_gb_s=f"{probe.busbw_bytes_per_s / 1e9:.6g}",
                seconds=f"{time.perf_counter() - started:.3f}",
            )
    if device.type == "cuda":
        # the memory line is the training's peak: the FLOP count, the 8192 x 8192 GEMM
        # calibration (768 MiB in fp32) and the all-reduce probe's buffer are dlperf's own
        torch.cuda.reset_peak_memory_stats(device)
    clock = DeviceClock(device)

    def train_step() -> float:
        with torch.autocast(device.type, dtype=amp_dtype, enabled=use_amp):
            loss = ddp(**batch)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        if how.clip and args.clip_grad_norm > 0:
            scaler.unscale_(optimizer)
            nn.utils.clip_grad_norm_(model.parameters(), args.clip_grad_norm)
        scaler.step(optimizer)
        scaler.update()
        clock.mark()
        return loss.item()  # waits for the device

    train_steps(
        rank, args, device.index if device.type == "cuda" else None, train_step, clock.fields
    )
    allocated = torch.cuda.max_memory_allocated() if device.type == "cuda" else None
    log_memory(rank, allocated, **cuda_graph_fields(args, device))
    if world > 1:
        leave_together(dist.barrier)
    return 0


if __name__ == "__main__":
    sys.exit(main())
