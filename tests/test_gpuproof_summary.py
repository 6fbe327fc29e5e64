"""What proof.md says of the cells the GPU proof measured, modelled on the H100 runs of
2026-11-27 (docs/gpu-proof/2026-11-27-h100)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from dlperf.gpuproof import proofmd, summary
from dlperf.launch.facts import cudnn_text, gpu_text
from dlperf.measure import efficiency

RESNET = "pytorch.resnet50.amp.noxla.b256.1n1g"
NAN_LOSS = "loss nan or inf in 100 window steps (r1): steps that may not have trained"


def _proof(cells: dict[str, dict[str, Any]], vs: dict[str, Any] | None = None) -> dict[str, Any]:
    case: dict[str, Any] = {
        "number": 1, "cells": cells, "state": "done", "detail": "", "device_clock": [],
    }  # fmt: skip
    if vs is not None:
        case |= {
            "vs_reference": vs,
            "reference": {"status": "ok", "throughput_samples_per_s": 4720.0},
        }
    proof = {
        "node": {"gpus": ["NVIDIA H100 80GB HBM3, 81559 MiB, 580.159.04"]}, "versions": {},
        "window": {"warmup": 20, "measure": 100}, "report": "made", "cases": [case],
    }  # fmt: skip
    return proof | {"targets": summary.targets(proof)}


def test_a_flagged_cell_meets_no_target_and_proof_md_says_why() -> None:
    """On the H100 the ResNet-50 AMP run's loss was nan from its 4th step: the report flagged
    it, proof.md said ok, 4,847 img/s and 1.027x its plain loop, both targets 'met: yes'."""
    row = {"status": "ok", "statuses": "ok:1", "throughput_median": 4846.73, "mfu_pct": 11.9}
    proof = _proof({RESNET: row | {"flags": NAN_LOSS}}, {"cell": RESNET, "ratio": 1.027})
    by_what = {t["what"]: t for t in proof["targets"]}
    img_s, ratio = by_what["ResNet-50 AMP img/s"], by_what["ResNet-50 AMP / plain loop"]
    assert (img_s["measured"], img_s["met"], img_s["flags"]) == (4846.73, None, NAN_LOSS)
    assert (ratio["measured"], ratio["met"], ratio["cell"]) == (1.027, None, RESNET)
    said = proofmd.markdown(proof)
    assert f"| not judged: `{RESNET}` is flagged ({NAN_LOSS}) |" in said
    assert "| yes |" not in said
    [line] = [x for x in said.splitlines() if x.startswith(f"| 1 (done) | `{RESNET}`")]
    assert line.endswith(f"| {NAN_LOSS} |")
    unflagged = _proof({RESNET: row}, {"cell": RESNET, "ratio": 1.027})["targets"]
    assert [t["met"] for t in unflagged[:2]] == [True, True]


def test_the_best_mfu_comes_from_an_unflagged_cell() -> None:
    flagged = {"mfu_pct": 35.0, "flags": "a stalled window step (r2)"}
    proof = _proof(
        {
            "pytorch.bert_base.amp.xla.b256-cudagraphs.1n1g": flagged,
            "pytorch.bert_base.amp.noxla.b64.1n1g": {"mfu_pct": 11.76},
        }
    )
    [bert] = [t for t in proof["targets"] if t["what"].startswith("BERT")]
    assert (bert["measured"], bert["met"]) == (11.76, False)
    assert bert["cell"] == "pytorch.bert_base.amp.noxla.b64.1n1g"


def test_proof_md_writes_each_figure_as_the_report_does_and_each_cells_flops_method() -> None:
    """On the H100: '24.2' samples/s beside '4,359', MFU '41.17' beside '30.8' and '6.863',
    J/sample '0.1577' beside '27.57', and a header saying every MFU's FLOPs were counted by
    FlopCounterMode while Megatron-LM's came from the 6 N + 12 L s h formula."""
    gpt = {
        "status": "ok", "statuses": "ok:1", "throughput_median": 24.197734701771626,
        "throughput_cv": None, "achieved_tflops": 407.34708574309377,
        "mfu_pct": 41.16696167186395, "flops_method": "counted_FlopCounterMode",
        "peak_mem_mib": 34661.6, "energy_j_per_sample": 27.573415737832967,
        "power_w_per_device": 667.2141988457366,
    }  # fmt: skip
    megatron = {
        "status": "ok", "statuses": "ok:1", "throughput_median": 77.59456838021337,
        "achieved_tflops": 67.90818199216294, "mfu_pct": 6.862878422654163,
        "flops_method": "formula: 6 N + 12 L s h per token (model FLOPs), V=50304",
    }  # fmt: skip
    proof = _proof(
        {"pytorch.gpt.amp.xla.b4-llama1b.1n1g": gpt, "megatron.gpt.amp.noxla.b8.1n1g": megatron}
    )
    proof["versions"] = {"gpu": "NVIDIA_H100_80GB_HBM3", "torch": "2.11.0+cu130", "cudnn": "91900"}
    said = proofmd.markdown(proof)
    assert said.startswith(
        "# dlperf GPU proof: NVIDIA H100 80GB HBM3, 81,559 MiB, driver 580.159.04\n"
    )
    assert (
        "- built-in run's stack: GPU NVIDIA H100 80GB HBM3, torch 2.11.0+cu130, cuDNN 9.19.0\n"
        in said
    )
    assert "counted by torch's FlopCounterMode: matrix products" not in said
    rows = {
        line.split(" | ")[1]: line for line in said.splitlines() if line.startswith("| 1 (done)")
    }
    assert rows["`pytorch.gpt.amp.xla.b4-llama1b.1n1g`"] == (
        "| 1 (done) | `pytorch.gpt.amp.xla.b4-llama1b.1n1g` | ok:1 | 24.20 | n/a | 407 | 41.2 "
        "| counted_FlopCounterMode | 34662 | 27.6 | 667.2 |  |  |  |"
    )
    assert rows["`megatron.gpt.amp.noxla.b8.1n1g`"] == (
        "| 1 (done) | `megatron.gpt.amp.noxla.b8.1n1g` | ok:1 | 77.59 | n/a | 67.9 | 6.9 "
        "| formula: 6 N + 12 L s h per token (model FLOPs), V=50304 | n/a | n/a | n/a |  |  |  |"
    )
    assert (
        "| GPT (Llama) AMP MFU % (best cell; torchtitan on H100s: 33-39%) | 41.2 | 33 | yes |"
        in said
    )


