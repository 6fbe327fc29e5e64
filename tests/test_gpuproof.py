"""The GPU proof kit's CPU path: the GPU suite planned, the plain loops, the packing, the checks."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from workflow_helpers import ROOT, planned_jobs

from dlperf import logline
from dlperf.adapters import get_adapter
from dlperf.adapters.upstream import UpstreamAdapter
from dlperf.gpuproof import kit, proofmd, summary
from dlperf.gpuproof.suite import (
    missing_packages,
    missing_sources,
    revalidated_suite,
    tiny_suite,
    write_suite,
)
from dlperf.launch.allocation import Allocation
from dlperf.launch.facts import node_facts
from dlperf.launch.measured import measure_of
from dlperf.launch.outcome import record_outcome
from dlperf.launch.spec import Harness, RunSpec
from dlperf.layers import read_layer
from dlperf.matrix import Cell, CellSpec, expand_case
from dlperf.paths import ResultPaths


def test_the_gpu_suite_plans_every_case(tmp_path: Path) -> None:
    jobs = planned_jobs(
        tmp_path, "--config", f"suite={ROOT / 'config' / 'gpu.yaml'}", "device=auto"
    )
    cells = {w.split("cell=")[1].split(",")[0] for w in jobs["run_cell"]}
    assert len(jobs["run_cell"]) == 19 * 3
    assert "pytorch.resnet50.amp.noxla.b256.1n1g" in cells
    assert "jax.bert_base.amp.xla.b64.1n1g" in cells
    assert "pytorch.gpt.amp.xla.b4-llama1b.1n1g" in cells
    assert "pytorch.bert_base.amp.xla.b256-cudagraphs.1n1g" in cells
    assert "pytorch.bert_base.amp.xla.b512-cudagraphs_bf16.1n1g" in cells
    assert jobs["find_max_batch"] == ["cell=pytorch.bert_base.amp.noxla.bmax.1n1g"]
    # the upstream sources that need CUDA, at their current releases, on synthetic or mock data
    assert {
        "pytorch_examples.resnet50.fp32.noxla.b128.1n1g",
        "ngc_pytorch.resnet50.amp.noxla.b256.1n1g",
        "megatron.gpt.amp.noxla.b8.1n1g",
    } <= cells


def _upstream_cases() -> list[dict]:
    suite = read_layer(ROOT / "config" / "gpu.yaml").data
    upstream = [
        c for c in suite["cases"] if isinstance(get_adapter(c["framework"]), UpstreamAdapter)
    ]
    assert [n for n, c in enumerate(suite["cases"], 1) if c in upstream] == [15, 16, 17]
    return [dict(c) for c in upstream]


def test_the_gpu_suites_upstream_cases_run_from_dlperf_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cases 15-17 name sources_dir; without their checkouts each is not run, saying the command
    that makes them; with the entry script there, it runs (no other packages are asked for)."""
    cases = _upstream_cases()
    assert [c["framework"] for c in cases] == ["pytorch_examples", "ngc_pytorch", "megatron"]
    assert all(c["options"]["sources_dir"] == ".dlperf/sources" for c in cases)
    assert all(c["options"]["release"] == "current" for c in cases)
    cases = [dict(c, options=dict(c["options"], sources_dir=str(tmp_path))) for c in cases]
    assert [missing_sources(c) for c in cases] == [str(tmp_path)] * 3
    monkeypatch.chdir(ROOT)
    stage = summary.Stage(15, cases[0], ["pytorch_examples.resnet50.fp32.noxla.b128.1n1g"])
    kit.run_stage(stage, [stage], {}, 3, tmp_path, kit.Clock(100.0), ROOT / "config" / "gpu.yaml")
    assert stage.state == "not_run"
    assert stage.detail == (
        f"sources missing (run python -m dlperf sources config/gpu.yaml --into {tmp_path})"
    )
    commit = "77f55b912142e11fcfdf5b530231fb9c52f181e8"
    script = tmp_path / f"pytorch+examples@{commit}" / "imagenet" / "main.py"
    script.parent.mkdir(parents=True)
    script.write_text("")
    assert missing_sources(cases[0]) == "" and missing_packages(cases[0]) == []
    assert missing_sources(dict(cases[0], options={"release": "current"})) == ""  # no sources_dir
    # with its sources, a budget too small to begin it (on the H100, 2026-11-27, `--budget-s 100`
    # read "the budget was spent before it" at 0 s) says what it had and what a case needs
    kit.run_stage(stage, [stage], {}, 3, tmp_path, kit.Clock(100.0), ROOT / "config" / "gpu.yaml")
    assert stage.state == "not_run"
    assert stage.detail == (
        "100s of the 100s budget left; a case is begun with at least 105s "
        "(30s for its runs, 75s kept for the report)"
    )


