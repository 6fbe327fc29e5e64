"""Built-in PyTorch workload: ResNet50 v1.5 or BERT-base pretraining on synthetic data.

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
from dlperf.ceiling import measure_allreduce_busbw
from dlperf.workloads.common import PowerSampler, log, peak_rss_mb, start_rank, workload_parser


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = workload_parser(
        __doc__.splitlines()[0],
        precision_help="amp: fp16 autocast with a grad scaler on CUDA, bf16 autocast on CPU",
        model_config_help="JSON overrides of the transformers config (e.g. a smaller BERT for a CPU)",
    )
    p.add_argument("--compile", action="store_true", help="torch.compile (the xla=on column)")
    return p.parse_args(argv)


class Pretraining(nn.Module):
    """BERT's pretraining loss as Google's BERT and NVIDIA's DeepLearningExamples (DLPerf's BERT)
    compute it: the masked-LM head runs on the `max_predictions` masked positions gathered from
    the encoder's output, not on every token as transformers' BertForPreTraining does (21% more
    FLOPs at 128 tokens, and the same work as the upstream BERT the tables compare with).

    One module, so that DDP and torch.compile see the whole forward of a step."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model
        self.config = model.config

    def forward(
        self,
        input_ids: torch.Tensor,
        token_type_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        mlm_positions: torch.Tensor,
        mlm_labels: torch.Tensor,
        next_sentence_label: torch.Tensor,
    ) -> torch.Tensor:
        encoded, pooled = self.model.bert(
            input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask
        )[:2]
        index = mlm_positions.unsqueeze(-1).expand(-1, -1, encoded.size(-1))
        mlm_logits, nsp_logits = self.model.cls(encoded.gather(1, index), pooled)
        mlm = nn.functional.cross_entropy(mlm_logits.flatten(0, 1), mlm_labels.flatten())
        return mlm + nn.functional.cross_entropy(nsp_logits, next_sentence_label)


class Classification(nn.Module):
    """transformers' image classifier's own loss, as a module returning it (like Pretraining)."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model
        self.config = model.config

    def forward(self, pixel_values: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.model(pixel_values=pixel_values, labels=labels).loss


def build_model(args: argparse.Namespace) -> tuple[nn.Module, dict[str, Any]]:
    """The model with its training loss (forward returns the loss), and its config's facts."""
    from transformers import (
        BertConfig,
        BertForPreTraining,
        ResNetConfig,
        ResNetForImageClassification,
    )

    overrides = json.loads(args.model_config)
    config_class: Any = ResNetConfig if args.model == "resnet50" else BertConfig
    # attn_implementation (eager, sdpa, ...) is a config argument that to_dict() leaves out
    known = set(config_class().to_dict()) | {"attn_implementation"}
    unknown = sorted(set(overrides) - known)
    if unknown:  # a typo would otherwise train the default-sized model, silently
        raise SystemExit(
            f"dlperf: model_config: {', '.join(unknown)}: not a field of {config_class.__name__}"
            f" (its fields: {', '.join(sorted(config_class().to_dict()))})"
        )
    config: Any
    if args.model == "resnet50":
        config = ResNetConfig(num_labels=args.num_classes, **overrides)  # type: ignore[call-arg]
        model: nn.Module = Classification(ResNetForImageClassification(config))
    else:
        config = BertConfig(**overrides)
        model = Pretraining(BertForPreTraining(config))
    described = {
        k: v for k, v in config.to_diff_dict().items() if k not in ("id2label", "label2id")
    }
    return model, described | {"model_type": config.model_type, "num_labels": config.num_labels}


