"""Shared fixtures, among them the runs of the built-in workloads that the workload contract
(test_workload_contract.py) and the frameworks' own test files read.

A built-in workload is run as the harness runs it: one process per rank, each the adapter's own
command() in the framework's own environment, at the adapter's tiny configuration
(BuiltinWorkload.tiny). Each contract run happens once a session (`workload_runs`): the contract
asserts what every framework shares, a framework's test file what only it states, on the same
logs."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest
from workflow_helpers import ROOT, framework_python, free_port, workload_env

from dlperf import logline
from dlperf.adapters import TaskContext, get_adapter
from dlperf.adapters.builtin import BuiltinWorkload
from dlperf.config import Suite, load
from dlperf.matrix import Cell, CellSpec, Layout
from dlperf.parse.records import StepRecord


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture(scope="module")
def suite(request: pytest.FixtureRequest) -> Suite:
    """The suite of the test module's SUITE_FILE (a config/*.yaml), loaded once a module."""
    path = getattr(request.module, "SUITE_FILE", None)
    assert path is not None, f"{request.module.__name__} names no SUITE_FILE for the suite fixture"
    return Suite(load(path))


@pytest.fixture(scope="module")
def cells(suite: Suite) -> dict[str, CellSpec]:
    """The suite's cell specs by cell id."""
    return {spec.id: spec for spec in suite.cell_specs()}


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Groups for pytest-xdist's `--dist loadgroup` (`make test` runs two workers): a file's
    tests stay together (its module fixtures run once), the files that read workload_runs share
    one worker (each run once a session), and so do the tests of the one Slurm test cluster.
    Groups holding integration or Slurm tests go first, so the long ones start at once and the
    many short ones fill in beside them."""
    check_frameworks_are_integration(items)
    shared = {item.path for item in items if "workload_runs" in getattr(item, "fixturenames", ())}
    slurm = {item.path for item in items if item.get_closest_marker("slurm")}

    def group(item: pytest.Item) -> str:
        if item.path in shared:
            return "workload_runs"
        return "slurm" if item.path in slurm else str(item.path.relative_to(ROOT))

    groups = {item.nodeid: group(item) for item in items}
    heavy = {
        groups[item.nodeid]
        for item in items
        if {"integration", "slurm"} & {m.name for m in item.iter_markers()}
    }
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        first.setdefault(groups[item.nodeid], index)
        item.add_marker(pytest.mark.xdist_group(groups[item.nodeid]))
    items.sort(key=lambda item: (groups[item.nodeid] not in heavy, first[groups[item.nodeid]]))


def check_frameworks_are_integration(items: list[pytest.Item]) -> None:
    """A test marked `frameworks` (another framework's own environment) is also `integration`:
    the fast lane, -m "not integration", never builds an environment."""
    stray = [
        item.nodeid
        for item in items
        if item.get_closest_marker("frameworks") and not item.get_closest_marker("integration")
    ]
    if stray:
        raise pytest.UsageError(
            f"{stray[0]} (and {len(stray) - 1} more) is marked frameworks but not integration: "
            "add @pytest.mark.integration, or the fast lane would build its environment"
        )


@dataclass(frozen=True)
class WorkloadRun:
    """One run of a built-in workload: its cell, resolved options, and every rank's log."""

    adapter: BuiltinWorkload
    cell: Cell
    options: dict[str, Any]
    logs: tuple[Path, ...]
    exit_codes: tuple[int, ...]

    def text(self, rank: int = 0) -> str:
        return self.logs[rank].read_text()

    def tails(self) -> str:
        return "\n".join(f"--- {log}\n{log.read_text()[-3000:]}" for log in self.logs)

    def check_ok(self) -> WorkloadRun:
        assert self.exit_codes == (0,) * len(self.logs), self.tails()
        return self

    def lines(self, kind: str, rank: int = 0) -> list[dict[str, str]]:
        """The fields of this rank's `dlperf-<kind>` lines (dlperf.logline)."""
        parsed = (logline.parse_line(line) for line in self.text(rank).splitlines())
        return [fields for found in parsed if found and found[0] == kind for fields in [found[1]]]

    def config(self, rank: int = 0) -> dict[str, str]:
        (config,) = self.lines(logline.CONFIG, rank)
        return config

    def records(self) -> list[StepRecord]:
        """The step records as the adapter's own parser reads them from every rank's log."""
        return self.adapter.parse(list(self.logs), self.cell, self.options).records


@dataclass
class WorkloadRuns:
    """The contract's runs, each once a session, and the frameworks' own variants (`run`, not
    kept). A framework whose environment cannot be built is skipped with the reason (a failure
    under CI=true, as workflow_helpers.framework_python has it)."""

    directory: Path
    _runs: dict[tuple[str, str], WorkloadRun] = field(default_factory=dict)
    _pythons: dict[str, str | BaseException] = field(default_factory=dict)
    _variants: int = 0

    batch: ClassVar[int] = 2  # per rank, in every contract run
    steps: ClassVar[int] = 3
    # the contract's typo: issue 20.10's, which trained a 12-layer BERT
    typo_key: ClassVar[str] = "num_hiden_layers"
    # the contract's out-of-memory, under a 3 GB address-space cap: a Wide & Deep of a billion
    # rows (its tables cannot be allocated: it fails before any step or compile) where the
    # adapter trains it, else a full-size ResNet-50 step (224 px, 1000 classes) of 256 images, as
    # the pytorch case of tests/data/tiny.yaml
    oom_cap: ClassVar[dict[str, Any]] = {"memory_limit_gb": 3}
    oom_vocab_size: ClassVar[int] = 10**9
    oom_batch: ClassVar[int] = 256
    # XLA's slowest optimisation passes off (JAX; TensorFlow's jit_compile): compiling is most
    # of a toy run's time
    env: ClassVar[dict[str, str]] = {
        "XLA_FLAGS": "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"
    }

    @staticmethod
    def adapter(framework: str) -> BuiltinWorkload:
        adapter = get_adapter(framework)
        assert isinstance(adapter, BuiltinWorkload), f"{framework} is not a built-in workload"
        return adapter

    @staticmethod
    def multi_rank_model(adapter: BuiltinWorkload) -> str:
        """The model the contract trains on two ranks (the others on one): insightface, whose
        partial FC draws on every rank (PyTorch's splits the classifier across them), where the
        adapter trains it, else resnet50."""
        return "insightface" if "insightface" in adapter.models else "resnet50"

    def cell(
        self, adapter: BuiltinWorkload, model: str, world: int = 1, batch: int | None = None
    ) -> Cell:
        """A contract cell: fp32, xla off where the adapter runs without it (JAX always
        compiles), `batch` (the contract's) per rank on `world` ranks of one node."""
        off = Cell(adapter.name, model, "fp32", False, self.batch, Layout(1, 1))
        xla = adapter.skip_reason(off, adapter.resolved_options({})) is not None
        return Cell(adapter.name, model, "fp32", xla, batch or self.batch, Layout(1, world))

    def tiny(self, framework: str, model: str) -> WorkloadRun:
        """`model` at the adapter's tiny configuration: on two ranks for multi_rank_model."""
        adapter = self.adapter(framework)
        world = 2 if model == self.multi_rank_model(adapter) else 1
        return self._kept(framework, model, self.cell(adapter, model, world), adapter.tiny[model])

    def typo(self, framework: str) -> WorkloadRun:
        """bert_base at the tiny configuration with typo_key among its model_config keys."""
        adapter = self.adapter(framework)
        tiny = adapter.tiny["bert_base"]
        options = tiny | {"model_config": tiny.get("model_config", {}) | {self.typo_key: 1}}
        return self._kept(framework, "typo", self.cell(adapter, "bert_base"), options)

    def oom(self, framework: str) -> WorkloadRun:
        """A run past the oom_cap: W&D's tables of oom_vocab_size rows where the adapter trains
        it, else a full-size ResNet-50 step of oom_batch images."""
        adapter = self.adapter(framework)
        if "wide_deep" in adapter.models:
            options = adapter.tiny["wide_deep"] | {"vocab_size": self.oom_vocab_size}
            cell = self.cell(adapter, "wide_deep")
        else:
            options = {"threads": adapter.tiny["resnet50"].get("threads", 0)}
            cell = self.cell(adapter, "resnet50", batch=self.oom_batch)
        return self._kept(framework, "oom", cell, options | self.oom_cap)

    def run(self, framework: str, cell: Cell, options: dict[str, Any]) -> WorkloadRun:
        """A framework's own variant of a contract run (another precision, xla...), not kept."""
        self._variants += 1
        directory = self.directory / framework / f"variant{self._variants}"
        return self._start(self.adapter(framework), cell, options, directory)

    def _kept(self, framework: str, name: str, cell: Cell, options: dict[str, Any]) -> WorkloadRun:
        if (framework, name) not in self._runs:
            directory = self.directory / framework / name
            run = self._start(self.adapter(framework), cell, options, directory)
            self._runs[framework, name] = run
        return self._runs[framework, name]

    def _python(self, framework: str) -> str:
        """The interpreter of the framework's environment, built once (its skip kept too)."""
        if framework not in self._pythons:
            try:
                built = self.adapter(framework).requirements and framework_python(framework)
                self._pythons[framework] = built or sys.executable
            except pytest.skip.Exception as skipped:
                self._pythons[framework] = skipped
        python = self._pythons[framework]
        if isinstance(python, BaseException):
            raise python
        return python

    def _start(
        self, adapter: BuiltinWorkload, cell: Cell, options: dict[str, Any], directory: Path
    ) -> WorkloadRun:
        """Every rank of `cell` on this machine, as the harness starts them (the rank variables,
        one rendezvous port), waited for."""
        python = self._python(adapter.name)
        resolved = adapter.resolved_options(options)
        world, port = cell.layout.gpus_per_node, free_port()
        directory.mkdir(parents=True, exist_ok=True)
        logs = tuple(directory / f"rank{rank}.log" for rank in range(world))
        ctx = TaskContext(
            cell=cell, options=resolved, steps=self.steps, device="cpu", rank=0, node_rank=0,
            nodes=1, gpus_per_node=world, master_addr="127.0.0.1", master_port=port,
            run_dir=directory, python=python,
        )  # fmt: skip
        procs = []
        for rank, log in enumerate(logs):
            command = adapter.command(dataclasses.replace(ctx, rank=rank))
            env = workload_env(
                RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                LOCAL_WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                **self.env,
            )  # fmt: skip
            with open(log, "w") as out:
                procs.append(
                    subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
                )
        return WorkloadRun(adapter, cell, resolved, logs, wait_all(procs))


def wait_all(procs: list[subprocess.Popen[bytes]], limit_s: float = 300) -> tuple[int, ...]:
    """Every process's exit code. Once one has failed, the others (ranks waiting for a peer
    that is gone) get 30 s before they are killed; none outlives limit_s."""
    deadline = time.monotonic() + limit_s
    try:
        while any(proc.poll() is None for proc in procs) and time.monotonic() < deadline:
            if any(proc.poll() for proc in procs):
                deadline = min(deadline, time.monotonic() + 30)
            time.sleep(0.1)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return tuple(proc.returncode for proc in procs)


@pytest.fixture(scope="session")
def workload_runs(tmp_path_factory: pytest.TempPathFactory) -> WorkloadRuns:
    return WorkloadRuns(tmp_path_factory.mktemp("workloads"))


def pytest_collection_finish(session: pytest.Session) -> None:
    """A worker whose tests lost their groups would start the Slurm test cluster twice and run
    the shared workloads twice: stop instead (pytest-xdist 3.8 groups by editing each item's
    node id, which pytest 9.2 no longer reads; pyproject.toml pins pytest below it)."""
    if getattr(session.config.option, "loadgroup", False):
        lost = [item.nodeid for item in session.items if "@" not in item.nodeid]
        if lost:
            raise pytest.UsageError(
                f"pytest-xdist did not group {lost[0]} and {len(lost) - 1} more"
            )