def test_the_runs_get_an_absolute_sources_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runs' working folder is the kit's work folder: a relative sources_dir is made absolute
    against where the kit runs, in the suite Snakemake reads; the case as written keeps it."""
    monkeypatch.chdir(tmp_path)
    case = _upstream_cases()[2]
    written = write_suite({"name": "g"}, [case], tmp_path)
    [run] = read_layer(written).data["cases"]
    assert run["options"]["sources_dir"] == str(tmp_path / ".dlperf" / "sources")
    assert case["options"]["sources_dir"] == ".dlperf/sources"
    [tiny] = tiny_suite({"cases": [case]})["cases"]
    assert tiny["options"] == case["options"] and tiny["batch_size"] == [4]


def _gpt_case() -> dict:
    suite = read_layer(ROOT / "config" / "gpu.yaml").data
    [case] = [c for c in suite["cases"] if c["model"] == "gpt" and c["framework"] == "pytorch"]
    return dict(case)


def test_the_gpu_suites_gpt_case_is_llama_1b_at_sequence_2048() -> None:
    """Llama 3.2 1B's shapes, built on the meta device from the case's own model_config: 1.236 B
    parameters; no plain loop is run for it; the tiny suite keeps it a Llama."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    case = _gpt_case()
    given = dict(case["options"]["model_config"])
    config = AutoConfig.for_model(given.pop("model_type"), **given)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    assert sum(p.numel() for p in model.parameters()) == pytest.approx(1.2358e9, rel=1e-4)
    assert case["options"]["seq_len"] == 2048 and case["xla"] == [True]
    assert not kit.is_reference_case(case)
    [tiny] = tiny_suite({"cases": [case]})["cases"]
    assert tiny["options"]["model_config"]["model_type"] == "llama"
    assert tiny["options"]["seq_len"] == 32 and tiny["batch_size"] == [4]


