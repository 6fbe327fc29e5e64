"""dlperf's vocabulary: the models it benchmarks, the precisions and the devices, each listed
once. The suite schema's enums, the built-in workloads' argparse choices, the report's names and
the upstream adapters' language models read them from here.

Light on purpose: every built-in workload imports it in its own environment."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Model:
    name: str  # the suite's and the cell id's spelling
    display_name: str  # the report's
    language: bool = False  # a sample is a sequence of seq_len tokens


MODELS: dict[str, Model] = {
    m.name: m
    for m in (
        Model("resnet50", "ResNet-50 v1.5"),
        Model("bert_base", "BERT-base", language=True),
        Model("wide_deep", "Wide & Deep"),
        Model("insightface", "InsightFace"),
        Model("gpt", "GPT", language=True),
    )
}
PRECISIONS = ("fp32", "amp")  # amp: fp16 with loss scaling on CUDA, bf16 on a CPU
PRECISION_NAMES = {"fp32": "FP32", "amp": "AMP"}  # the report's
DEVICES = ("auto", "cpu", "cuda")  # auto: CUDA where torch sees it, else the CPU
LANGUAGE_MODELS = tuple(name for name, m in MODELS.items() if m.language)


def display_name(model: str) -> str:
    return MODELS[model].display_name if model in MODELS else model
