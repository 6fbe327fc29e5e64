"""The built-in MXNet workload (dlperf.workloads.mxnet_train): GluonCV and GluonNLP models on MXNet 1.9.

One task per device. The xla column is Gluon's hybridize() (a static graph) against imperative
execution; data parallel goes through a dist_sync KVStore whose ps-lite scheduler and server the
rank-0 task starts itself, so every layout runs, on CPU too.
"""

from __future__ import annotations

from typing import Any, ClassVar

from dlperf.adapters.base import ModelSource, TaskContext
from dlperf.adapters.builtin import SPECIAL_CASES_LACKED, BuiltinWorkload
from dlperf.i18n import Phrase


class MXNetBuiltin(BuiltinWorkload):
    name: ClassVar[str] = "mxnet"
    display_name: ClassVar[str] = "MXNet"
    models_library: ClassVar[str] = "GluonCV/GluonNLP"
    version: ClassVar[str] = (
        "dlperf workload; mxnet 1.9.1 + gluoncv 0.10.5.post0 + gluonnlp 0.10.0 models"
    )
    module: ClassVar[str] = "dlperf.workloads.mxnet_train"
    amp_on_cpu_note: ClassVar[Phrase] = Phrase.of("detail.amp_note.onednn_fallback")
    models: ClassVar[dict[str, ModelSource]] = {
        "resnet50": ModelSource(
            "dmlc/gluon-cv",
            "gluoncv/model_zoo/resnetv1b.py (ResNetV1b, BottleneckV1b [3, 4, 6, 3] as "
            "resnet50_v1b: ResNet-50 v1.5)",
            "PyPI gluoncv 0.10.5.post0",
        ),
        "bert_base": ModelSource(
            "dmlc/gluon-nlp",
            "src/gluonnlp/model/bert.py (BERTModel over BERTEncoder, bert_12_768_12 "
            "hyperparameters, masked-LM decoder + NSP classifier)",
            "v0.10.0",
        ),
    }
    lacks: ClassVar[dict[str, Phrase]] = {
        "gpt": Phrase.of("adapter.lacks_gluonnlp_gpt"),
        **SPECIAL_CASES_LACKED,
    }
    # threads left at 0 (cores / ranks), which the tests check MXNet's workload derives
    tiny: ClassVar[dict[str, dict[str, Any]]] = {
        "resnet50": {"image_size": 32, "num_classes": 10, "model_config": {"depths": [1, 1, 1, 1]}},
        "bert_base": {
            "seq_len": 16, "max_predictions": 4,
            "model_config": {
                "num_hidden_layers": 1, "hidden_size": 64, "num_attention_heads": 2,
                "intermediate_size": 128, "vocab_size": 512, "max_position_embeddings": 32,
            },
        },
    }  # fmt: skip
    requirements: ClassVar[str | None] = "envs/mxnet.txt"
    features: ClassVar[tuple[str, ...]] = (
        "hybridize() as XLA",
        "data parallel (KVStore dist_sync, ps-lite)",
        "AMP (mxnet.contrib.amp: float16 on GPU, bfloat16 on CPU)",
    )

    def model_config_problem(self, model: str, overrides: dict[str, Any]) -> str | None:
        from dlperf.workloads.mxnet_train import model_config_problem  # pure: no MXNet imported

        return model_config_problem(model, overrides)

    def extra_flags(self, ctx: TaskContext) -> list[str]:
        return ["--hybridize"] if ctx.cell.xla else []  # hybridize() is MXNet's XLA column
