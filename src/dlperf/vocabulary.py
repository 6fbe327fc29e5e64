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
    sample: str  # what one sample of its throughput is
    language: bool = False  # a sample is a sequence of seq_len tokens
    special_case: bool = False  # one of DLPerf's "other test results (special cases)"


MODELS: dict[str, Model] = {
    m.name: m
    for m in (
        Model("resnet50", "ResNet-50 v1.5", "image"),
        Model("bert_base", "BERT-base", "sequence", language=True),
        Model("wide_deep", "Wide & Deep", "example", special_case=True),
        Model("insightface", "InsightFace", "image", special_case=True),
        Model("gpt", "GPT", "sequence", language=True, special_case=True),
    )
}
PRECISIONS = ("fp32", "amp")  # amp: fp16 with loss scaling on CUDA, bf16 on a CPU
PRECISION_NAMES = {"fp32": "FP32", "amp": "AMP"}  # the report's
DEVICES = ("auto", "cpu", "cuda")  # auto: CUDA where torch sees it, else the CPU
LANGUAGE_MODELS = tuple(name for name, m in MODELS.items() if m.language)


def display_name(model: str) -> str:
    return MODELS[model].display_name if model in MODELS else model