def test_gpu_and_cudnn_facts_are_written_as_a_reader_reads_them() -> None:
    assert gpu_text("NVIDIA H100 80GB HBM3, 81559 MiB, 580.159.04") == (
        "NVIDIA H100 80GB HBM3, 81,559 MiB, driver 580.159.04"
    )
    assert gpu_text("Tesla V100-SXM2-16GB") == "Tesla V100-SXM2-16GB"
    assert [cudnn_text(v) for v in ("91900", "8902", "90100", "none")] == [
        "9.19.0", "8.9.2", "9.1.0", "none",
    ]  # fmt: skip


def test_a_cells_flops_method_is_its_runs() -> None:
    runs = pd.DataFrame(
        {
            "flops_method": ["formula: 6 N + 12 L s h per token (model FLOPs), V=50304"] * 2,
            "achieved_tflops": [67.9, 68.1],
        }
    )
    figures = efficiency.cell_figures(runs)
    assert figures["flops_method"] == "formula: 6 N + 12 L s h per token (model FLOPs), V=50304"
    assert figures["achieved_tflops"] == pytest.approx(68.0)


def test_the_device_clock_section_names_the_cells_it_could_not_check() -> None:
    """The H100's DLE ConvNets run (case 16, on CUDA) read 'none: no run on CUDA'."""
    ngc = "ngc_pytorch.resnet50.amp.noxla.b256.1n1g"
    proof = _proof({ngc: {"status": "ok", "statuses": "ok:1", "throughput_median": 4605.95}})
    said = proofmd.markdown(proof).split("## Host timestamps against CUDA events")[1]
    assert "no run on CUDA" not in said
    assert "| none | | | | |" in said
    check = {"cell": RESNET, "run": "r1", "host_samples_per_s": 4846.73, "difference_pct": -0.001}
    proof["cases"][0]["device_clock"] = [check | {"device_samples_per_s": 4846.698}]
    assert f"| `{RESNET}` | r1 | 4846.73 | 4846.70 | -0.001 |" in proofmd.markdown(proof)
    assert f"an upstream source does not): `{ngc}`\n" in said