def test_the_reference_loop_trains_its_cases_classes_and_clipping(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review: the plain loop always trained 1000 classes and clipped BERT at 1.0, whatever the
    case's num_classes and clip_grad_norm, and trained torchvision's whole ResNet-50 beside a
    built-in ResNet of the case's own model_config (depths [1, 1, 1, 1]: a third of the work),
    so vs_reference compared two networks. It now takes the case's num_classes and
    clip_grad_norm, and a ResNet case with a model_config of its own gets no reference."""
    import torch

    from dlperf.gpuproof import reference

    started: list[list[str]] = []

    def run(command: list[str], stdout: Any, **_: Any) -> subprocess.CompletedProcess:
        started.append(command)
        stdout.write(json.dumps({"throughput_samples_per_s": 1.0}) + "\n")
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(kit.subprocess, "run", run)
    options = {"num_classes": 10, "clip_grad_norm": 0.5, "cuda_amp_dtype": "bfloat16"}
    case = {"framework": "pytorch", "model": "resnet50", "batch_size": [4], "options": options}
    assert kit.is_reference_case(case)
    assert kit.run_reference(case, {}, tmp_path, kit.Clock(600))["status"] == "ok"
    flags = dict(zip(started[0][3::2], started[0][4::2], strict=True))
    assert (flags["--num-classes"], flags["--clip-grad-norm"]) == ("10", "0.5")
    assert flags["--cuda-amp-dtype"] == "bfloat16"  # the loop's AMP is the cell's
    assert reference.parse_args([*started[0][3:]]).cuda_amp_dtype == "bfloat16"
    model, _ = reference.resnet50(num_classes=10)
    assert model(torch.randn(2, 3, 32, 32)).shape == (2, 10)
    toy = dict(case, options=options | {"model_config": {"depths": [1, 1, 1, 1]}})
    assert not kit.is_reference_case(toy)
    with pytest.raises(SystemExit):
        reference.parse_args(
            ["--model", "resnet50", "--batch-size", "2", "--model-config", '{"depths": [1]}']
        )


def test_repeats_given_on_the_command_line_replace_the_suites(tmp_path: Path) -> None:
    """--repeats 1 spends a short session on every case once; without it, the suite's three."""
    suite = ["--out", str(tmp_path)]
    assert kit.proof_suite(kit.parse_args(suite))["repeats"] == 3
    assert kit.proof_suite(kit.parse_args([*suite, "--repeats", "1"]))["repeats"] == 1
    assert kit.proof_suite(kit.parse_args([*suite, "--tiny", "--repeats", "2"]))["repeats"] == 2
    stage = summary.Stage(1, {}, ["pytorch.resnet50.amp.noxla.b256.1n1g"])
    assert kit.stage_targets(stage, 2) == [
        f"results/runs/pytorch.resnet50.amp.noxla.b256.1n1g/r{r}/manifest.json" for r in (1, 2)
    ]


def test_the_bert_cuda_graphs_case_compiles_in_reduce_overhead_mode(tmp_path: Path) -> None:
    """Case 18: BERT-base AMP b256 through torch.compile's CUDA graphs, no plain loop beside it;
    its cell id names the variant, so it never shares a cell with case 5's default compile."""
    suite = read_layer(ROOT / "config" / "gpu.yaml").data
    case = suite["cases"][17]
    assert (case["model"], case["options"], case["batch_size"]) == (
        "bert_base",
        {"compile_mode": "reduce-overhead"},
        [256],
    )
    assert not kit.is_reference_case(case)
    [checked] = revalidated_suite(dict(suite, cases=[case]), "case 18 alone")["cases"]
    [cell] = expand_case(checked)
    assert cell.id == "pytorch.bert_base.amp.xla.b256-cudagraphs.1n1g"


def test_the_targets_hold_gpt_mfu_to_torchtitans() -> None:
    """The best GPT AMP cell's MFU against 33% (torchtitan's low end on H100s)."""
    proof = {
        "cases": [
            {"cells": {"pytorch.gpt.amp.xla.b4-llama1b.1n1g": {"mfu_pct": 36.5}}},
            {"cells": {"pytorch.gpt.amp.noxla.b4-llama1b.1n1g": {"mfu_pct": 28.0}}},
            {"cells": {"pytorch.bert_base.amp.noxla.b64.1n1g": {"mfu_pct": 20.0}}},
        ]
    }
    by_what = {t["what"].split(" AMP")[0]: t for t in summary.targets(proof)}
    assert by_what["GPT (Llama)"]["measured"] == 36.5 and by_what["GPT (Llama)"]["met"] is True
    assert by_what["BERT-base"]["measured"] == 20.0 and by_what["BERT-base"]["met"] is False
    assert by_what["ResNet-50"]["measured"] is None and by_what["ResNet-50"]["met"] is None


def _step(step: int, end: float, device_s: float) -> str:
    return logline.format_line(
        "step", rank=0, step=step, samples=8, start=f"{end - 0.1:.6f}", end=f"{end:.6f}",
        loss="1.0", device_s=f"{device_s:.6f}",
    )  # fmt: skip


def test_device_clock_check_compares_the_same_window(tmp_path: Path) -> None:
    """Host window 1.0 s, device window 0.98 s over steps 3-12: 2.04% apart, flagged."""
    log = tmp_path / "runs" / "c" / "r1" / "rank0.log"
    log.parent.mkdir(parents=True)
    lines = [_step(i, 100 + 0.1 * i, 0.098 * i) for i in range(1, 14)]
    log.write_text("\n".join(lines) + "\n")
    [check] = summary.device_clock_checks(ResultPaths(tmp_path), "c", warmup=2, measure=10)
    assert check["host_samples_per_s"] == pytest.approx(80.0)
    assert check["device_samples_per_s"] == pytest.approx(80 / 0.98, rel=1e-5)
    assert check["difference_pct"] == pytest.approx(2.041, abs=1e-3)
    assert check["within_tolerance"] is False


def test_a_cpu_log_has_no_device_clock_check(tmp_path: Path) -> None:
    log = tmp_path / "runs" / "c" / "r1" / "rank0.log"
    log.parent.mkdir(parents=True)
    log.write_text("dlperf-step rank=0 step=1 samples=8 start=1.0 end=2.0 loss=1\n" * 20)
    assert summary.device_clock_checks(ResultPaths(tmp_path), "c", 2, 10) == []


@pytest.mark.parametrize("median", [3.14, 314.0, 31400.0])
def test_the_ratio_to_the_plain_loop_keeps_four_significant_digits(median: float) -> None:
    """A CPU's slow cell (ratio 0.0388...) keeps as many digits as a GPU's (ratio 1.03...)."""
    cells = {"c": {"throughput_median": median}}
    ratio = summary._vs_reference({"status": "ok", "throughput_samples_per_s": 80.83}, cells)
    assert ratio["cell"] == "c"
    assert ratio["ratio"] == pytest.approx(median / 80.83, rel=5e-4)


@pytest.mark.integration
def test_tiny_proof_runs_references_and_cases_and_packs(tmp_path: Path) -> None:
    """Cases 3 and 4 (FP32 ResNet-50 and BERT) at a CPU's size, and case 7 (JAX), which this
    environment lacks: the references, the runs, the report, and seven files."""
    out, work = tmp_path / "out", tmp_path / "work"
    # a lock a killed Snakemake left (review: every later case and the report failed at once)
    locks = work / kit.gpu_folder(node_facts()) / ".snakemake" / "locks"
    locks.mkdir(parents=True)
    (locks / "0.output.lock").write_text(str(work))
    code = kit.main(
        ["--out", str(out), "--work", str(work), "--tiny", "--cases", "3,4,7", "--budget-s", "900"]
    )
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["proof.md", "proof.json", "report.en.html", "report.zh.html", "report.en.md",
         "tables.tar.gz", "logs.tar.gz"]
    )  # fmt: skip
    proof = json.loads((out / "proof.json").read_text())
    cases = {c["number"]: c for c in proof["cases"]}
    assert [cases[n]["state"] for n in (3, 4)] == ["done", "done"]
    for n in (3, 4):
        reference = cases[n]["reference"]
        assert reference["status"] == "ok" and reference["throughput_samples_per_s"] > 0
        [row] = cases[n]["cells"].values()
        assert row["status"] == "ok"
        ratio = row["throughput_median"] / reference["throughput_samples_per_s"]
        assert cases[n]["vs_reference"]["ratio"] == pytest.approx(ratio, rel=1e-3)
    assert "(2 layers)" in cases[4]["reference"]["source"]  # the suite's model config, as the runs
    assert cases[7]["state"] == "not_run" and "missing packages" in cases[7]["detail"]
    assert "case 7" in (out / "proof.md").read_text()
    with tarfile.open(out / "logs.tar.gz") as tar:
        names = tar.getnames()
    assert any(n.endswith("pytorch.resnet50.fp32.noxla.b4.1n1g/r1/rank0.log") for n in names)
    assert any(n.startswith("logs/reference.bert_base.fp32.b4.") for n in names)


