"""The contract every built-in workload keeps, run for every built-in adapter of the registry and
every model it trains, at the tiny configuration the adapter declares (BuiltinWorkload.tiny).

Each run is the adapter's own command() in the framework's own environment, one process per rank
as the harness starts them (conftest.WorkloadRuns: each run once a session; a framework's own
test file reads the same runs for what only that framework states):

- fp32, xla off where the adapter has it, 2 samples per rank for 3 steps: `dlperf-step` lines
  that the adapter's parser reads into steps 1..3 of 2 samples each on every rank, one after
  another; a `dlperf-config` line naming the model, the device and the world size; a
  `dlperf-flops` line with a positive per-sample count; a `dlperf-memory` line on every rank;
- one model per adapter on two ranks (WorkloadRuns.multi_rank_model): data parallel over gloo
  (or the framework's own CPU collectives), every rank training every step, where the adapter
  runs two processes on a CPU;
- a model_config typo (WorkloadRuns.typo_key) stops the run with an error naming the key;
- a run past an address-space cap (WorkloadRuns.oom: W&D's tables of a billion rows, or a
  full-size ResNet-50 step) is an out-of-memory that dlperf.launch.oom.is_oom recognises, as the
  harness reads a failed task's log.

A new built-in framework is covered once its adapter is in the registry with `tiny` for every
model it trains; an environment that cannot be built skips its cases with the reason.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pytest
from workflow_helpers import framework_param

from dlperf import logline
from dlperf.adapters import REGISTRY
from dlperf.adapters.builtin import BuiltinWorkload
from dlperf.launch.oom import is_oom

if TYPE_CHECKING:
    from conftest import WorkloadRuns

BUILTIN = [name for name, cls in REGISTRY.items() if issubclass(cls, BuiltinWorkload)]
# marked `frameworks` where the framework has its own environment (all but PyTorch)
CASES = [framework_param(name, model) for name in BUILTIN for model in REGISTRY[name].models]
FRAMEWORKS = [framework_param(name) for name in BUILTIN]


def test_every_builtin_adapter_has_a_valid_tiny_configuration_of_every_model(
    workload_runs: WorkloadRuns,
) -> None:
    assert {"pytorch", "jax", "tensorflow", "paddlepaddle", "mxnet"} <= set(BUILTIN)
    for name in BUILTIN:
        adapter = workload_runs.adapter(name)
        assert set(adapter.tiny) == set(adapter.models), name
        assert {"resnet50", "bert_base"} <= set(adapter.models), name  # the typo and OOM runs'
        for model, options in adapter.tiny.items():
            xla = workload_runs.cell(adapter, model).xla
            case = {"framework": name, "model": model, "batch_size": [2], "layouts": ["1n2g"]}
            case |= {"xla": [xla]}
            adapter.check_case(case | {"options": options})  # every key an option, each valid


@pytest.mark.integration
@pytest.mark.parametrize(("framework", "model"), CASES)
def test_tiny_run_logs_its_steps_flops_and_memory(
    framework: str, model: str, workload_runs: WorkloadRuns
) -> None:
    run = workload_runs.tiny(framework, model).check_ok()
    batch, steps, world = workload_runs.batch, workload_runs.steps, len(run.logs)
    records = run.records()
    for rank in range(world):
        mine = [r for r in records if r.rank == rank]
        assert [r.step for r in mine] == list(range(1, steps + 1)), (rank, run.tails())
        assert all(r.samples == batch for r in mine)
        assert all(r.time_s >= r.start_s for r in mine)
        assert all(b.start_s >= a.time_s for a, b in zip(mine, mine[1:], strict=False))
        (memory,) = run.lines(logline.MEMORY, rank)
        assert memory["rank"] == str(rank) and float(memory["peak_rss_mb"]) > 0
    assert sum(r.samples for r in records) == batch * steps * world
    config = run.config()
    assert (config["model"], config["device"]) == (model, "cpu")
    assert config["world_size"] == str(world)
    flops = run.lines(logline.FLOPS)[0]
    assert float(flops["per_sample"]) > 0 and math.isfinite(float(flops["per_sample"])), flops


@pytest.mark.integration
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_two_processes_train_data_parallel(framework: str, workload_runs: WorkloadRuns) -> None:
    adapter = workload_runs.adapter(framework)
    model = workload_runs.multi_rank_model(adapter)
    reason = adapter.skip_reason(
        workload_runs.cell(adapter, model, 2), adapter.resolved_options({})
    )
    if reason:
        pytest.skip(f"{framework} runs no two processes on a CPU: {reason}")
    run = workload_runs.tiny(framework, model).check_ok()
    assert len(run.logs) == 2
    trained = sorted((r.rank, r.step) for r in run.records())
    assert trained == [
        (rank, step) for rank in (0, 1) for step in range(1, workload_runs.steps + 1)
    ]
    assert run.config()["world_size"] == "2"  # rank 0's; some workloads log it there only


@pytest.mark.integration
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_model_config_typo_stops_the_run_naming_the_key(
    framework: str, workload_runs: WorkloadRuns
) -> None:
    run = workload_runs.typo(framework)
    text = run.text()
    assert run.exit_codes[0] != 0, text[-3000:]
    assert workload_runs.typo_key in text and not run.lines(logline.STEP), text[-3000:]
    assert not is_oom(text)  # the harness reads it as failed, not out of memory


@pytest.mark.integration
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_out_of_memory_is_recognised(framework: str, workload_runs: WorkloadRuns) -> None:
    run = workload_runs.oom(framework)
    text = run.text()
    assert run.exit_codes[0] != 0 and not run.lines(logline.STEP), text[-3000:]
    assert is_oom(text), text[-3000:]
