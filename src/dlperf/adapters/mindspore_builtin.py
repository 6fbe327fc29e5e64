"""The built-in MindSpore workload (dlperf.workloads.mindspore_train): MindCV and MindFormers models
on MindSpore 2.7, one task per device, in its own environment (envs/mindspore.txt).

The xla column is MindSpore's execution mode: GRAPH_MODE (the whole training step compiled into one
graph) against PYNATIVE_MODE. Data parallel goes through MindSpore's dynamic cluster, whose
scheduler the rank-0 task starts itself, so every layout runs, on CPU too (MCCL).
"""

from __future__ import annotations

from typing import Any, ClassVar

from dlperf.adapters.base import ModelSource, TaskContext
from dlperf.adapters.builtin import (
    SPECIAL_CASES_LACKED,
    TINY_IN_TRANSFORMERS_NAMES,
    BuiltinWorkload,
)
from dlperf.i18n import Phrase


class MindSporeBuiltin(BuiltinWorkload):
    name: ClassVar[str] = "mindspore_builtin"
    display_name: ClassVar[str] = "MindSpore 2"
    models_library: ClassVar[str] = "MindCV/MindFormers"
    version: ClassVar[str] = (
        "dlperf workload; mindspore 2.7.2 + mindcv 0.3.0 + mindformers 1.3.2 models"
    )
    module: ClassVar[str] = "dlperf.workloads.mindspore_train"
    requirements: ClassVar[str | None] = "envs/mindspore.txt"
    amp_on_cpu_note: ClassVar[Phrase] = Phrase.of("detail.amp_note.mindspore")
    models: ClassVar[dict[str, ModelSource]] = {
        "resnet50": ModelSource(
            "mindspore-lab/mindcv",
            "mindcv/models/resnet.py (resnet50: Bottleneck with the stride in its 3x3 "
            "convolution, ResNet-50 v1.5)",
            "PyPI mindcv 0.3.0",
        ),
        "bert_base": ModelSource(
            "mindspore-lab/mindformers",
            "mindformers/models/bert/bert.py (BertForPreTraining: masked-LM and next-sentence "
            "heads, BertLoss)",
            "PyPI mindformers 1.3.2",
        ),
        "gpt": ModelSource(
            "mindspore-lab/mindformers",
            "mindformers/models/gpt2/gpt2.py (GPT2LMHeadModel: GPT-2 small; model_type llama: "
            "llama/llama.py LlamaForCausalLM, unfused RMSNorm, sliced rotary, its rotary "
            "embedding's missing Cast given)",
            "PyPI mindformers 1.3.2",
        ),
    }
    lacks: ClassVar[dict[str, Phrase]] = SPECIAL_CASES_LACKED
    fsdp_lacks: ClassVar[dict[str, Phrase]] = {"gpt": Phrase.of("adapter.fsdp_lacks_mindspore")}
    tiny: ClassVar[dict[str, dict[str, Any]]] = TINY_IN_TRANSFORMERS_NAMES
    features: ClassVar[tuple[str, ...]] = (
        "GRAPH_MODE as XLA (PYNATIVE_MODE without)",
        "data parallel (dynamic cluster; MCCL on CPU, NCCL on GPU)",
        "AMP (float16 + static loss scale: auto_mixed_precision O2 on ResNet, "
        "MindFormers compute_dtype on BERT)",
    )

    def model_config_problem(self, model: str, overrides: dict[str, Any]) -> str | None:
        from dlperf.workloads.mindspore_networks import model_config_problem  # pure: no MindSpore

        return model_config_problem(model, overrides)

    def extra_flags(self, ctx: TaskContext) -> list[str]:
        return ["--graph-mode"] if ctx.cell.xla else []
