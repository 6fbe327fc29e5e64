"""The built-in JAX workload (dlperf.workloads.jax_train): KerasHub models on Keras 3's JAX backend.

One task per device. JAX always compiles the training step with XLA (`jax.jit`), so only xla=on
cells run; xla=off cells are skipped with the reason, and a case that asks for xla off only is a
config error.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, ClassVar

from dlperf.adapters.base import Adapter, Launcher, ModelSource, TaskContext
from dlperf.adapters.pytorch_builtin import _has_cuda_hint, cpu_has_native_bf16
from dlperf.config import ConfigError
from dlperf.matrix import Cell
from dlperf.parse.builtin import parse_builtin_logs
from dlperf.parse.records import ParseResult

XLA_ONLY = (
    "JAX compiles the whole training step with XLA (jax.jit); it has no xla-off mode to measure "
    "(op by op dispatch is minutes per step), see the xla=on cell"
)


class JaxBuiltin(Adapter):
    name: ClassVar[str] = "jax"
    display_name: ClassVar[str] = "JAX (dlperf built-in, KerasHub models)"
    version: ClassVar[str] = (
        "dlperf workload; jax 0.10 + keras 3.15 (JAX backend) + keras-hub 0.32 models"
    )
    launcher: ClassVar[Launcher] = Launcher.PER_DEVICE
    models: ClassVar[dict[str, ModelSource]] = {
        "resnet50": ModelSource(
            "keras-team/keras-hub",
            "keras_hub/src/models/resnet (ResNetImageClassifier on ResNetBackbone: ResNet-50 v1.5)",
            "v0.32.0",
        ),
        "bert_base": ModelSource(
            "keras-team/keras-hub",
            "keras_hub/src/models/bert (BertBackbone: BERT-base, MaskedLMHead + NSP head)",
            "v0.32.0",
        ),
    }
    environment: ClassVar[str] = "envs/jax.yaml"
    features: ClassVar[tuple[str, ...]] = (
        "XLA (jax.jit, always)",
        "data parallel (shard_map + pmean, gloo on CPU)",
        "AMP (Keras mixed_bfloat16)",
    )
    oom_patterns: ClassVar[tuple[str, ...]] = (
        *Adapter.oom_patterns,
        r"RESOURCE_EXHAUSTED",  # XLA's allocators, on CPU and GPU
        r"[Oo]ut of memory",
    )
    options: ClassVar[dict[str, Any]] = {
        "image_size": 224,
        "num_classes": 1000,
        "seq_len": 128,
        "max_predictions": 20,
        "clip_grad_norm": 1.0,
        # KerasHub backbone arguments, or the transformers names the pytorch adapter takes
        # (num_hidden_layers, hidden_size, num_attention_heads, intermediate_size, vocab_size)
        "model_config": {},
        "threads": 0,
        "memory_limit_gb": 0,
        "max_batch_size": {"resnet50": 256, "bert_base": 96},  # what `max` means, per model
        "amp_on_cpu": "skip_without_bf16",  # or "run": bf16 on a CPU without bf16 units
    }

    def check_case(self, case: dict[str, Any]) -> None:
        super().check_case(case)
        if True not in case.get("xla", [False]):
            raise ConfigError(
                f".xla: {self.name} runs only with xla on (the step is always jax.jit-compiled); "
                "set xla: [true]"
            )

    def skip_reason(self, cell: Cell, options: dict[str, Any]) -> str | None:
        if not cell.xla:
            return XLA_ONLY
        if (
            cell.precision == "amp"
            and options["amp_on_cpu"] != "run"
            and not _has_cuda_hint()
            and not cpu_has_native_bf16()
        ):
            return (
                "amp on a CPU without native bf16 (no avx512_bf16/amx_bf16) measures no "
                "mixed-precision hardware (XLA computes bf16 through fp32 here); set option "
                "amp_on_cpu: run to measure it anyway"
            )
        return None

    def batch_size(self, cell: Cell, options: dict[str, Any]) -> int:
        if cell.batch_size == "max":
            return int(options["max_batch_size"][cell.model])
        return int(cell.batch_size)

    def command(self, ctx: TaskContext) -> list[str]:
        o = ctx.options
        return [
            sys.executable, "-u", "-m", "dlperf.workloads.jax_train",
            "--model", ctx.cell.model,
            "--batch-size", str(self.batch_size(ctx.cell, o)),
            "--precision", ctx.cell.precision,
            "--steps", str(ctx.steps),
            "--device", ctx.device,
            "--image-size", str(o["image_size"]),
            "--num-classes", str(o["num_classes"]),
            "--seq-len", str(o["seq_len"]),
            "--max-predictions", str(o["max_predictions"]),
            "--clip-grad-norm", str(0 if ctx.cell.variant == "noclip" else o["clip_grad_norm"]),
            "--threads", str(o["threads"]),
            "--memory-limit-gb", str(o["memory_limit_gb"]),
            "--model-config", json.dumps(o["model_config"], sort_keys=True),
        ]  # fmt: skip

    def parse(self, logs: list[Path], cell: Cell, options: dict[str, Any]) -> ParseResult:
        return parse_builtin_logs(logs)
