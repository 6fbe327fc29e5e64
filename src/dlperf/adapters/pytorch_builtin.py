"""The built-in PyTorch workload (dlperf.workloads.torch_train), one task per device."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, ClassVar

from dlperf.adapters.base import Adapter, Launcher, ModelSource, TaskContext
from dlperf.matrix import Cell
from dlperf.parse.builtin import parse_builtin_logs
from dlperf.parse.records import ParseResult


def cpu_has_native_bf16() -> bool:
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


class PyTorchBuiltin(Adapter):
    name: ClassVar[str] = "pytorch"
    display_name: ClassVar[str] = "PyTorch (dlperf built-in)"
    version: ClassVar[str] = "dlperf workload; models from transformers configs"
    launcher: ClassVar[Launcher] = Launcher.PER_DEVICE
    models: ClassVar[dict[str, ModelSource]] = {
        "resnet50": ModelSource(
            "huggingface/transformers",
            "ResNetForImageClassification (ResNetConfig: ResNet-50 v1.5)",
        ),
        "bert_base": ModelSource(
            "huggingface/transformers", "BertForPreTraining (BertConfig: BERT-base)"
        ),
    }
    environment: ClassVar[str] = "envs/pytorch.yaml"
    features: ClassVar[tuple[str, ...]] = (
        "DDP",
        "AMP",
        "channels_last (CUDA)",
        "torch.compile as XLA",
    )
    options: ClassVar[dict[str, Any]] = {
        "image_size": 224,
        "num_classes": 1000,
        "seq_len": 128,
        "max_predictions": 20,
        "clip_grad_norm": 1.0,
        "model_config": {},  # transformers config overrides, e.g. fewer layers on a CPU
        "threads": 0,
        "memory_limit_gb": 0,
        "max_batch_size": {"resnet50": 256, "bert_base": 96},  # what `max` means, per model
        "amp_on_cpu": "skip_without_bf16",  # or "run": bf16 autocast on a CPU without bf16 units
    }

    def skip_reason(self, cell: Cell, options: dict[str, Any]) -> str | None:
        if (
            cell.precision == "amp"
            and options["amp_on_cpu"] != "run"
            and not _has_cuda_hint()
            and not cpu_has_native_bf16()
        ):
            return (
                "amp on a CPU without native bf16 (no avx512_bf16/amx_bf16) is emulated and runs "
                "tens of times slower than fp32; set option amp_on_cpu: run to measure it anyway"
            )
        return None

    def batch_size(self, cell: Cell, options: dict[str, Any]) -> int:
        if cell.batch_size == "max":
            return int(options["max_batch_size"][cell.model])
        return int(cell.batch_size)

    def command(self, ctx: TaskContext) -> list[str]:
        o = ctx.options
        args = [
            sys.executable,
            "-u",
            "-m",
            "dlperf.workloads.torch_train",
            "--model",
            ctx.cell.model,
            "--batch-size",
            str(self.batch_size(ctx.cell, o)),
            "--precision",
            ctx.cell.precision,
            "--steps",
            str(ctx.steps),
            "--device",
            ctx.device,
            "--image-size",
            str(o["image_size"]),
            "--num-classes",
            str(o["num_classes"]),
            "--seq-len",
            str(o["seq_len"]),
            "--max-predictions",
            str(o["max_predictions"]),
            "--clip-grad-norm",
            str(0 if ctx.cell.variant == "noclip" else o["clip_grad_norm"]),
            "--threads",
            str(o["threads"]),
            "--memory-limit-gb",
            str(o["memory_limit_gb"]),
            "--model-config",
            json.dumps(o["model_config"], sort_keys=True),
        ]
        if ctx.cell.xla:
            args.append("--compile")
        return args

    def parse(self, logs: list[Path], cell: Cell, options: dict[str, Any]) -> ParseResult:
        return parse_builtin_logs(logs)


def _has_cuda_hint() -> bool:
    import shutil

    return shutil.which("nvidia-smi") is not None
