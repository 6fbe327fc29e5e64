"""The built-in JAX workload (dlperf.workloads.jax_train): KerasHub models on Keras 3's JAX backend.

One task per device. JAX always compiles the training step with XLA (`jax.jit`), so only xla=on
cells run; xla=off cells are skipped with the reason, and a case that asks for xla off only is a
config error.
"""

from __future__ import annotations

from typing import Any, ClassVar

from dlperf.adapters.base import ModelSource
from dlperf.adapters.builtin import BuiltinWorkload
from dlperf.defaults import case_setting
from dlperf.errors import ConfigError
from dlperf.i18n import Phrase, english
from dlperf.matrix import Cell

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
    "wide_deep": ModelSource(
        "dlperf",
        "workloads/keras_models.py (OneFlow-Benchmark's W&D in Keras layers, as the pytorch "
        "recipe: dense embeddings, whole on every rank)",
    ),
    "insightface": ModelSource(
        "dlperf",
        "workloads/keras_models.py (KerasHub's ResNetBackbone: ResNet-50 v1.5; ArcFace, partial "
        "FC; the classifier split across the ranks as pytorch's)",
    ),
}
# ... their tiny configuration (model_config in transformers' names, as the pytorch workload's)
KERAS_HUB_TINY: dict[str, dict[str, Any]] = {
    "resnet50": {
        "image_size": 32, "num_classes": 10, "threads": 1,
        "model_config": {"stackwise_num_blocks": [1, 1, 1, 1]},
    },
    "bert_base": {
        "seq_len": 16, "max_predictions": 4, "threads": 1,
        "model_config": {
            "num_hidden_layers": 1, "hidden_size": 64, "num_attention_heads": 2,
            "intermediate_size": 128, "vocab_size": 512, "max_position_embeddings": 32,
        },
    },
    "gpt": {
        "seq_len": 32, "threads": 1,
        "model_config": {"n_layer": 2, "n_embd": 64, "n_head": 4, "vocab_size": 1000},
    },
    "wide_deep": {
        "vocab_size": 1000, "hidden_units_num": 2, "hidden_size": 32, "deep_embedding_vec_size": 8,
        "threads": 1,
    },
    "insightface": {  # ResNet-50's widths, one block per stage: the formula's flops line holds
        "image_size": 32, "num_classes": 101, "embedding_size": 16, "sample_rate": 0.5,
        "threads": 1, "model_config": {"stackwise_num_blocks": [1, 1, 1, 1]},
    },
}  # fmt: skip
# What the Keras workloads (JAX and TensorFlow) do not run, and why (dlperf adapters says it).
KERAS_LACKS: dict[str, Phrase] = {}


def keras_model_config_problem(model: str, overrides: dict[str, Any]) -> str | None:
    """The Keras workloads' own check of a model_config (pure: no Keras imported)."""
    from dlperf.workloads.keras_config import model_config_problem

    return model_config_problem(model, overrides)


class JaxBuiltin(BuiltinWorkload):
    name: ClassVar[str] = "jax"
    display_name: ClassVar[str] = "JAX"
    models_library: ClassVar[str] = "KerasHub"
    version: ClassVar[str] = (
        "dlperf workload; jax 0.10 + keras 3.15 (JAX backend) + keras-hub 0.32 models"
    )
    module: ClassVar[str] = "dlperf.workloads.jax_train"
    amp_on_cpu_note: ClassVar[Phrase] = Phrase.of("detail.amp_note.xla")
    models: ClassVar[dict[str, ModelSource]] = KERAS_HUB_MODELS
    tiny: ClassVar[dict[str, dict[str, Any]]] = KERAS_HUB_TINY
    lacks: ClassVar[dict[str, Phrase]] = KERAS_LACKS
    requirements: ClassVar[str | None] = "envs/jax.txt"
    # sharding fsdp: variables and optimizer state split over the mesh's data axis, XLA's SPMD
    # partitioner gathering each where it is used (jax_fsdp.make_fsdp_step)
    sharded_models: ClassVar[frozenset[str]] = frozenset({"gpt"})
    features: ClassVar[tuple[str, ...]] = (
        "XLA (jax.jit, always)",
        "data parallel (shard_map + pmean, gloo on CPU)",
        "FSDP for GPT (sharding: fsdp; jit over NamedSharding, the data axis)",
        "AMP (Keras mixed_bfloat16)",
    )

    def model_config_problem(self, model: str, overrides: dict[str, Any]) -> str | None:
        return keras_model_config_problem(model, overrides)

    def check_case(self, case: dict[str, Any]) -> None:
        super().check_case(case)
        if True not in case_setting(case, "xla"):
            raise ConfigError(
                f".xla: {self.name} runs only with xla on (the step is always jax.jit-compiled); "
                "set xla: [true]"
            )

    def skip_reason(self, cell: Cell, options: dict[str, Any]) -> str | None:
        if not cell.xla:
            return english(Phrase.of("detail.xla_only"))
        return super().skip_reason(cell, options)
