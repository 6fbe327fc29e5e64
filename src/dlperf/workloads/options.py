"""The options of the built-in workloads, each declared once: its default, its JSON schema and
whether the workload gets it as a flag. The built-in adapters' defaults, validation, command
line and `dlperf adapters` listing, and every workload's argument parser derive from this table.

Light on purpose: the workloads import it in their own environments."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from typing import Any

from dlperf.vocabulary import MODELS


@dataclass(frozen=True)
class Option:
    name: str
    default: Any
    schema: dict[str, Any]
    help: str
    flag: bool = True  # passed to the workload as --name-with-dashes; False: the adapter's own
    # the cells it makes a difference to: "" every cell, "xla", "amp" or "max" those alone (see
    # BuiltinWorkload.measured_options: a change of it reruns no other cell)
    reaches: str = ""

    @property
    def dashed(self) -> str:
        return "--" + self.name.replace("_", "-")

    def argument(self, value: Any) -> str:
        """The flag's value on a command line (JSON for a mapping)."""
        return json.dumps(value, sort_keys=True) if isinstance(value, dict) else str(value)

    def add_to(self, parser: argparse.ArgumentParser, help: str | None = None) -> None:
        kind = str(self.schema.get("type", ""))
        parse: Any = {"integer": int, "number": float, "object": str}.get(kind, str)
        default = self.argument(self.default) if kind == "object" else self.default
        parser.add_argument(self.dashed, type=parse, default=default, help=help or self.help)


POSITIVE = {"type": "integer", "minimum": 1}
COUNT = {"type": "integer", "minimum": 0}
AMOUNT = {"type": "number", "minimum": 0}

OPTIONS: tuple[Option, ...] = (
    Option("image_size", 224, POSITIVE, "ResNet-50 and InsightFace input side, pixels"),
    Option("num_classes", 1000, POSITIVE, "ResNet-50's classes; InsightFace's identities"),
    Option("seq_len", 128, POSITIVE, "BERT and GPT tokens per sequence"),
    Option("max_predictions", 20, POSITIVE, "BERT's masked positions per sequence"),
    Option("vocab_size", 2322444, POSITIVE, "Wide & Deep's rows of the wide and deep embeddings"),
    Option("deep_embedding_vec_size", 32, POSITIVE, "Wide & Deep's deep embedding width"),
    Option("hidden_units_num", 7, POSITIVE, "Wide & Deep's fully connected layers"),
    Option("hidden_size", 1024, POSITIVE, "Wide & Deep's units per fully connected layer"),
    Option("embedding_size", 512, POSITIVE, "InsightFace's face feature width"),
    Option(
        "sample_rate",
        1.0,
        {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        "InsightFace's partial FC: share of each rank's classes per step (1: all)",
    ),
    Option(
        "sharding",
        "ddp",
        {"enum": ["ddp", "fsdp"]},
        "data parallel across ranks: ddp (replicas, gradients all-reduced) or fsdp (parameters, "
        "gradients and optimizer state sharded; GPT: PyTorch FSDP2, JAX jit over NamedSharding)",
    ),
    Option("clip_grad_norm", 1.0, AMOUNT, "BERT's gradient clipping; 0 turns it off"),
    Option("threads", 0, COUNT, "CPU threads per rank; 0: cores / ranks"),
    Option("memory_limit_gb", 0, AMOUNT, "cap each rank's address space, GB (a CPU run's OOM)"),
    Option(
        "model_config",
        {},
        {"type": "object"},
        "JSON overrides of the model's configuration (e.g. fewer layers on a CPU)",
    ),
    Option(
        "calibrate_s",
        0.25,
        AMOUNT,
        "seconds of matrix products measuring this device's peak (rank 0; 0: none)",
    ),
    Option(
        "comm_probe_iters",
        5,
        COUNT,
        "all-reduces of the gradients' size timed before training (0: none)",
    ),
    Option(
        "max_batch_size",
        {"resnet50": 256, "bert_base": 96, "wide_deep": 16384, "insightface": 64, "gpt": 8},
        {
            "type": "object",
            "propertyNames": {"enum": list(MODELS)},
            "additionalProperties": POSITIVE,
        },
        "what batch_size `max` means, per model",
        flag=False,
        reaches="max",
    ),
    Option(
        "amp_on_cpu",
        "skip_without_bf16",
        {"enum": ["skip_without_bf16", "run"]},
        "run: bf16 on a CPU without bf16 units too",
        flag=False,
        reaches="amp",
    ),
)
FLAGS = tuple(o for o in OPTIONS if o.flag)

# PyTorch's alone (adapter `pytorch` passes it with --compile in the xla column)
COMPILE_MODE = Option(
    "compile_mode",
    "default",
    {"enum": ["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"]},
    "torch.compile's mode in the xla column (reduce-overhead: each step replayed as CUDA graphs, "
    "no launch cost per kernel; on a CPU as default)",
    flag=False,
    reaches="xla",
)
# PyTorch's alone (adapter `pytorch` passes it in amp cells): what autocast runs in on CUDA
CUDA_AMP_DTYPE = Option(
    "cuda_amp_dtype",
    "float16",
    {"enum": ["float16", "bfloat16"]},
    "autocast's type on CUDA in amp cells: float16 with a grad scaler (DLPerf's AMP) or bfloat16 "
    "without one (no unscale or inf check per step; Ampere and later); on a CPU bf16 either way",
    flag=False,
    reaches="amp",
)
EVERY = (*OPTIONS, COMPILE_MODE, CUDA_AMP_DTYPE)


def wide_deep_model_config_problem(overrides: dict[str, Any]) -> str | None:
    """Why `overrides` is no model_config of Wide & Deep (None: it is none): its sizes are the
    options above, in every framework. Pure: the adapters check a suite with it, the workloads
    when they start."""
    if not overrides:
        return None
    return (
        f"model_config: {', '.join(sorted(overrides))}: Wide & Deep takes no model_config; its "
        "sizes are the options vocab_size, deep_embedding_vec_size, hidden_units_num and "
        "hidden_size"
    )


def add_arguments(parser: argparse.ArgumentParser, helps: dict[str, str]) -> None:
    """Every option the workloads get as a flag, with its default and help (or the workload's
    own words for it, in `helps`)."""
    for option in FLAGS:
        option.add_to(parser, helps.get(option.name))


def command_flags(options: dict[str, Any]) -> list[str]:
    """The resolved options as the workload's flags, in the table's order."""
    return [part for o in FLAGS for part in (o.dashed, o.argument(options[o.name]))]
