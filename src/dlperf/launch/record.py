"""A run's record (its manifest.json): written once, last, by the submitter; read by every later
stage (tables, repeats, compare, the report's provenance, the CLI) through this one class.

Its `measure` (what the run measured) is dlperf.launch.measured's `measure_of`, the run rule's
param: the record's measure and the tables' freshness check are the same value.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from dlperf import SCHEMA_VERSION, __version__
from dlperf.adapters import Adapter, get_adapter
from dlperf.adapters.base import Launcher
from dlperf.adapters.releases import DEFAULT_RELEASE
from dlperf.i18n import Phrase, english
from dlperf.jsontypes import conforms, shown, type_name
from dlperf.launch.facts import gpu_models
from dlperf.launch.measured import MEASURE_FIELDS, measure_digest
from dlperf.launch.ranin import RanIn
from dlperf.launch.taskoutcome import TaskOutcome, mistyped_task
from dlperf.matrix import Cell
from dlperf.parse.records import ParseError
from dlperf.paths import RunPaths
from dlperf.status import RUN_STATUSES, Status, run_status, worst
from dlperf.util import atomic_write_json

REQUIRED = ("cell", "repeat", "status", "adapter", "measure", "tasks")


@dataclass(frozen=True)
class RunRecord:
    """One run: what it measured, what became of it, where and when it ran."""

    cell: dict[str, Any]  # Cell.key() of the cell as planned (`max` stays `max`)
    repeat: int
    status: str
    adapter: dict[str, str]  # name, version, launcher (and an upstream release)
    measure: dict[str, Any]  # measure_of(...): the run rule's param
    tasks: list[dict[str, Any]]  # each task's outcome: task, log, status, host, times...
    status_detail: str = ""
    backend: str = ""
    allocation: dict[str, Any] = field(default_factory=dict)
    batch_size_resolved: int | None = None  # what a `max` cell's search found
    options_resolved: dict[str, Any] = field(default_factory=dict)  # a swept `max`'s: {option: n}
    job_id: str | None = None
    # the scheduler's state where it decided the outcome (a task never reported), NOT_SUBMITTED,
    # or TASKS_REPORTED: every task's outcome came, and the scheduler was not asked
    job_state: str = ""
    nodes: dict[str, Any] = field(default_factory=dict)  # node facts, per host#node
    hosts: list[str] = field(default_factory=list)
    node_names: list[str] = field(default_factory=list)
    submitted_at: float | None = None
    started_at: float | None = None
    ended_at: float | None = None
    noticed_at: float | None = None
    python: str = ""
    environment: dict[str, Any] | None = None  # the framework's own environment, if it has one
    site: dict[str, Any] = field(default_factory=dict)
    time_limit_min: float | None = None  # the limit it ran under (None: recorded before)
    schema_version: int = SCHEMA_VERSION
    dlperf_version: str = __version__
    path: Path | None = field(default=None, compare=False)  # where it was read from (not saved)

    # --- reading and writing ---

    @classmethod
    def read(cls, path: Path) -> RunRecord:
        """The record at `path`, checked: readable JSON, every required key, a known status, a
        version this dlperf can read, and a run of the folder it lies in. Else a ParseError
        naming the file (the run becomes a parse_error; deleting the manifest redoes it)."""
        try:
            data = json.loads(path.read_text())
        except OSError as err:
            raise ParseError(f"cannot read the manifest: {err.strerror}", path) from None
        except ValueError as err:
            raise ParseError(
                f"the manifest is not valid JSON ({err}); delete it to redo the run",
                path,
                getattr(err, "lineno", None),
            ) from None
        if not isinstance(data, dict):
            raise ParseError("the manifest is not a JSON object; delete it to redo the run", path)
        missing = [k for k in REQUIRED if k not in data]
        if missing:
            raise ParseError(
                f"the manifest lacks {', '.join(missing)}; delete it to redo the run", path
            )
        wrong = _mistyped(data)
        if wrong:
            raise ParseError(f"the manifest's {wrong}; delete it to redo the run", path)
        if data.get("schema_version", 0) > SCHEMA_VERSION:
            raise ParseError(
                f"the manifest is of schema {data['schema_version']}, newer than this dlperf's "
                f"{SCHEMA_VERSION}: read it with the dlperf that wrote it ({data.get('dlperf_version')})",
                path,
            )
        if data["status"] not in RUN_STATUSES:
            raise ParseError(f"the manifest's status {data['status']!r} is not a run's", path)
        record = cls(**{k: v for k, v in data.items() if k in _FIELD_TYPES}, path=path)
        record._check_tasks(path)
        record._check_run(path)
        record._check_status_is_the_tasks(path)
        return record

    def _check_tasks(self, path: Path) -> None:
        """Each task's outcome is one a task of this run can have (TaskOutcome.problem)."""
        for task in self.task_outcomes:
            problem = task.problem(self.status)
            if problem:
                raise ParseError(
                    f"the manifest's task {task.task} {problem}; delete it to redo the run", path
                )

    def _check_status_is_the_tasks(self, path: Path) -> None:
        """Where every task the layout launches reported its status, the run's is theirs
        (status.run_status; the worst, as recorded before it): oom written over tasks that each
        ended ok would show a run that trained as one that could not. Records from before task
        statuses are left as they are."""
        if len(self.tasks) < self.launched_tasks or not all("status" in t for t in self.tasks):
            return
        outcomes = [(t.status, t.ended_at) for t in self.task_outcomes]
        tasks = run_status(outcomes)
        if self.status not in (tasks, worst(s for s, _ in outcomes)):
            raise ParseError(
                f"the manifest's status is {self.status}, but its tasks' (the worst, but for "
                f"timeouts that hung on a failure) is {tasks}; delete it to redo the run",
                path,
            )

    def _check_run(self, path: Path) -> None:
        """The run the record states is one run, the one of its folder. A manifest copied from
        another run (another cell's, or repeat 1's as repeat 2) would move that measurement into
        this folder's cell; a cell whose columns disagree with its id, or an adapter other than
        the cell's framework, would file or parse it as another cell's."""
        try:
            stated = Cell.parse(self.cell_id).key()
        except ValueError as err:
            raise ParseError(
                f"the manifest's cell: {err}; delete it to redo the run", path
            ) from None
        differ = [k for k, v in self.cell.items() if k in stated and v != stated[k]]
        if differ:
            raise ParseError(
                f"the manifest's cell {', '.join(f'{k}={self.cell[k]!r}' for k in differ)} "
                f"disagrees with its cell id {self.cell_id}; delete it to redo the run",
                path,
            )
        if self.adapter_name != stated["framework"]:
            raise ParseError(
                f"the manifest's adapter {self.adapter_name!r} is not its cell's framework "
                f"{stated['framework']!r}; delete it to redo the run",
                path,
            )
        try:
            folder = RunPaths.of_manifest(path)
        except ValueError:
            return  # read outside a results tree (a copy, a test): nothing to hold it to
        if (self.cell_id, self.repeat) != (folder.cell_id, folder.repeat):
            raise ParseError(
                f"the manifest is of {self.cell_id} r{self.repeat}, not of the run of its folder "
                f"({folder.cell_id} r{folder.repeat}); delete it to redo the run",
                path,
            )

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        del data["path"]
        return data

    def write(self, path: Path) -> RunRecord:
        """Write the record, then the marker of its measure (RunPaths.measured): one changed since
        is read again (measured.recorded_stale), as a timeout, which has none, always is."""
        for old in path.parent.glob("measured-*"):
            old.unlink()
        atomic_write_json(path, self.to_json())
        if self.status != Status.TIMEOUT:
            (path.parent / f"measured-{self.measure_digest}").touch()
        return replace(self, path=path)

    # --- what every reader asks of it ---

    @property
    def cell_id(self) -> str:
        return str(self.cell.get("cell_id", ""))

    @property
    def planned_cell(self) -> Cell:
        """The cell its id names (read checks that the record's cell columns agree with it)."""
        return Cell.parse(self.cell_id)

    @property
    def trained_cell(self) -> Cell:
        """The cell as the workload trained it: a `max` cell at the batch size found for it."""
        cell = self.planned_cell
        batch = self.trained_batch_size
        return replace(cell, batch_size=batch) if batch is not None else cell

    @property
    def trained_batch_size(self) -> int | None:
        """The batch size per device it trained with (None: a `max` run that never got one)."""
        if self.batch_size_resolved is not None:
            return int(self.batch_size_resolved)
        batch = str(self.cell.get("batch_size", ""))
        return int(batch) if batch.isdigit() else None

    @property
    def trained_device(self) -> str | None:
        """The device it trained on: the measure's, with `auto` resolved to cpu where every
        node it ran on reported no GPU (the built-in workloads take CUDA only where it is);
        None where that cannot be told (auto on a node with GPUs, no node facts)."""
        device = self.measured_device
        if device != "auto":
            return device
        facts = [f for f in self.nodes.values() if isinstance(f, dict)]
        if facts and all(f.get("gpus") == [] for f in facts):
            return "cpu"
        return None

    @property
    def hardware(self) -> str:
        """What its nodes trained on: GPU models (not their count: a Slurm job sees only its
        own GPUs) or a CPU's model; '' without node facts (dlperf.measure.runflags)."""
        kinds = set()
        for facts in (f for f in self.nodes.values() if isinstance(f, dict)):
            gpus = gpu_models(facts)
            if gpus and self.trained_device != "cpu":
                kinds |= gpus
            elif facts.get("cpu_model"):
                kinds.add(str(facts["cpu_model"]))
        return "; ".join(sorted(kinds))

    @property
    def cores_per_rank(self) -> int | None:
        """The CPU cores each rank of a built-in workload trained on, when it trained on a CPU:
        option threads, or (0) the node's usable cores over its ranks, as every built-in
        workload sets its threads. None on a GPU, for an upstream source, or without node facts."""
        if self.trained_device != "cpu" or "threads" not in self.options:
            return None
        if self.options["threads"]:
            return int(self.options["threads"])
        usable = [f.get("cpus_usable") for f in self.nodes.values() if isinstance(f, dict)]
        cores = min((int(c) for c in usable if isinstance(c, int) and c > 0), default=None)
        ranks = self.planned_cell.layout.gpus_per_node
        return max(1, cores // ranks) if cores else None

    @property
    def adapter_name(self) -> str | None:
        """The adapter that ran it (read checks that it is the cell's framework)."""
        return self.adapter.get("name")

    @property
    def adapter_version(self) -> str | None:
        """The adapter's version: the framework's, or an upstream source's release."""
        return self.adapter.get("version")

    @property
    def release(self) -> str:
        """The release of its upstream source that ran (DLPerf v1.0's where none is recorded)."""
        return str(self.adapter.get("release") or DEFAULT_RELEASE)

    @property
    def ran_in(self) -> RanIn:
        """What its workload ran in, from what the run recorded: the site's container (Slurm
        only: site_measure), the framework's own environment, or the interpreter the adapter
        started (its `python` option; else dlperf's own), with the packages its node facts saw.
        Never the release's image unless that is the container (an older record's
        adapter.environment named the image whatever ran)."""
        own = self.environment or {}
        options = self.options
        python = str(own.get("python") or options.get("python") or "")
        packages = {
            (str(k), str(v))
            for facts in self.nodes.values()
            if isinstance(facts, dict)
            for k, v in (facts.get("packages") or {}).items()
            if v
        }
        return RanIn(
            container=str(self.measure.get("container") or ""),
            environment=str(self.measure.get("environment") or ""),
            requirements=str(own.get("requirements") or ""),
            python=python,
            packages=tuple(sorted(packages)),
            intended=self.adapter_impl.environment_of(options),
        )

    @property
    def adapter_impl(self) -> Adapter:
        return get_adapter(self.adapter["name"])

    @property
    def per_node(self) -> bool:
        """Its adapter launches one task per node (that spawns its own workers), not per device."""
        return self.adapter_impl.launcher is Launcher.PER_NODE

    @property
    def launched_tasks(self) -> int:
        """How many tasks its cell's layout launches: one per device, or one per node."""
        layout = self.planned_cell.layout
        return layout.nodes if self.per_node else layout.devices

    @property
    def measured_options(self) -> dict[str, Any]:
        """The adapter's options as the measure states them (a `max` still `max`)."""
        options: dict[str, Any] = self.measure.get("options", {})
        return options

    @property
    def measured_steps(self) -> int | None:
        """The steps each task ran, as the measure states them."""
        return self.measure.get("steps")

    @property
    def measured_device(self) -> str | None:
        """The device it trained on (cpu, gpu...), as the measure states it."""
        return self.measure.get("device")

    def measured_items(self) -> Iterator[tuple[str, Any]]:
        """What it measured besides its cell, key by key as the measure states it: options,
        steps, device, workload code, the framework's environment, the site's variables, setup
        lines and image (dlperf.launch.measured.measure_of; and any key a newer dlperf added)."""
        return ((k, v) for k, v in self.measure.items() if k != "cell")

    @property
    def options(self) -> dict[str, Any]:
        """The adapter's options the run was launched with (defaults filled in)."""
        given = self.measured_options | self.options_resolved
        return self.adapter_impl.resolved_options(given)

    @property
    def folder(self) -> Path:
        if self.path is None:
            raise ValueError("a record not read from a file has no folder")
        return self.path.parent

    @property
    def task_outcomes(self) -> list[TaskOutcome]:
        """Each task's outcome, in task order."""
        return [TaskOutcome.of(t) for t in self.tasks]

    @property
    def logs(self) -> list[Path]:
        """Each task's log, in task order."""
        return [self.folder / t.log for t in self.task_outcomes]

    def check_tasks_are_the_layouts(self) -> None:
        """The record's tasks are those its cell's layout launches: one per device (ranks 0 to
        devices - 1), or one per node for a per-node launcher. A task left out of the record
        would leave its log unread and the run measured on the other ranks alone (half the
        throughput of a 1n2g run, shown as ok); else a ParseError naming the manifest."""
        launched = list(range(self.launched_tasks))
        if sorted(self.ranks) != launched:
            unit = "node" if self.per_node else "rank"
            raise ParseError(
                f"the manifest lists the tasks of {unit}s {self.ranks}, but a "
                f"{self.planned_cell.layout} run "
                f"launches {unit}s {launched}: edited after the run? Delete it to redo the run",
                self.path,
            )

    @property
    def ranks(self) -> list[int]:
        return [t.task for t in self.task_outcomes]

    @property
    def workload_wall_s(self) -> float | None:
        """The longest task's workload time (monotonic; 0: none timed; None: none reported)."""
        return max((t.workload_wall_s or 0 for t in self.task_outcomes), default=None)

    @property
    def measure_digest(self) -> str:
        return measure_digest(self.measure)

    def stale_against(self, expected_digest: str | None) -> str:
        """Why this record is not the suite's figure for its cell ('' when it is): it measured
        other parameters than the suite now asks for (anything measure_of names: options, window,
        device, workload code, environment, the site's variables, setup lines, image)."""
        if expected_digest is None or expected_digest == self.measure_digest:
            return ""
        stale = Phrase.of("detail.stale", measured=self.measure_digest, expected=expected_digest)
        return english(stale)


_FIELD_TYPES = {k: v for k, v in typing.get_type_hints(RunRecord).items() if k != "path"}


def _mistyped(data: dict[str, Any]) -> str:
    """The first value of a record (or of its measure or one of its tasks) not of its declared
    type, with its key ('tasks[1].workload_wall_s is 'abc', not a finite number'); '' if none."""
    for key, value in data.items():
        hint = list if key == "tasks" else _FIELD_TYPES.get(key, Any)  # tasks: each one below
        if not conforms(value, hint):
            return f"{key} is {shown(value)}, not {type_name(hint)}"
    for key, value in data["measure"].items():
        if key in MEASURE_FIELDS and not conforms(value, MEASURE_FIELDS[key]):
            return f"measure.{key} is {shown(value)}, not {type_name(MEASURE_FIELDS[key])}"
    for i, task in enumerate(data["tasks"]):
        wrong = mistyped_task(i, task)
        if wrong:
            return wrong
    return ""
