"""The adapter registry: every benchmark source, registered explicitly in one place."""

from __future__ import annotations

from dlperf.adapters.base import Adapter, Launcher, ModelSource, TaskContext
from dlperf.adapters.gluoncv import GluonCV
from dlperf.adapters.gluonnlp import GluonNLP
from dlperf.adapters.hugectr import HugeCTR
from dlperf.adapters.insightface import InsightFaceMXNet, OneFlowFace
from dlperf.adapters.jax_builtin import JaxBuiltin
from dlperf.adapters.megatron import Megatron
from dlperf.adapters.mindspore_builtin import MindSporeBuiltin
from dlperf.adapters.mindspore_models import MindSpore
from dlperf.adapters.mxnet_builtin import MXNetBuiltin
from dlperf.adapters.ngc_mxnet import NGCMXNet
from dlperf.adapters.ngc_pytorch import NGCPyTorch
from dlperf.adapters.ngc_tensorflow import NGCTensorFlow
from dlperf.adapters.oneflow import OneFlowBenchmark, OneFlowWDL
from dlperf.adapters.oneflow_gpt import OneFlowGPT
from dlperf.adapters.paddle_builtin import PaddleBuiltin
from dlperf.adapters.paddle_models import Paddle
from dlperf.adapters.pytorch_builtin import PyTorchBuiltin
from dlperf.adapters.pytorch_examples import PyTorchExamples
from dlperf.adapters.tf_builtin import TensorFlowBuiltin
from dlperf.adapters.tf_models import TensorFlow2
from dlperf.adapters.upstream import UpstreamAdapter
from dlperf.parse.upstream import Parser

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


def upstream_parsers() -> dict[str, Parser]:
    """Every log parser an upstream adapter or one of its releases binds, by source name (the
    function's name less `parse_`), in registry order."""
    parsers: dict[str, Parser] = {}
    for cls in REGISTRY.values():
        if issubclass(cls, UpstreamAdapter):
            bound = [cls.parsers, *(release.parsers for release in cls.releases.values())]
            for table in bound:
                for parser in table.values():
                    parsers.setdefault(parser.__name__.removeprefix("parse_"), parser)
    return parsers


def get_adapter(name: str) -> Adapter:
    from dlperf.errors import ConfigError

    try:
        return REGISTRY[name]()
    except KeyError:
        raise ConfigError(
            f"no adapter named {name!r} (registered: {', '.join(REGISTRY)})"
        ) from None


__all__ = [
    "REGISTRY",
    "Adapter",
    "Launcher",
    "ModelSource",
    "TaskContext",
    "get_adapter",
    "upstream_parsers",
]
