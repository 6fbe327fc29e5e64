"""The built-in TensorFlow 2 workload (dlperf.workloads.tf_train): the KerasHub models the JAX
workload trains, on Keras 3's TensorFlow backend, in its own environment (envs/tensorflow.txt).

One task per device. The xla column is `tf.function(jit_compile=True)` of the forward and backward
pass against the same tf.function without it; data parallel is MultiWorkerMirroredStrategy
(ring all-reduce over gRPC on CPU, NCCL on GPU), so every layout runs, on CPU too.
"""

from __future__ import annotations

from typing import Any, ClassVar

from dlperf.adapters.base import ModelSource, TaskContext
from dlperf.adapters.builtin import BuiltinWorkload
from dlperf.adapters.hosts import node_hosts
from dlperf.adapters.jax_builtin import (
    KERAS_HUB_MODELS,
    KERAS_HUB_TINY,
    KERAS_LACKS,
    keras_model_config_problem,
)
from dlperf.i18n import Phrase


class TensorFlowBuiltin(BuiltinWorkload):
    name: ClassVar[str] = "tensorflow"
    display_name: ClassVar[str] = "TensorFlow 2"
    models_library: ClassVar[str] = "KerasHub"
    version: ClassVar[str] = (
        "dlperf workload; tensorflow 2.21 + keras 3.15 (TensorFlow backend) + keras-hub 0.32 models"
    )
    module: ClassVar[str] = "dlperf.workloads.tf_train"
    amp_on_cpu_note: ClassVar[Phrase] = Phrase.of("detail.amp_note.tensorflow")
    models: ClassVar[dict[str, ModelSource]] = KERAS_HUB_MODELS
    tiny: ClassVar[dict[str, dict[str, Any]]] = KERAS_HUB_TINY
    lacks: ClassVar[dict[str, Phrase]] = KERAS_LACKS
    fsdp_lacks: ClassVar[dict[str, Phrase]] = {"gpt": Phrase.of("adapter.fsdp_lacks_tensorflow")}
    requirements: ClassVar[str | None] = "envs/tensorflow.txt"
    features: ClassVar[tuple[str, ...]] = (
        "tf.function(jit_compile=True) as XLA",
        "data parallel (MultiWorkerMirroredStrategy; ring over gRPC on CPU, NCCL on GPU)",
        "AMP (Keras mixed_bfloat16 on CPU, mixed_float16 + LossScaleOptimizer on GPU)",
    )

    def model_config_problem(self, model: str, overrides: dict[str, Any]) -> str | None:
        return keras_model_config_problem(model, overrides)

    def extra_flags(self, ctx: TaskContext) -> list[str]:
        flags = ["--jit-compile"] if ctx.cell.xla else []
        if ctx.nodes > 1:  # TF_CONFIG names every worker's host: the nodes, node 0 first
            flags += ["--worker-hosts", ",".join(node_hosts(ctx))]
        return flags
