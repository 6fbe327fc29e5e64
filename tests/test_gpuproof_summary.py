"""What proof.md says of the cells the GPU proof measured, modelled on the H100 runs of
2026-11-27 (docs/gpu-proof/2026-11-27-h100)."""

from __future__ import annotations

from typing import Any

from dlperf.gpuproof import proofmd, summary

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