def test_the_work_folder_is_the_gpu_models():
    """Review: a work folder carried from an H100 session into an H200 one kept the H100's runs
    and references as done, under the H200's name."""
    h100 = "NVIDIA H100 80GB HBM3, 81559 MiB, 550.54.15"
    assert kit.gpu_folder({"gpus": [h100] * 8}) == "nvidia-h100-80gb-hbm3"
    assert kit.gpu_folder({"gpus": []}) == "cpu"


@pytest.mark.integration
def test_a_proof_cut_off_by_sigterm_keeps_what_it_measured(tmp_path: Path) -> None:
    """Review: nothing was written to --out before the very end, so a command the device's time
    limit stopped came back empty. The proof is packed after every case and on SIGTERM, and the
    case's runs are cancelled."""
    out, work = tmp_path / "out", tmp_path / "work"
    command = [sys.executable, "-m", "dlperf", "gpu-proof", "--out", str(out), "--work", str(work)]
    command += ["--tiny", "--cases", "3,4", "--budget-s", "900"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    said = []
    for line in proc.stdout:  # case 3 done and packed; case 4 under way
        said.append(line)
        if "case 4 (" in line and " runs" in line:
            proc.send_signal(signal.SIGTERM)
            break
    rest, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, "".join(said) + rest
    proof = json.loads((out / "proof.json").read_text())
    assert proof["report"] == "not made: the command was terminated (SIGTERM)", proof["report"]
    cases = {c["number"]: c for c in proof["cases"]}
    assert cases[3]["state"] == "done"
    assert cases[4]["state"] != "done"
    assert not list((work / "cpu" / "results" / "runs").glob("*bert_base*/r*/manifest.json"))


def test_snakemake_runs_the_rules_python_from_the_kits_own_interpreter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review: the rules start `python -m dlperf run-cell` (and the upstream cases `python3`)
    from PATH, and each run trains with that interpreter. On the GPU machine a PATH led by the
    resolved folder of python3 (a virtual environment's link) found a python without torch."""
    own = Path(sys.executable).parent
    names = [n for n in ("python", "python3", Path(sys.executable).name) if (own / n).exists()]
    elsewhere = tmp_path / "bin"
    elsewhere.mkdir()
    for name in names:
        (elsewhere / name).write_text("#!/bin/sh\nexit 3\n")
        (elsewhere / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{elsewhere}{os.pathsep}/usr/bin")
    seen: dict[str, str] = {}

    class Finished:
        pid, returncode = 0, 0

        def __init__(self, command: list[str], **kwargs: Any) -> None:
            seen.update(kwargs["env"])

        def wait(self, timeout: float | None = None) -> int:
            return 0

    monkeypatch.setattr(kit.subprocess, "Popen", Finished)
    assert kit.snakemake(tmp_path, tmp_path / "suite.yaml", [], 10.0) == (0, False)
    for name in names:
        assert shutil.which(name, path=seen["PATH"]) == str(own / name)
    assert seen["PATH"].split(os.pathsep)[1:] == [str(elsewhere), "/usr/bin"]


@pytest.mark.parametrize(
    ("exit_code", "stopped", "said"),
    [
        (0, False, "made"),
        (2, False, "not made: Snakemake exit 2 (snakemake.log)"),
        (1, True, "not made: the budget ran out (snakemake.log)"),
        (0, True, "not made: the budget ran out (snakemake.log)"),
    ],
)
def test_the_proof_says_when_the_budget_stopped_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exit_code: int, stopped: bool, said: str
) -> None:
    """Review: a report the budget stopped read "Snakemake exit 1" (its exit on the kit's
    Ctrl-C), and "made" had it exited 0: the proof must say the budget stopped it."""

    def ran(stage: summary.Stage, *args: Any, **kwargs: Any) -> None:
        stage.state = "done"

    monkeypatch.setattr(kit, "run_stage", ran)
    monkeypatch.setattr(kit, "snakemake", lambda *args: (exit_code, stopped))
    out, work = tmp_path / "out", tmp_path / "work"
    argv = ["--out", str(out), "--work", str(work), "--tiny", "--cases", "3", "--budget-s", "60"]
    assert kit.main(argv) == 0
    assert json.loads((out / "proof.json").read_text())["report"] == said


def test_a_cuda_graphs_run_that_skipped_graphs_is_named_in_the_proof(tmp_path: Path) -> None:
    """Review: compile mode reduce-overhead runs a graph inductor cannot capture (a CPU tensor,
    a mutated input) without CUDA graphs and says so only in its counters: the run's figure,
    under the CUDA-graphs cell's id, was compile's default mode, unflagged."""
    cell = "pytorch.bert_base.amp.xla.b256-cudagraphs.1n1g"
    for run, skips in (("r1", 3), ("r2", 0)):
        log = tmp_path / "runs" / cell / run / "rank0.log"
        log.parent.mkdir(parents=True)
        memory = logline.format_line(
            "memory", rank=0, peak_rss_mb="900.0", peak_allocated_mb="5000.0", cudagraph_skips=skips
        )
        log.write_text(_step(1, 100.0, 0.1) + "\n" + memory + "\n")
    stage = summary.Stage(18, {"framework": "pytorch", "model": "bert_base"}, [cell], "done")
    proof = summary.build(tmp_path, [stage], {}, {"window": {"warmup": 2, "measure": 3}}, "made")
    assert proof["cases"][0]["cuda_graphs_skipped"] == [{"run": "r1", "cell": cell, "skips": 3}]
    said = proofmd.markdown(proof)
    assert f"- `{cell}` r1: 3 graphs ran without CUDA graphs" in said
    assert f"`{cell}` r2" not in said
    (tmp_path / "runs" / cell / "r1" / "rank0.log").write_text(_step(1, 100.0, 0.1) + "\n")
    assert summary.cuda_graph_skips(ResultPaths(tmp_path), cell) == []  # a CPU run's log


def _recorded(results: Path, cell_id: str, repeat: int, status: str, detail: str) -> None:
    """A run's manifest as the submitter writes it, its one task ended `status`."""
    cell = Cell.parse(cell_id)
    allocation = Allocation(
        nodes=1, tasks_per_node=1, gpus_per_node=0, cpus_per_task=1, devices_per_node=1
    )
    spec = RunSpec(
        cell, repeat, cell.framework, {}, 5, "cpu", 5.0, "local", allocation.as_dict(),
        results_root=str(results),
    )  # fmt: skip
    spec.paths.dir.mkdir(parents=True)
    outcome = {"task": 0, "node_rank": 0, "host": "vm", "log": "node0.log", "job_id": "42",
               "status": status, "detail": detail, "started_at": 0.0, "ended_at": 9.0}  # fmt: skip
    spec.paths.task_outcome(0).write_text(json.dumps(outcome))
    harness = Harness(backend="local", site={}, time_limit_min=5.0, wait_grace_s=0.0)
    measure = measure_of(
        CellSpec(cell, {}), {"window": {"warmup": 2, "measure": 3}, "device": "cpu"}
    )
    job = SimpleNamespace(job_id="42", state="COMPLETED")
    record = record_outcome(spec, allocation, harness, measure, job, None, "", 0.0, 10.0)
    record.write(spec.paths.manifest)


def test_the_proof_says_why_a_run_of_a_case_that_ran_failed(tmp_path: Path) -> None:
    """Review (a tiny run of cases 15-17): Snakemake ran each upstream case to its end, every
    run failed, and the proof said "Not done: nothing: every case ran", the runs' reasons in
    their manifests only: a GPU session must read why in what the command prints."""
    cell = "ngc_pytorch.resnet50.amp.noxla.b4.1n1g"
    why = "exit code 1; last line: ModuleNotFoundError: No module named 'dllogger'"
    _recorded(tmp_path, cell, 1, "failed", why)
    _recorded(tmp_path, cell, 2, "ok", "")
    assert summary.run_statuses(tmp_path, [cell]) == "failed:1 ok:1"
    stage = summary.Stage(16, {"framework": "ngc_pytorch", "model": "resnet50"}, [cell], "done")
    proof = summary.build(tmp_path, [stage], {}, {"window": {"warmup": 2, "measure": 3}}, "made")
    assert proof["cases"][0]["runs_not_ok"] == [
        {"cell": cell, "run": "r1", "status": "failed", "detail": why}
    ]
    said = proofmd.markdown(proof).split("## Not done")[1]
    assert f"- case 16 `{cell}` r1: failed, {why}" in said
    assert "every case ran" not in said and "r2" not in said
    stage.cells = ["pytorch.resnet50.fp32.noxla.b4.1n1g"]  # no run of it ended other than ok
    said = proofmd.markdown(summary.build(tmp_path, [stage], {}, {}, "made"))
    assert "- nothing: every case ran and every run ended ok" in said
