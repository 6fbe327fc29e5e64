"""The built-in JAX workload (dlperf.workloads.jax_train): KerasHub models on Keras 3's JAX backend.

One task per device. JAX always compiles the training step with XLA (`jax.jit`), so only xla=on
cells run; xla=off cells are skipped with the reason, and a case that asks for xla off only is a
config error.
"""

from __future__ import annotations

from typing import Any, ClassVar

from dlperf.adapters.base import Adapter, ModelSource
from dlperf.adapters.builtin import BuiltinWorkload
from dlperf.errors import ConfigError
from dlperf.matrix import Cell

XLA_ONLY = (
    "JAX compiles the whole training step with XLA (jax.jit); it has no xla-off mode to measure "
    "(op by op dispatch is minutes per step), see the xla=on cell"
)


# the models both Keras 3 workloads (JAX and TensorFlow backends) train
KERAS_HUB_MODELS: dict[str, ModelSource] = {
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
    "gpt": ModelSource(
        "keras-team/keras-hub",
        "keras_hub/src/models/gpt2, llama (GPT2CausalLM: GPT-2 small; model_type llama: "
        "LlamaCausalLM)",
        "v0.32.0",
    ),
}
# What the Keras workloads (JAX and TensorFlow) do not run yet, and why (dlperf adapters says it).
KERAS_LACKS: dict[str, str] = {
    "wide_deep": "not written yet: KerasHub has no Wide & Deep model and dlperf's recipe of it "
    "is PyTorch's (dlperf.workloads.torch_models.wide_deep)",
    "insightface": "not written yet: dlperf's InsightFace (a margin softmax whose classifier is "
    "split across the ranks) is a PyTorch recipe (dlperf.workloads.torch_models.insightface)",
}


class JaxBuiltin(BuiltinWorkload):
    name: ClassVar[str] = "jax"
    display_name: ClassVar[str] = "JAX (dlperf built-in, KerasHub models)"
    version: ClassVar[str] = (
        "dlperf workload; jax 0.10 + keras 3.15 (JAX backend) + keras-hub 0.32 models"
    )
    module: ClassVar[str] = "dlperf.workloads.jax_train"
    amp_on_cpu_note: ClassVar[str] = (
        "measures no mixed-precision hardware (XLA computes bf16 through fp32 here)"
    )
    models: ClassVar[dict[str, ModelSource]] = KERAS_HUB_MODELS
    lacks: ClassVar[dict[str, str]] = KERAS_LACKS
    environment: ClassVar[str] = "envs/jax.txt"
    requirements: ClassVar[str | None] = "envs/jax.txt"
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

    def check_case(self, case: dict[str, Any]) -> None:
        super().check_case(case)
        if True not in case.get("xla", [False]):
            raise ConfigError(
                f".xla: {self.name} runs only with xla on (the step is always jax.jit-compiled); "
                "set xla: [true]"
            )

    def skip_reason(self, cell: Cell, options: dict[str, Any]) -> str | None:
        return XLA_ONLY if not cell.xla else super().skip_reason(cell, options)