def synthetic_batch(
    args: argparse.Namespace, config: Any, device: torch.device
) -> dict[str, torch.Tensor]:
    """One fixed batch on the device; the same tensors are fed every step (no input pipeline)."""
    g = torch.Generator(device="cpu").manual_seed(1234 + int(os.environ.get("RANK", 0)))
    b = args.batch_size
    if args.model == "resnet50":
        pixels = torch.randn(b, 3, args.image_size, args.image_size, generator=g)
        labels = torch.randint(0, args.num_classes, (b,), generator=g)
        return {"pixel_values": pixels.to(device), "labels": labels.to(device)}
    s, vocab = args.seq_len, config.vocab_size
    input_ids = torch.randint(0, vocab, (b, s), generator=g)
    positions = torch.rand(b, s, generator=g).argsort(dim=1)[:, : min(args.max_predictions, s)]
    return {
        "input_ids": input_ids.to(device),
        "token_type_ids": (torch.arange(s) >= s // 2).long().expand(b, s).contiguous().to(device),
        "attention_mask": torch.ones(b, s, dtype=torch.long, device=device),
        "mlm_positions": positions.to(device),
        "mlm_labels": input_ids.gather(1, positions).to(device),
        "next_sentence_label": torch.randint(0, 2, (b,), generator=g).to(device),
    }


def math_dtype(args: argparse.Namespace, device: torch.device) -> str:
    """The precision the model's matrix products run in (the peak MFU is taken against)."""
    if args.precision == "amp":
        return "fp16" if device.type == "cuda" else "bf16"
    if device.type == "cuda" and torch.cuda.get_device_capability(device) >= (8, 0):
        # PyTorch's defaults: cuDNN convolutions may use TF32, cuBLAS matmuls may not
        tf32 = (
            torch.backends.cudnn.allow_tf32
            if args.model == "resnet50"
            else torch.backends.cuda.matmul.allow_tf32
        )
        return "tf32" if tf32 else "fp32"
    return "fp32"


def counted_flops_per_sample(model: nn.Module, batch: dict[str, torch.Tensor]) -> float:
    """Forward + backward FLOPs per sample, counted by torch's FlopCounterMode on one step of two
    of the run's own samples (FLOPs grow linearly with the batch; two, since batch norm needs
    more than one value per channel): matrix products and convolutions, 2 per multiply-add."""
    from torch.utils.flop_counter import FlopCounterMode

    few = {k: v[:2] for k, v in batch.items()}
    counter = FlopCounterMode(display=False)
    with counter:
        model(**few).backward()
    model.zero_grad(set_to_none=True)
    return float(counter.get_total_flops()) / len(next(iter(few.values())))


def formula_flops_per_sample(args: argparse.Namespace, model_config: dict[str, Any]) -> float:
    """dlperf.flops' stated formula for the same model, where it describes it (else nan)."""
    if args.model == "bert_base":
        shape = flops.BertShape.from_config(model_config)
        return flops.bert_pretraining_flops_per_sample(shape, args.seq_len, args.max_predictions)
    resnet50 = {
        "depths": [3, 4, 6, 3],
        "hidden_sizes": [256, 512, 1024, 2048],
        "embedding_size": 64,
    }
    if all(model_config.get(k) == v for k, v in resnet50.items()):
        return flops.resnet50_training_flops_per_sample(args.image_size, args.num_classes)
    return float("nan")


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
    model, model_config = build_model(args)
    model.to(device)
    if device.type == "cuda" and args.model == "resnet50":
        model = model.to(memory_format=torch.channels_last)  # type: ignore[call-overload]
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True  # one input shape: the fastest kernels, picked once
    plain = model  # FLOPs are counted on the module itself, not its compiled or DDP wrapper
    if args.compile:
        model = torch.compile(model)  # type: ignore[assignment]
    ddp = nn.parallel.DistributedDataParallel(model) if world > 1 else model
    optimizer: torch.optim.Optimizer
    # On CUDA: fused optimizer kernels (one launch for every parameter, and the grad scaler's
    # inf check stays on the device instead of a host sync per step).
    fused = True if device.type == "cuda" else None
    if args.model == "resnet50":
        optimizer = torch.optim.SGD(
            model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-5, fused=fused
        )
    else:
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, fused=fused)
    amp_dtype = torch.float16 if device.type == "cuda" else torch.bfloat16
    use_amp = args.precision == "amp"
    scaler = torch.amp.GradScaler(device.type, enabled=use_amp and device.type == "cuda")
    batch = synthetic_batch(args, model.config, device)
    if device.type == "cuda" and args.model == "resnet50":
        batch["pixel_values"] = batch["pixel_values"].contiguous(memory_format=torch.channels_last)
    if rank == 0:
        log(
            "config",
            model=args.model,
            params=sum(p.numel() for p in model.parameters()),
            device=device.type,
            amp_dtype=str(amp_dtype).removeprefix("torch.") if use_amp else "none",
            world_size=world,
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
    if rank == 0 and args.explain:
        started = time.perf_counter()
        # without cuDNN's autotuning: the count's 2-sample shapes are never trained with, and
        # tuning them took 19 s of a ResNet-50 AMP run on an H100
        with torch.backends.cudnn.flags(enabled=True, benchmark=False):
            per_sample = counted_flops_per_sample(plain, batch)
        log(
            "flops",
            rank=rank,
            per_sample=f"{per_sample:.6g}",
            math=math,
            method="counted_FlopCounterMode",
            formula=f"{formula_flops_per_sample(args, model_config):.6g}",
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
        grad_bytes = sum(p.numel() * p.element_size() for p in plain.parameters())
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
    power = PowerSampler(
        rank,
        device.index if device.type == "cuda" else None,
        args.power_interval_s if args.explain else 0,
    )
    power.start()
    clock = DeviceClock(device)
    for step in range(1, args.steps + 1):
        start = time.time()
        with torch.autocast(device.type, dtype=amp_dtype, enabled=use_amp):
            loss = ddp(**batch)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        if args.model == "bert_base" and args.clip_grad_norm > 0:
            scaler.unscale_(optimizer)
            nn.utils.clip_grad_norm_(model.parameters(), args.clip_grad_norm)
        scaler.step(optimizer)
        scaler.update()
        clock.mark()
        loss_value = loss.item()  # waits for the device: the timestamp below is the step's end
        log(
            "step",
            rank=rank,
            step=step,
            samples=args.batch_size,
            start=f"{start:.6f}",
            end=f"{time.time():.6f}",
            loss=f"{loss_value:.4f}",
            **clock.fields(),
        )
    power.stop()
    gpu_peak = (
        {"peak_allocated_mb": f"{torch.cuda.max_memory_allocated() / 2**20:.1f}"}
        if device.type == "cuda"
        else {}
    )
    log("memory", rank=rank, peak_rss_mb=f"{peak_rss_mb():.1f}", **gpu_peak)
    if world > 1:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
