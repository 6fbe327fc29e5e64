"""What the built-in workloads share: one task per device, one CLI, the `dlperf-step` log format."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, ClassVar

from dlperf.adapters.base import Adapter, Launcher, TaskContext
from dlperf.matrix import Cell
from dlperf.parse.builtin import parse_builtin_logs
from dlperf.parse.records import ParseResult
from dlperf.workloads import code_digest


def cpu_has_native_bf16() -> bool:
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def has_cuda_hint() -> bool:
    return shutil.which("nvidia-smi") is not None


class BuiltinWorkload(Adapter):
    """A workload module of dlperf.workloads run with the same flags by every built-in adapter."""

    launcher: ClassVar[Launcher] = Launcher.PER_DEVICE
    module: ClassVar[str]  # e.g. dlperf.workloads.torch_train
    # The pinned pip requirements (envs/*.txt) of the workload's own virtual environment, built by
    # the workflow the first time a cell needs it; None: it runs in dlperf's own environment.
    requirements: ClassVar[str | None] = None
    amp_on_cpu_note: ClassVar[str]  # why amp is skipped on a CPU without bf16 units
    options: ClassVar[dict[str, Any]] = {
        "image_size": 224,
        "num_classes": 1000,
        "seq_len": 128,
        "max_predictions": 20,
        "clip_grad_norm": 1.0,
        "model_config": {},  # model config overrides (transformers names), e.g. fewer layers on a CPU
        "threads": 0,
        "memory_limit_gb": 0,
        "max_batch_size": {"resnet50": 256, "bert_base": 96},  # what `max` means, per model
        "amp_on_cpu": "skip_without_bf16",  # or "run": bf16 on a CPU without bf16 units
        "calibrate_s": 0.25,  # seconds of GEMMs measuring the device's peak (MFU's fallback peak)
        "comm_probe_iters": 5,  # all-reduces of the gradients' size timed before training
    }
    option_types: ClassVar[dict[str, dict[str, Any]]] = {
        "image_size": {"type": "integer", "minimum": 1},
        "num_classes": {"type": "integer", "minimum": 1},
        "seq_len": {"type": "integer", "minimum": 1},
        "max_predictions": {"type": "integer", "minimum": 1},
        "clip_grad_norm": {"type": "number", "minimum": 0},
        "threads": {"type": "integer", "minimum": 0},
        "memory_limit_gb": {"type": "number", "minimum": 0},
        "max_batch_size": {
            "type": "object",
            "additionalProperties": {"type": "integer", "minimum": 1},
        },
        "amp_on_cpu": {"enum": ["skip_without_bf16", "run"]},
        "calibrate_s": {"type": "number", "minimum": 0},
        "comm_probe_iters": {"type": "integer", "minimum": 0},
    }

    def code_digest(self) -> str | None:
        return code_digest(self.module)

    def skip_reason(self, cell: Cell, options: dict[str, Any]) -> str | None:
        if (
            cell.precision == "amp"
            and options["amp_on_cpu"] != "run"
            and not has_cuda_hint()
            and not cpu_has_native_bf16()
        ):
            return (
                f"amp on a CPU without native bf16 (no avx512_bf16/amx_bf16) {self.amp_on_cpu_note}; "
                "set option amp_on_cpu: run to measure it anyway"
            )
        return None

    def batch_size(self, cell: Cell, options: dict[str, Any]) -> int:
        if cell.batch_size == "max":
            return int(options["max_batch_size"][cell.model])
        return int(cell.batch_size)

    def command(self, ctx: TaskContext) -> list[str]:
        o = ctx.options
        return [
            ctx.python, "-u", "-m", self.module,
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
            "--calibrate-s", str(o["calibrate_s"]),
            "--comm-probe-iters", str(o["comm_probe_iters"]),
            *self.extra_flags(ctx),
        ]  # fmt: skip

    def extra_flags(self, ctx: TaskContext) -> list[str]:
        return []

    def parse(self, logs: list[Path], cell: Cell, options: dict[str, Any]) -> ParseResult:
        return parse_builtin_logs(logs)
