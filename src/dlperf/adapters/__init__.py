"""The adapter registry: every benchmark source, registered explicitly in one place."""

from __future__ import annotations

from dlperf.adapters.base import Adapter, Launcher, ModelSource, TaskContext
from dlperf.adapters.insightface import InsightFaceMXNet, OneFlowFace
from dlperf.adapters.jax_builtin import JaxBuiltin
from dlperf.adapters.mindspore_builtin import MindSporeBuiltin
from dlperf.adapters.mxnet_builtin import MXNetBuiltin
from dlperf.adapters.nvidia import HugeCTR, Megatron, NGCMXNet, NGCPyTorch, NGCTensorFlow
from dlperf.adapters.official import (
    GluonCV,
    GluonNLP,
    MindSpore,
    Paddle,
    PyTorchExamples,
    TensorFlow2,
)
from dlperf.adapters.oneflow import OneFlowBenchmark, OneFlowGPT, OneFlowWDL
from dlperf.adapters.paddle_builtin import PaddleBuiltin
from dlperf.adapters.pytorch_builtin import PyTorchBuiltin
from dlperf.adapters.tf_builtin import TensorFlowBuiltin

REGISTRY: dict[str, type[Adapter]] = {
    cls.name: cls
    for cls in (
        PyTorchBuiltin,
        JaxBuiltin,
        PaddleBuiltin,
        MXNetBuiltin,
        MindSporeBuiltin,
        TensorFlowBuiltin,
        OneFlowBenchmark,
        NGCPyTorch,
        NGCTensorFlow,
        NGCMXNet,
        TensorFlow2,
        PyTorchExamples,
        GluonCV,
        GluonNLP,
        Paddle,
        MindSpore,
        HugeCTR,
        OneFlowWDL,
        Megatron,
        OneFlowGPT,
        OneFlowFace,
        InsightFaceMXNet,
    )
}


def get_adapter(name: str) -> Adapter:
    from dlperf.errors import ConfigError

    try:
        return REGISTRY[name]()
    except KeyError:
        raise ConfigError(
            f"no adapter named {name!r} (registered: {', '.join(REGISTRY)})"
        ) from None


__all__ = ["REGISTRY", "Adapter", "Launcher", "ModelSource", "TaskContext", "get_adapter"]
