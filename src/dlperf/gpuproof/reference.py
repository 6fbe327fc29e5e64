"""The plain training loop a user would write: the reference the built-in PyTorch workload is held to.

ResNet-50 v1.5 is torchvision's `resnet50` (channels_last on CUDA, the case's num_classes),
trained with SGD; BERT-base is transformers' `BertForPreTraining`, trained with AdamW and the
case's gradient clipping like the built-in, its masked-LM head on the masked positions only (as
NVIDIA's BERT, and the built-in). AMP on CUDA is the built-in's: fp16 autocast with a grad scaler,
or bf16 without one (`--cuda-amp-dtype`); bf16 autocast on a CPU. The data is one synthetic batch
made on the device, `cudnn.benchmark` on. Nothing is synchronised inside the loop: the window
(steps after `warmup`, `measure` of them) is timed by two CUDA events, or the host's monotonic
clock on a CPU. One JSON line on stdout says what was measured and how.

    python -m dlperf.gpuproof.reference --model resnet50 --batch-size 256 --precision amp
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import torch
from torch import nn

from dlperf.workloads.options import CUDA_AMP_DTYPE

MODELS = ("resnet50", "bert_base")  # the models with a plain loop here


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=MODELS, required=True)
    p.add_argument("--batch-size", type=int, required=True)
    p.add_argument("--precision", choices=["fp32", "amp"], default="amp")
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--measure", type=int, default=100)
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--max-predictions", type=int, default=20)
    p.add_argument("--num-classes", type=int, default=1000, help="ResNet-50's classes")
    p.add_argument("--clip-grad-norm", type=float, default=1.0, help="BERT's clipping; 0: none")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    p.add_argument("--model-config", default="{}", help="JSON overrides of BertConfig")
    CUDA_AMP_DTYPE.add_to(p)
    args = p.parse_args(argv)
    if args.model == "resnet50" and json.loads(args.model_config):
        p.error("--model-config: the reference ResNet-50 is torchvision's, whole: none is taken")
    return args


def resnet50(num_classes: int = 1000) -> tuple[nn.Module, str]:
    """torchvision's ResNet-50 (v1.5: the stride in the 3x3 convolution); where torchvision cannot
    be imported (no build for this torch), transformers' ResNet-50 v1.5, and the source says so."""
    try:
        import torchvision

        model = torchvision.models.resnet50(num_classes=num_classes)
        return model, f"torchvision {torchvision.__version__} resnet50"
    except Exception as err:  # an ImportError, or a torchvision built for another torch
        from transformers import ResNetConfig, ResNetForImageClassification

        class Logits(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                config = ResNetConfig(num_labels=num_classes)  # type: ignore[call-arg]
                self.net = ResNetForImageClassification(config)

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return self.net(pixel_values=x).logits

        why = f"{type(err).__name__}: {err}".splitlines()[0][:120]
        return Logits(), f"transformers ResNetForImageClassification (torchvision: {why})"


def bert_batch(args: argparse.Namespace, vocab: int, device: torch.device) -> dict[str, Any]:
    b, s = args.batch_size, args.seq_len
    ids = torch.randint(0, vocab, (b, s), device=device)
    positions = torch.arange(min(args.max_predictions, s), device=device).expand(b, -1)
    return {
        "input_ids": ids,
        "token_type_ids": (torch.arange(s, device=device) >= s // 2).long().expand(b, s),
        "attention_mask": torch.ones(b, s, dtype=torch.long, device=device),
        "positions": positions,
        "labels": ids.gather(1, positions),
        "next_sentence_label": torch.randint(0, 2, (b,), device=device),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    device = torch.device("cuda" if cuda else "cpu")
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    amp = args.precision == "amp"
    amp_dtype = getattr(torch, args.cuda_amp_dtype) if cuda else torch.bfloat16
    layout = torch.channels_last if cuda else torch.contiguous_format
    if args.model == "resnet50":
        model, source = resnet50(args.num_classes)
        model = model.to(device, memory_format=layout)  # type: ignore[call-overload]
        optimizer: torch.optim.Optimizer = torch.optim.SGD(
            model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-5
        )
        images = torch.randn(args.batch_size, 3, args.image_size, args.image_size, device=device)
        images = images.contiguous(memory_format=layout)
        labels = torch.randint(0, args.num_classes, (args.batch_size,), device=device)
        criterion = nn.CrossEntropyLoss()

        def loss_of_step() -> torch.Tensor:
            return criterion(model(images), labels)
    else:
        from transformers import BertConfig, BertForPreTraining

        config: Any = BertConfig(**json.loads(args.model_config))
        model = BertForPreTraining(config).to(device)  # type: ignore[arg-type]
        source = f"transformers BertForPreTraining ({config.num_hidden_layers} layers)"
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
        batch = bert_batch(args, config.vocab_size, device)

        def loss_of_step() -> torch.Tensor:
            bert, heads = model.bert, model.cls  # type: ignore[union-attr]
            sequence, pooled = bert(
                input_ids=batch["input_ids"],
                token_type_ids=batch["token_type_ids"],
                attention_mask=batch["attention_mask"],
            )[:2]
            index = batch["positions"].unsqueeze(-1).expand(-1, -1, sequence.size(-1))
            mlm, nsp = heads(sequence.gather(1, index), pooled)
            return nn.functional.cross_entropy(
                mlm.flatten(0, 1), batch["labels"].flatten()
            ) + nn.functional.cross_entropy(nsp, batch["next_sentence_label"])

    scaler = torch.amp.GradScaler("cuda", enabled=amp and amp_dtype == torch.float16)
    total = args.warmup + args.measure
    for step in range(total):
        if step == args.warmup:  # the window starts once the warm-up steps are done
            started = _mark(device)
        with torch.autocast(device.type, dtype=amp_dtype, enabled=amp):
            loss = loss_of_step()
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        if args.model == "bert_base" and args.clip_grad_norm > 0:
            scaler.unscale_(optimizer)
            nn.utils.clip_grad_norm_(model.parameters(), args.clip_grad_norm)
        scaler.step(optimizer)
        scaler.update()
    seconds = _elapsed_s(device, started)
    result = {
        "model": args.model,
        "precision": args.precision,
        "batch_size": args.batch_size,
        # the built-in workload asks for fused optimizer kernels on CUDA; a user's loop takes
        # PyTorch's default (foreach): part of a ratio to it, so it is said
        "source": f"{source}; torch.optim.{type(optimizer).__name__} as PyTorch defaults it",
        "device": torch.cuda.get_device_name() if cuda else "cpu",
        "window": {"warmup": args.warmup, "measure": args.measure},
        "window_time_s": seconds,
        "throughput_samples_per_s": args.batch_size * args.measure / seconds,
        "timer": "cuda_events" if cuda else "perf_counter",
        "loss": float(loss.item()),
        "peak_allocated_mib": torch.cuda.max_memory_allocated() / 2**20 if cuda else None,
    }
    print(json.dumps(result), flush=True)
    return 0


def _mark(device: torch.device) -> Any:
    if device.type != "cuda":
        return time.perf_counter()
    event = torch.cuda.Event(enable_timing=True)
    event.record()
    return event


def _elapsed_s(device: torch.device, started: Any) -> float:
    if device.type != "cuda":
        return time.perf_counter() - started
    end = _mark(device)
    end.synchronize()
    return float(started.elapsed_time(end)) / 1000


if __name__ == "__main__":
    sys.exit(main())
