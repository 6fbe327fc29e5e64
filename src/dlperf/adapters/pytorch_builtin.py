"""The built-in PyTorch workload (dlperf.workloads.torch_train), one task per device."""

from __future__ import annotations

from typing import Any, ClassVar

from dlperf.adapters.base import ModelSource, TaskContext
from dlperf.adapters.builtin import BuiltinWorkload
from dlperf.i18n import Phrase
from dlperf.workloads.options import (
    COMPILE_MODE,
    CUDA_AMP_DTYPE,
    wide_deep_model_config_problem,
)


class PyTorchBuiltin(BuiltinWorkload):
    name: ClassVar[str] = "pytorch"
    display_name: ClassVar[str] = "PyTorch"
    version: ClassVar[str] = "dlperf workload; models from transformers configs"
    models: ClassVar[dict[str, ModelSource]] = {
        "resnet50": ModelSource(
            "huggingface/transformers",
            "ResNetForImageClassification (ResNetConfig: ResNet-50 v1.5)",
        ),
        "bert_base": ModelSource(
            "huggingface/transformers", "BertForPreTraining (BertConfig: BERT-base)"
        ),
        "wide_deep": ModelSource(
            "dlperf",
            "workloads/torch_models/wide_deep.py (OneFlow-Benchmark's W&D: dense embeddings, DDP)",
        ),
        "insightface": ModelSource(
            "dlperf",
            "workloads/torch_models/insightface.py (ResNetConfig backbone: ResNet-50 v1.5;"
            " ArcFace split across ranks, partial FC)",
        ),
        "gpt": ModelSource(
            "huggingface/transformers",
            "AutoModelForCausalLM (GPT2Config: GPT-2 small; model_type llama: LlamaConfig)",
        ),
    }
    environment: ClassVar[str] = "envs/pytorch.yaml"
    features: ClassVar[tuple[str, ...]] = (
        "DDP",
        "AMP",
        "channels_last (CUDA)",
        "torch.compile as XLA",
    )
    module: ClassVar[str] = "dlperf.workloads.torch_train"
    options: ClassVar[dict[str, Any]] = BuiltinWorkload.options | {
        o.name: o.default for o in (COMPILE_MODE, CUDA_AMP_DTYPE)
    }
    option_types: ClassVar[dict[str, dict[str, Any]]] = BuiltinWorkload.option_types | {
        o.name: o.schema for o in (COMPILE_MODE, CUDA_AMP_DTYPE)
    }
    sharded_models: ClassVar[frozenset[str]] = frozenset({"gpt"})  # FSDP2 per decoder block
    amp_on_cpu_note: ClassVar[Phrase] = Phrase.of("detail.amp_note.emulated")
    tiny: ClassVar[dict[str, dict[str, Any]]] = {
        "resnet50": {
            "image_size": 16, "num_classes": 10, "threads": 1,
            "model_config": {
                "depths": [1, 1, 1, 1], "hidden_sizes": [16, 32, 64, 128], "embedding_size": 16,
            },
        },
        "bert_base": {
            "seq_len": 16, "max_predictions": 3, "threads": 1,
            "model_config": {
                "num_hidden_layers": 1, "hidden_size": 32, "num_attention_heads": 2,
                "intermediate_size": 64, "vocab_size": 512,
            },
        },
        "wide_deep": {"vocab_size": 1000, "hidden_units_num": 2, "hidden_size": 32, "threads": 1},
        "insightface": {
            "image_size": 32, "num_classes": 101, "embedding_size": 16, "sample_rate": 0.5,
            "threads": 1,
            "model_config": {
                "depths": [1, 1, 1, 1], "hidden_sizes": [16, 32, 64, 128], "embedding_size": 8,
            },
        },
        "gpt": {
            "seq_len": 32, "threads": 1,
            "model_config": {"n_layer": 2, "n_embd": 64, "n_head": 4, "vocab_size": 1000},
        },
    }  # fmt: skip

    def model_config_problem(self, model: str, overrides: dict[str, Any]) -> str | None:
        """Wide & Deep's rule (it takes none); the others' keys are transformers' config fields,
        known when the run starts."""
        return wide_deep_model_config_problem(overrides) if model == "wide_deep" else None

    def extra_flags(self, ctx: TaskContext) -> list[str]:
        flags = []
        if ctx.cell.precision == "amp":
            amp = ctx.options[CUDA_AMP_DTYPE.name]
            flags += [CUDA_AMP_DTYPE.dashed, CUDA_AMP_DTYPE.argument(amp)]
        if ctx.cell.xla:  # torch.compile is PyTorch's XLA column
            mode = COMPILE_MODE.argument(ctx.options[COMPILE_MODE.name])
            flags += ["--compile", COMPILE_MODE.dashed, mode]
        return flags
