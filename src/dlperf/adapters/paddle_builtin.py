"""The built-in PaddlePaddle workload (dlperf.workloads.paddle_train), one task per device, in its
own environment (envs/paddlepaddle.txt). Its `xla` column is paddle.jit.to_static."""

from __future__ import annotations

from typing import Any, ClassVar

from dlperf.adapters.base import Adapter, ModelSource, TaskContext
from dlperf.adapters.builtin import BuiltinWorkload


class PaddleBuiltin(BuiltinWorkload):
    name: ClassVar[str] = "paddlepaddle"
    display_name: ClassVar[str] = "PaddlePaddle (dlperf built-in)"
    version: ClassVar[str] = "dlperf workload; paddlepaddle 3.3.1 + paddlenlp 2.8.1 models"
    module: ClassVar[str] = "dlperf.workloads.paddle_train"
    requirements: ClassVar[str | None] = "envs/paddlepaddle.txt"
    environment: ClassVar[str] = "envs/paddlepaddle.txt"
    amp_on_cpu_note: ClassVar[str] = (
        "measures no mixed-precision hardware (Paddle's O1 autocast has no CPU bf16 kernels "
        "to pick there)"
    )
    models: ClassVar[dict[str, ModelSource]] = {
        "resnet50": ModelSource(
            "PaddlePaddle/Paddle",
            "python/paddle/vision/models/resnet.py (resnet50: ResNet-50 v1.5)",
            "v3.3.1",
        ),
        "bert_base": ModelSource(
            "PaddlePaddle/PaddleNLP",
            "paddlenlp/transformers/bert/modeling.py (BertForPretraining, BertPretrainingCriterion)",
            "v2.8.1",
        ),
        "gpt": ModelSource(
            "PaddlePaddle/PaddleNLP",
            "paddlenlp/transformers/gpt/modeling.py (GPTForCausalLM, GPTPretrainingCriterion: "
            "GPT-2 small; model_type llama: llama/modeling.py LlamaForCausalLM)",
            "v2.8.1",
        ),
    }
    lacks: ClassVar[dict[str, str]] = {
        "wide_deep": "not written yet: dlperf's Wide & Deep is a PyTorch recipe and a Keras "
        "model (JAX, TensorFlow)",
        "insightface": "not written yet: dlperf's InsightFace is a PyTorch recipe and a Keras "
        "model (JAX, TensorFlow)",
    }
    tiny: ClassVar[dict[str, dict[str, Any]]] = {
        "resnet50": {"image_size": 32, "num_classes": 10, "threads": 1},  # all 50 layers
        "bert_base": {
            "seq_len": 16, "max_predictions": 3, "threads": 1,
            "model_config": {
                "num_hidden_layers": 1, "hidden_size": 32, "num_attention_heads": 2,
                "intermediate_size": 64, "vocab_size": 512,
            },
        },
        "gpt": {
            "seq_len": 32, "threads": 1,
            "model_config": {"n_layer": 2, "n_embd": 64, "n_head": 4, "vocab_size": 1000},
        },
    }  # fmt: skip
    features: ClassVar[tuple[str, ...]] = (
        "paddle.jit.to_static as XLA",
        "data parallel (paddle.DataParallel; gloo on CPU, NCCL on GPU)",
        "AMP (auto_cast O1: bf16 on CPU, fp16 + GradScaler on GPU)",
    )
    oom_patterns: ClassVar[tuple[str, ...]] = (
        *Adapter.oom_patterns,
        r"ResourceExhausted",  # Paddle's allocators: "(ResourceExhausted) Fail to alloc memory"
        r"Fail to alloc memory",
    )

    def extra_flags(self, ctx: TaskContext) -> list[str]:
        return ["--to-static"] if ctx.cell.xla else []
