"""The built-in PaddlePaddle workload (dlperf.workloads.paddle_train), one task per device, in its
own environment (envs/paddlepaddle.txt). Its `xla` column is paddle.jit.to_static."""

from __future__ import annotations

from typing import Any, ClassVar

from dlperf.adapters.base import ModelSource, TaskContext
from dlperf.adapters.builtin import (
    SPECIAL_CASES_LACKED,
    TINY_IN_TRANSFORMERS_NAMES,
    BuiltinWorkload,
)
from dlperf.i18n import Phrase


class PaddleBuiltin(BuiltinWorkload):
    name: ClassVar[str] = "paddlepaddle"
    display_name: ClassVar[str] = "PaddlePaddle"
    version: ClassVar[str] = "dlperf workload; paddlepaddle 3.3.1 + paddlenlp 2.8.1 models"
    module: ClassVar[str] = "dlperf.workloads.paddle_train"
    requirements: ClassVar[str | None] = "envs/paddlepaddle.txt"
    amp_on_cpu_note: ClassVar[Phrase] = Phrase.of("detail.amp_note.paddle")
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
    lacks: ClassVar[dict[str, Phrase]] = SPECIAL_CASES_LACKED
    fsdp_lacks: ClassVar[dict[str, Phrase]] = {"gpt": Phrase.of("adapter.fsdp_lacks_paddle")}
    tiny: ClassVar[dict[str, dict[str, Any]]] = TINY_IN_TRANSFORMERS_NAMES
    features: ClassVar[tuple[str, ...]] = (
        "paddle.jit.to_static as XLA",
        "data parallel (paddle.DataParallel; gloo on CPU, NCCL on GPU)",
        "AMP (auto_cast O1: bf16 on CPU, fp16 + GradScaler on GPU)",
    )

    def model_config_problem(self, model: str, overrides: dict[str, Any]) -> str | None:
        from dlperf.workloads.paddle_train import model_config_problem  # pure: no Paddle

        return model_config_problem(model, overrides)

    def extra_flags(self, ctx: TaskContext) -> list[str]:
        return ["--to-static"] if ctx.cell.xla else []
