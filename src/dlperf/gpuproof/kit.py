"""Run the GPU suite case by case within a time budget, the plain-loop references beside it, and
pack the report, tables and logs into at most eight files.

    python -m dlperf gpu-proof --out OUT [--suite config/gpu.yaml] [--budget-s 540] [--cases 1,2]

The cases run in the order the suite lists them. Before each, the plain loop of the same model,
precision and batch runs when the case is a built-in PyTorch one (dlperf.gpuproof.reference);
then Snakemake runs the case's runs in a working folder (`--work`, default .dlperf/gpu-proof, a
subfolder per GPU model). The proof is written and packed into `--out` after every case, and on
SIGTERM, so a command cut off keeps what it measured.
A case that would not end before the budget's reserve for the report is stopped (its runs are
cancelled, as Ctrl-C does) and named as not done; so is one whose packages are missing, and an
upstream case whose checkout (option sources_dir, made by `dlperf sources`) is missing. The
tables and reports are then made for the cases that ran. Running the command again goes on
where the last one stopped: Snakemake redoes nothing that is done.

`--tiny` shrinks every model to a CPU's size (the test of this kit on a machine without a GPU)."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlperf.adapters import get_adapter
from dlperf.argtypes import above, count, counts
from dlperf.defaults import case_setting
from dlperf.errors import ConfigError
from dlperf.gpuproof import pack, proofmd, summary
from dlperf.gpuproof.suite import (
    missing_packages,
    missing_sources,
    revalidated_suite,
    tiny_suite,
    validated_suite,
    write_suite,
)
from dlperf.gpuproof.summary import Stage, suite_window
from dlperf.launch.facts import gpu_models, node_facts
from dlperf.layers import read_layer
from dlperf.matrix import expand_case
from dlperf.paths import RESULTS, RUN_MANIFEST_PATTERN, WORKFLOW_DIR
from dlperf.status import Status
from dlperf.util import atomic_write_json

REPO = WORKFLOW_DIR
GPU_SUITE = REPO / "config" / "gpu.yaml"
REPORT_RESERVE_S = 75.0  # kept for the tables, reports and packing after the last case
CASE_LEAST_S = 30.0  # the least a case's runs get after its reference: less, it is not begun
PACK_RESERVE_S = 20.0  # of which the packing's, after the report
REFERENCE_TIMEOUT_S = 240.0  # or less: what the budget leaves before the report's reserve


@dataclass
class Clock:
    budget_s: float
    started: float = field(default_factory=time.monotonic)

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def left(self) -> float:
        return self.budget_s - self.elapsed()

    def say(self, message: str) -> None:
        print(f"[{self.elapsed():5.0f}s] {message}", flush=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    summary = " ".join(__doc__.split("\n\n")[0].split())  # the docstring's first paragraph
    p = argparse.ArgumentParser(prog="dlperf gpu-proof", description=summary)
    p.add_argument("--out", type=Path, required=True, help="folder for the packed files")
    p.add_argument("--suite", type=Path, default=GPU_SUITE)
    p.add_argument("--work", type=Path, default=Path(".dlperf/gpu-proof"))
    p.add_argument("--budget-s", type=above(0), default=540.0, help="wall time for everything")
    p.add_argument("--cases", type=counts, help="case numbers to run, e.g. 1,2,5 (default: all)")
    p.add_argument("--tiny", action="store_true", help="CPU-sized models and window (tests)")
    p.add_argument(
        "--repeats",
        type=count,
        help="runs per cell instead of the suite's (1: every case once in a short session; a "
        "later call with more adds runs, keeping those made)",
    )
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    clock = Clock(args.budget_s)
    facts = node_facts()
    # one work folder per GPU model: a folder carried into a session on another GPU must not
    # keep the first GPU's runs and references as done under the second one's name
    work = (args.work / gpu_folder(facts)).resolve()
    work.mkdir(parents=True, exist_ok=True)
    validated = validated_suite(args.suite)  # a bad suite stops here, naming its line and key
    base = proof_suite(args)
    if changed_by := _changes(args):
        validated = revalidated_suite(base, changed_by)
    stages = [
        Stage(n, base["cases"][n - 1], [s.id for s in expand_case(validated["cases"][n - 1])])
        for n in _numbers(args.cases, len(base["cases"]))
    ]
    pack.prepare(args.out)  # before any case: its runs are packed there
    clock.say(f"gpu-proof: {len(stages)} cases of {args.suite}, budget {args.budget_s:.0f}s")
    clock.say(f"GPUs: {', '.join(facts['gpus']) or 'none'}; work folder {work}")

    def write_out(report_state: str) -> dict[str, Any]:
        """The proof so far, packed into --out: the command may be cut off at any point."""
        proof = summary.build(work / RESULTS, stages, facts, base, report_state)
        atomic_write_json(work / "proof.json", proof)
        (work / "proof.md").write_text(proofmd.markdown(proof))
        files = pack.pack(work, args.out.resolve())
        clock.say(f"wrote {len(files)} files to {args.out}: {', '.join(f.name for f in files)}")
        return proof

    previous = signal.signal(signal.SIGTERM, _terminated)
    report_state = "not made: no case ran"
    try:
        for stage in stages:
            run_stage(stage, stages, base, validated["repeats"], work, clock, args.suite)
            if stage.state not in ("not_run", "pending"):
                write_out("not made yet: cases still to run")
        done = [s for s in stages if s.state == "done" or (s.state == "failed" and s.cells)]
        if done:
            clock.say("tables and reports")
            suite_file = write_suite(base, [s.case for s in done], work)
            code, stopped = snakemake(work, suite_file, [], clock.left() - PACK_RESERVE_S)
            why = "the budget ran out" if stopped else f"Snakemake exit {code}"
            report_state = f"not made: {why} (snakemake.log)" if code or stopped else "made"
    except Terminated:
        report_state = "not made: the command was terminated (SIGTERM)"
    finally:
        signal.signal(signal.SIGTERM, previous)
        proof = write_out(report_state)
    print(proofmd.markdown(proof), flush=True)
    return 0


class Terminated(Exception):
    """SIGTERM (a device's time limit): what was measured is written and packed, then exit."""


def _terminated(signum: int, frame: Any) -> None:
    raise Terminated()


def gpu_folder(facts: dict[str, Any]) -> str:
    """The work subfolder of this machine's GPU model: `nvidia-h100-80gb-hbm3`, or `cpu`."""
    text = "-".join(sorted(gpu_models(facts))).lower() or "cpu"
    return "".join(c if c.isalnum() else "-" for c in text).strip("-")


def proof_suite(args: argparse.Namespace) -> dict[str, Any]:
    """The suite the command runs: as written (dlperf's one YAML loader: a key twice is an error),
    at a CPU's size with --tiny, with --repeats runs per cell where given."""
    base = dict(read_layer(args.suite).data)
    if args.tiny:
        base = tiny_suite(base)
    if args.repeats is not None:
        base["repeats"] = args.repeats
    return base


def _changes(args: argparse.Namespace) -> str:
    """The flags that change the suite file's content (proof_suite), as an error names them."""
    flags = ["--tiny"] if args.tiny else []
    flags += [] if args.repeats is None else [f"--repeats {args.repeats}"]
    return " ".join(flags)


def _numbers(numbers: list[int] | None, cases: int) -> list[int]:
    bad = [n for n in numbers or [] if not 1 <= n <= cases]
    if bad:
        raise ConfigError(f"--cases {bad}: the suite has cases 1 to {cases}")
    return numbers or list(range(1, cases + 1))


def run_stage(
    stage: Stage,
    stages: list[Stage],
    base: dict[str, Any],
    repeats: int,
    work: Path,
    clock: Clock,
    suite: Path = GPU_SUITE,
) -> None:
    label = f"case {stage.number} ({', '.join(stage.cells)})"
    missing = missing_packages(stage.case)
    if missing:
        stage.state, stage.detail = "not_run", f"missing packages: {', '.join(missing)}"
        clock.say(f"{label}: not run, {stage.detail}")
        return
    sources_dir = missing_sources(stage.case)
    if sources_dir:
        command = f"python -m dlperf sources {_shown(suite)} --into {sources_dir}"
        stage.state, stage.detail = "not_run", f"sources missing (run {command})"
        clock.say(f"{label}: not run: {stage.detail}")
        return
    if clock.left() < REPORT_RESERVE_S + CASE_LEAST_S:
        stage.state = "not_run"
        stage.detail = (  # a budget too small at the start reads as such, not as "spent"
            f"{max(clock.left(), 0):.0f}s of the {clock.budget_s:.0f}s budget left; a case is "
            f"begun with at least {REPORT_RESERVE_S + CASE_LEAST_S:.0f}s ({CASE_LEAST_S:.0f}s "
            f"for its runs, {REPORT_RESERVE_S:.0f}s kept for the report)"
        )
        clock.say(f"{label}: not run, {stage.detail}")
        return
    started = time.monotonic()
    if is_reference_case(stage.case):
        stage.reference = run_reference(stage.case, base, work, clock)
    earlier = [s.case for s in stages if s.state in ("done", "failed") and s.cells]
    suite_file = write_suite(base, [*earlier, stage.case], work)
    targets = stage_targets(stage, repeats)
    clock.say(f"{label}: {len(targets)} runs")
    code, stopped = snakemake(work, suite_file, targets, clock.left() - REPORT_RESERVE_S)
    stage.seconds = time.monotonic() - started
    if stopped:
        stage.state = "stopped"
        stage.detail = f"stopped after {stage.seconds:.0f}s: the budget's reserve for the report"
    elif code != 0:
        stage.state, stage.detail = "failed", f"Snakemake exit {code} (see snakemake.log)"
    else:
        stage.state = "done"
    statuses = summary.run_statuses(work / RESULTS, stage.cells)
    clock.say(f"{label}: {stage.state} in {stage.seconds:.0f}s; runs {statuses or 'none'}")
    for run in summary.runs_not_ok(work / RESULTS, stage.cells):  # why, in the command's output
        clock.say(f"  {run['cell']} {run['run']}: {run['status']}, {run['detail']}")


def stage_targets(stage: Stage, repeats: int) -> list[str]:
    """The run manifests of a case's cells, repeats 1 to `repeats`: what Snakemake is asked for."""
    return [
        RUN_MANIFEST_PATTERN.format(cell=cell, repeat=r)
        for cell in stage.cells
        for r in range(1, repeats + 1)
    ]


def _shown(path: Path) -> str:
    """A path as the user would type it here: relative to the working folder where it is inside."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def is_reference_case(case: dict[str, Any]) -> bool:
    """A built-in PyTorch case of one numeric batch size, eager, of a model with a plain loop:
    the loop is comparable. Not a ResNet-50 of a model_config of its own: the loop's is
    torchvision's whole ResNet-50, and the ratio would compare two networks."""
    from dlperf.gpuproof.reference import MODELS  # here: that module imports torch

    return (
        case["framework"] == "pytorch"
        and case["model"] in MODELS
        and not any(case_setting(case, "xla"))
        and all(isinstance(b, int) for b in case["batch_size"])
        and not (case["model"] == "resnet50" and case.get("options", {}).get("model_config"))
    )


def run_reference(
    case: dict[str, Any], base: dict[str, Any], work: Path, clock: Clock
) -> dict[str, Any]:
    """The plain loop at the case's first precision and batch size, with the suite's window.
    The suite is as written (a key left out: the schema's default; an option: the adapter's)."""
    options = get_adapter(case["framework"]).options | case.get("options", {})
    warmup, measure = suite_window(base)
    model, batch = case["model"], case["batch_size"][0]
    precision = case_setting(case, "precision")[0]
    command = [
        sys.executable, "-m", "dlperf.gpuproof.reference",
        "--model", model,
        "--batch-size", str(batch),
        "--precision", precision,
        "--warmup", str(warmup),
        "--measure", str(measure),
        "--image-size", str(options["image_size"]),
        "--seq-len", str(options["seq_len"]),
        "--max-predictions", str(options["max_predictions"]),
        "--num-classes", str(options["num_classes"]),
        "--clip-grad-norm", str(options["clip_grad_norm"]),
        "--model-config", json.dumps(options["model_config"]),
        "--cuda-amp-dtype", options["cuda_amp_dtype"],
    ]  # fmt: skip
    # the log is kept for the next call: its name says exactly what it measured
    digest = hashlib.sha1(" ".join(command[3:]).encode()).hexdigest()[:10]
    log = work / "logs" / f"reference.{model}.{precision}.b{batch}.{digest}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    earlier = _reference_result(log)
    if earlier:  # this command ran it before, in this work folder: going on, not redoing
        clock.say(f"reference loop: {model} {precision} b{batch}: kept from {log}")
        return {"status": Status.OK, "log": log.name} | earlier
    clock.say(f"reference loop: {model} {precision} b{batch}")
    timeout_s = max(1.0, min(REFERENCE_TIMEOUT_S, clock.left() - REPORT_RESERVE_S - CASE_LEAST_S))
    try:
        with open(log, "w") as out:
            finished = subprocess.run(
                command, stdout=out, stderr=subprocess.STDOUT, timeout=timeout_s
            )
    except subprocess.TimeoutExpired:
        return {"status": Status.TIMEOUT, "detail": f"over {timeout_s:.0f}s", "log": log.name}
    result = _reference_result(log)
    if finished.returncode != 0 or not result:
        tail = log.read_text().strip().splitlines()[-1:] or ["no output"]
        return {"status": Status.FAILED, "detail": tail[0][:300], "log": log.name}
    clock.say(f"reference loop: {result['throughput_samples_per_s']:.1f} samples/s")
    return {"status": Status.OK, "log": log.name} | result


def _reference_result(log: Path) -> dict[str, Any] | None:
    """The JSON line a finished reference loop printed last, if its log has one."""
    if not log.exists():
        return None
    lines = [line for line in log.read_text().splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else None


def snakemake(work: Path, suite: Path, targets: list[str], timeout_s: float) -> tuple[int, bool]:
    """Run the workflow in `work` (its own results/ and .snakemake/); (exit code, stopped).

    Past `timeout_s` the whole process group gets SIGINT, as Ctrl-C: each waiting run cancels its
    job and leaves no manifest, so nothing half-measured is read as done."""
    command = [
        sys.executable, "-m", "snakemake",
        *targets,  # before --config, which takes every word after it
        "--snakefile", str(REPO / "Snakefile"),
        "--directory", str(work),
        "--cores", str(os.cpu_count() or 1),
        "--keep-going",
        "--nolock",  # one Snakemake at a time here; a lock a killed one left must not stop the rest
        "--config", f"suite={suite}",
    ]  # fmt: skip
    with open(work / "snakemake.log", "a") as log:
        log.write(f"\n$ {' '.join(command)}\n")
        log.flush()
        env = own_interpreter_first(os.environ)
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env
        )
        try:
            return process.wait(timeout=max(timeout_s, 1.0)), False
        except subprocess.TimeoutExpired:
            _stop(process)
            return process.returncode, True
        except BaseException:  # SIGTERM to the kit: its runs are cancelled too
            _stop(process)
            raise


def own_interpreter_first(environ: Mapping[str, str]) -> dict[str, str]:
    """PATH led by this interpreter's folder (not resolved: the GPU machine's python3 is a virtual
    environment's link): the rules' `python` and the upstream cases' `python3` are this one."""
    folder = str(Path(sys.executable).parent)
    return dict(environ, PATH=os.pathsep.join([folder, environ.get("PATH", os.defpath)]))


def _stop(process: subprocess.Popen) -> None:
    """Ctrl-C to Snakemake's group (each waiting run cancels its job), then SIGKILL at 30 s."""
    os.killpg(process.pid, signal.SIGINT)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


if __name__ == "__main__":
    sys.exit(main())
