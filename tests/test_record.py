"""A run's record (dlperf.launch.record): written once, read by every stage through one class;
what it measured decides whether it is still the suite's figure."""

from __future__ import annotations

import ast
import json
import os
import time
from dataclasses import fields
from pathlib import Path

import pytest

from dlperf import SCHEMA_VERSION
from dlperf.launch.measured import (
    measure_digest,
    measure_digests,
    measure_of,
    recorded_stale,
    redo_inputs,
)
from dlperf.launch.record import RunRecord
from dlperf.launch.taskoutcome import TASK_FIELDS, TaskOutcome
from dlperf.matrix import Cell, CellSpec, Layout
from dlperf.measure.runs import read_run
from dlperf.measure.stats import Window
from dlperf.parse.records import ParseError
from dlperf.paths import RunPaths

CELL = Cell("pytorch", "resnet50", "fp32", False, 4, Layout(1, 1))
CONFIG = {"window": {"warmup": 2, "measure": 3}, "device": "cpu"}


def record(repeat: int = 1, options: dict | None = None, **changes) -> RunRecord:
    fields = dict(
        cell=CELL.key(),
        repeat=repeat,
        status="ok",
        adapter={"name": "pytorch", "version": "1", "launcher": "per_device"},
        measure=measure_of(CellSpec(CELL, options or {}), CONFIG),
        tasks=[{"task": 0, "log": "rank0.log", "status": "ok", "workload_wall_s": 2.0}],
        backend="local",
    )
    return RunRecord(**(fields | changes))


def test_written_and_read_back_with_its_marker_and_attributes(tmp_path):
    run = RunPaths(CELL.id, 1, tmp_path)
    run.dir.mkdir(parents=True)
    written = record().write(run.manifest)
    assert json.loads(run.manifest.read_text())["schema_version"] == SCHEMA_VERSION
    assert run.measured(written.measure_digest).exists()
    read = RunRecord.read(run.manifest)
    assert read == written and read.path == run.manifest
    assert read.logs == [run.dir / "rank0.log"] and read.ranks == [0]
    assert read.trained_cell == CELL and read.trained_batch_size == 4
    assert read.workload_wall_s == 2.0 and read.options["image_size"] == 224


def test_a_max_cell_trains_at_the_batch_size_found():
    found = record(cell=Cell("pytorch", "resnet50", "fp32", False, "max", Layout(1, 1)).key(),
                   batch_size_resolved=96)  # fmt: skip
    assert found.trained_cell.batch_size == 96 and found.planned_cell.batch_size == "max"
    assert record(cell=found.cell).trained_batch_size is None


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d.pop("tasks"), "lacks tasks"),
        (lambda d: d.update(repeat="1"), 'repeat is "1", not an integer'),
        (lambda d: d.update(repeat=True), "repeat is true, not an integer"),
        (lambda d: d.update(tasks=[{"task": 0}]), r"tasks\[0\] lacks log"),
        (lambda d: d.update(tasks=[7]), r"tasks\[0\] is 7, not an object"),
        (lambda d: d["tasks"][0].update(task="x"), r"tasks\[0\].task is \"x\", not an integer"),
        (
            lambda d: d["tasks"][0].update(workload_wall_s="4.2"),
            r"tasks\[0\].workload_wall_s is \"4.2\", not a finite number or null",
        ),
        (lambda d: d["tasks"][0].update(workload_wall_s=float("nan")), r"workload_wall_s is NaN"),
        (
            lambda d: d["tasks"][0].update(log="../r2/rank0.log"),
            "is not a file of the run's own folder",
        ),
        (
            lambda d: d["tasks"][0].update(log="/etc/passwd"),
            "is not a file of the run's own folder",
        ),
        (lambda d: d.update(schema_version="3"), 'schema_version is "3", not an integer'),
        (
            lambda d: d.update(submitted_at="yesterday"),
            'submitted_at is "yesterday", not a finite number or null',
        ),
        (lambda d: d.update(hosts=["vm", 5]), r"hosts is \[\"vm\", 5\], not a list of strings"),
        (lambda d: d.update(nodes=[1, 2]), r"nodes is \[1, 2\], not an object;"),
        (
            lambda d: d["cell"].update(layout="1n2g"),
            "cell layout='1n2g' disagrees with its cell id",
        ),
        (
            lambda d: d["cell"].update(cell_id="not a cell"),
            "the manifest's cell: 'not a cell' is not a cell id",
        ),
        (
            lambda d: d["adapter"].update(name="jax"),
            "adapter 'jax' is not its cell's framework 'pytorch'",
        ),
        (lambda d: d["measure"].update(options=[1]), r"measure.options is \[1\], not an object;"),
        (lambda d: d["tasks"][0].update(status="oom"), "task 0 status is oom, but the run's is ok"),
        (lambda d: d["tasks"][0].update(status="weird"), "task 0 status 'weird' is not a task's"),
        (
            lambda d: d["tasks"][0].update(started_at=10.0, ended_at=9.0),
            r"task 0 ended \(9.0\) before it started \(10.0\)",
        ),
        (lambda d: d["measure"].update(steps="9"), 'measure.steps is "9", not an integer'),
        (lambda d: d.update(status="fine"), "status 'fine' is not a run's"),
        (lambda d: d.update(schema_version=SCHEMA_VERSION + 1), "newer than this dlperf's"),
        (lambda d: d.update(repeat=2), "is of pytorch.resnet50.fp32.noxla.b4.1n1g r2, not of"),
    ],
)
def test_a_record_that_cannot_be_trusted_is_a_parse_error_naming_the_file(
    tmp_path, change, message
):
    run = RunPaths(CELL.id, 1, tmp_path)
    run.dir.mkdir(parents=True)
    data = record().to_json()
    change(data)
    run.manifest.write_text(json.dumps(data))
    with pytest.raises(ParseError, match=message) as err:
        RunRecord.read(run.manifest)
    assert str(run.manifest) in str(err.value)


def test_whether_a_run_is_of_another_measure_is_one_stat_or_one_legacy_read(tmp_path):
    run = RunPaths(CELL.id, 1, tmp_path)
    run.dir.mkdir(parents=True)
    now, other = record(), record(options={"image_size": 24})
    assert not recorded_stale(run, now.measure_digest)  # nothing recorded yet
    now.write(run.manifest)
    assert not recorded_stale(run, now.measure_digest)
    assert recorded_stale(run, other.measure_digest)
    assert redo_inputs(run, now.measure_digest, 30) == []  # never redone: no stamp
    assert redo_inputs(run, other.measure_digest, 30) == [str(run.redo)]
    stamped = run.redo.stat().st_mtime_ns
    other.write(run.manifest)  # redone: the stamp stays an input, older than the record
    assert redo_inputs(run, other.measure_digest, 30) == [str(run.redo)]
    assert run.redo.stat().st_mtime_ns == stamped <= run.manifest.stat().st_mtime_ns
    # a dry run of another suite touches the stamp; back at the recorded suite it stays the
    # input Snakemake recorded (dropping it changes the run's set of inputs: Snakemake redoes
    # it), set back to no newer than the record
    redo_inputs(run, now.measure_digest, 30)
    later = run.manifest.stat().st_mtime_ns + 10**9  # a second after the record
    os.utime(run.redo, ns=(later, later))
    assert redo_inputs(run, other.measure_digest, 30) == [str(run.redo)]
    assert run.redo.stat().st_mtime_ns <= run.manifest.stat().st_mtime_ns
    for marker in run.dir.glob("measured-*"):  # a record written before the markers
        marker.unlink()
    assert not recorded_stale(run, other.measure_digest)
    assert recorded_stale(run, now.measure_digest)


def test_a_run_that_timed_out_under_a_shorter_limit_than_the_suites_is_redone(tmp_path):
    """Review: a run that timed out under time_limit_min 1 stayed a timeout when the limit grew
    to 30 (nothing redone, the report stating the new limit beside it). A timeout records its
    limit and has no marker, so it is read against the suite's limit each time; any other
    outcome, or a timeout under the same or a longer limit, stands."""
    run = RunPaths(CELL.id, 1, tmp_path)
    run.dir.mkdir(parents=True)
    timeout = record(status="timeout", time_limit_min=1.0, tasks=[])
    timeout.write(run.manifest)
    assert not list(run.dir.glob("measured-*"))
    assert RunRecord.read(run.manifest).time_limit_min == 1.0
    digest = timeout.measure_digest
    assert [recorded_stale(run, digest, limit) for limit in (0.5, 1, 30)] == [False, False, True]
    assert redo_inputs(run, digest, 1) == [] and redo_inputs(run, digest, 30) == [str(run.redo)]
    record(time_limit_min=1.0).write(run.manifest)  # ok: a longer limit changes nothing
    assert not recorded_stale(run, digest, 30)
    data = timeout.to_json() | {"time_limit_min": None}  # recorded before limits were
    run.manifest.write_text(json.dumps(data))
    assert not recorded_stale(run, digest, 30)


def test_a_run_of_other_parameters_than_the_suites_is_stale_never_a_figure(tmp_path):
    """Issue 20.4: a record whose measure is not the suite's (its options changed while
    Snakemake's records were lost, or its rerun was interrupted) is `stale`, with no figure."""
    run = RunPaths(CELL.id, 1, tmp_path)
    run.dir.mkdir(parents=True)
    record().write(run.manifest)
    suite = measure_digests([CellSpec(CELL, {"image_size": 24})], CONFIG)
    row = read_run(run.manifest, Window(2, 3), suite).row
    assert row["status"] == "stale" and "other parameters" in row["status_detail"]
    assert "throughput_samples_per_s" not in row
    same = measure_digests([CellSpec(CELL, {})], CONFIG)
    assert same == {CELL.id: measure_digest(record().measure)}
    assert read_run(run.manifest, Window(2, 3), same).row["status"] != "stale"


def test_a_run_stale_for_its_environment_or_site_says_they_may_have_changed(tmp_path):
    """Review: what a run measures names its framework's environment and the site's variables,
    setup lines and image (6ac5d62, c316dbb), but a run made stale by a changed pin or
    NCCL variable read "options, window, device or workload code changed": none of which had."""
    run = RunPaths(CELL.id, 1, tmp_path)
    run.dir.mkdir(parents=True)
    planned = record().measure
    record(measure=planned | {"env": {"NCCL_IB_DISABLE": "1"}}).write(run.manifest)
    row = read_run(run.manifest, Window(2, 3), {CELL.id: measure_digest(planned)}).row
    assert row["status"] == "stale"
    assert (
        "options, window, device, workload code, the framework's environment or the site's "
        "variables, setup lines or image changed"
    ) in row["status_detail"]


def test_of_manifest_names_the_run_of_a_folder(tmp_path):
    assert RunPaths.of_manifest(RunPaths("a.b", 3, tmp_path).manifest) == RunPaths(
        "a.b", 3, tmp_path
    )
    with pytest.raises(ValueError, match="not in a run's folder"):
        RunPaths.of_manifest(Path("somewhere/manifest.json"))


def test_a_cpu_runs_cores_per_rank_are_the_nodes_cores_over_its_ranks_or_option_threads():
    """Issue 20.17: the tables carry the cores each rank had (every built-in workload takes
    option threads, or the node's usable cores over its ranks)."""
    two = Cell("pytorch", "resnet50", "fp32", False, 4, Layout(1, 2)).key()
    node = {"host#node0": {"cpus_usable": 8}}
    assert record(cell=two, nodes=node).cores_per_rank == 4
    assert record(cell=two, nodes=node, options={"threads": 3}).cores_per_rank == 3
    assert record(cell=two).cores_per_rank is None  # no node facts: not known
    on_gpu = record(
        cell=two, nodes=node, measure=measure_of(CellSpec(CELL, {}), CONFIG | {"device": "cuda"})
    )
    assert on_gpu.cores_per_rank is None


def test_the_report_says_where_ranks_shared_the_cores_of_the_1n1g_cell():
    import pandas as pd

    from dlperf.report.caveats import caveats

    def cell(layout: Layout, cores: float, status: str = "ok") -> dict:
        key = Cell("pytorch", "resnet50", "fp32", False, 4, layout).key()
        return key | {"cores_per_rank": cores, "status": status, "source": "measured",
                      "throughput_median": 10.0, "speedup": 0.7}  # fmt: skip

    cells = pd.DataFrame(
        [cell(Layout(1, 1), 8), cell(Layout(1, 2), 4), cell(Layout(1, 4), 4), cell(Layout(2, 2), 8)]
    )
    runs = pd.DataFrame(columns=["cell_id", "repeat", "status", "status_detail"])
    shared = [c for c in caveats(cells, runs) if c.kind == "shared_cores"]
    assert [(c.cell_id.split(".")[-1], c.values["ideal"]) for c in shared] == [
        ("1n2g", "1.00"),  # two ranks on the 1n1g cell's 8 cores: no speedup is possible
        ("1n4g", "2.00"),
    ]  # 2n2g: 4 ranks with 8 cores each, as many as the 1n1g cell had: nothing to say


def test_the_records_parts_are_read_through_typed_accessors():
    """Issue 16: what a run measured, its adapter and its tasks are attributes of the record."""
    run = record(options={"image_size": 96})
    assert (
        run.measured_options == run.measure["options"] and run.measured_options["image_size"] == 96
    )
    assert run.measured_steps == run.measure["steps"] and run.measured_device == "cpu"
    assert dict(run.measured_items()) == {k: v for k, v in run.measure.items() if k != "cell"}
    assert (run.adapter_name, run.adapter_version) == ("pytorch", "1")
    assert run.task_outcomes == [TaskOutcome(0, "rank0.log", "ok", workload_wall_s=2.0)]
    assert {f.name for f in fields(TaskOutcome)} == set(TASK_FIELDS)


def test_an_older_record_reads_with_its_tasks_defaults_and_writes_back_unchanged(tmp_path):
    """A record before task statuses and fingerprints (and with keys no later stage reads, as
    a task's host) reads; its file is what it was, key for key."""
    run = RunPaths(CELL.id, 1, tmp_path)
    run.dir.mkdir(parents=True)
    data = record().to_json()
    data["tasks"] = [{"task": 0, "log": "rank0.log", "host": "vm", "started_at": 5.0}]
    del data["measure"]["device"]
    run.manifest.write_text(json.dumps(data))
    read = RunRecord.read(run.manifest)
    [task] = read.task_outcomes
    assert task == TaskOutcome(0, "rank0.log", started_at=5.0) and task.status == "ok"
    assert read.measured_device is None and read.workload_wall_s == 0
    assert read.to_json() == data
    assert json.dumps(read.to_json()) == json.dumps(data)  # same keys, same order


# A record's nested parts, read by string key nowhere but launch/record.py (issue 16).
RECORD_PARTS = {"measure", "tasks", "cell", "adapter"}
KEY_READS = {"get", "items", "keys", "values", "pop", "setdefault"}


def _of_a_record(node: ast.expr) -> bool:
    base = node.value if isinstance(node, ast.Attribute) else None
    name = base.id if isinstance(base, ast.Name) else getattr(base, "attr", "")
    return isinstance(node, ast.Attribute) and node.attr in RECORD_PARTS and "record" in name


def record_part_key_reads(source: str) -> list[int]:
    """Lines that read a record's measure, tasks, cell or adapter by key: `x.measure[...]`,
    `x.cell.get(...)`, `... in x.adapter` (of anything), or, of a value named *record, an alias
    (`cell = record.cell`, `for task in record.tasks`) read so, or the part passed to a function."""
    tree = ast.parse(source)
    aliases = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _of_a_record(node.value):
            aliases |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        if isinstance(node, ast.For | ast.comprehension) and _of_a_record(node.iter):
            aliases |= {node.target.id} if isinstance(node.target, ast.Name) else set()

    def part(node: ast.expr) -> bool:
        if isinstance(node, ast.Subscript):
            node = node.value  # record.tasks[0]: one task, read by key in turn
        return (isinstance(node, ast.Attribute) and node.attr in RECORD_PARTS) or (
            isinstance(node, ast.Name) and node.id in aliases
        )

    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and part(node.value):
            lines.append(node.lineno)
        elif isinstance(node, ast.Attribute) and node.attr in KEY_READS and part(node.value):
            lines.append(node.lineno)
        elif isinstance(node, ast.Compare) and any(
            isinstance(op, ast.In | ast.NotIn) and part(c)
            for op, c in zip(node.ops, node.comparators, strict=True)
        ):
            lines.append(node.lineno)
        elif isinstance(node, ast.Call) and any(_of_a_record(a) for a in node.args):
            lines.append(node.lineno)
    return sorted(set(lines))


@pytest.mark.parametrize(
    "source",
    [
        "record.measure.get('steps')",
        "x = record.cell['layout']",
        "if 'name' in record.adapter: pass",
        "for k, v in record.measure.items(): pass",
        "if record.tasks[0]['log']: pass",
        "cell = record.cell\ncell.get('framework')",
        "for task in record.tasks:\n    task.get('started_at')",
        "check(parsed, logs, run.record.tasks)",
    ],
)
def test_the_scan_finds_a_record_part_read_by_key(source):
    assert record_part_key_reads(source)


@pytest.mark.parametrize(
    "source",
    [
        "record.measured_steps",
        "record.planned_cell.layout",
        "{'cell': record.cell}",
        "spec.cell.layout",
        "for task in record.task_outcomes:\n    task.started_at",
    ],
)
def test_the_scan_passes_the_typed_accessors(source):
    assert record_part_key_reads(source) == []


def test_no_module_but_the_records_own_reads_its_parts_by_key():
    package = Path(__file__).parents[1] / "src" / "dlperf"
    sources = [p for p in sorted(package.rglob("*.py")) if p != package / "launch" / "record.py"]
    assert len(sources) > 50, f"scanned only {len(sources)} modules under {package}"
    found = [
        f"{path.relative_to(package)}:{line}"
        for path in sources
        for line in record_part_key_reads(path.read_text())
    ]
    assert found == [], "read RunRecord's typed accessors instead (dlperf.launch.record)"


def test_a_record_changed_after_its_marker_is_read_again(tmp_path):
    """A manifest replaced by one of another measure (copied from another results folder, its
    mtime kept by `cp -p` or `touch -r`) beside the marker of the first: its ctime is newer than
    the marker, so it is read, and the run is redone; a record of the marker's own measure,
    read once, gets its marker touched."""
    run = RunPaths(CELL.id, 1, tmp_path)
    run.dir.mkdir(parents=True)
    now, other = record(), record(options={"image_size": 24})
    now.write(run.manifest)
    mtime = run.manifest.stat().st_mtime_ns
    marker = run.measured(now.measure_digest)
    past = marker.stat().st_mtime_ns - 10**9  # the marker, a second before the copy
    os.utime(marker, ns=(past, past))
    run.manifest.write_text(json.dumps(other.to_json()))
    os.utime(run.manifest, ns=(mtime, mtime))  # touch -r: the mtime as before, the ctime now
    assert recorded_stale(run, now.measure_digest)
    assert redo_inputs(run, now.measure_digest, 30) == [str(run.redo)]
    run.manifest.write_text(json.dumps(now.to_json()))  # the record of the marker's measure
    assert not recorded_stale(run, now.measure_digest)
    assert marker.stat().st_mtime_ns >= run.manifest.stat().st_ctime_ns  # read once


def test_a_marker_from_the_future_vouches_for_nothing(tmp_path):
    """Review: results whose files carry future times (a clock stepped back, `rsync -a` from a
    host whose clock runs ahead): a manifest of another measure copied in had a ctime older than
    its marker's future mtime, so the run was never redone and the tables kept a figure of a run
    no longer on disk. A marker in the future is read as absent; the record is read."""
    run = RunPaths(CELL.id, 1, tmp_path)
    run.dir.mkdir(parents=True)
    now, other = record(), record(options={"image_size": 24})
    now.write(run.manifest)
    future = time.time_ns() + 2 * 3600 * 10**9
    for path in (run.manifest, run.measured(now.measure_digest)):
        os.utime(path, ns=(future, future))
    run.manifest.write_text(json.dumps(other.to_json()))
    os.utime(run.manifest, ns=(future, future))
    assert recorded_stale(run, now.measure_digest)
    run.manifest.write_text(json.dumps(now.to_json()))  # the marker's own measure: read, kept
    assert not recorded_stale(run, now.measure_digest)


def test_a_device_auto_run_on_nodes_without_gpus_trained_on_their_cpu_cores():
    """The default suite's `device: auto` on a CPU: the ranks' cores are known (the report's
    shared-cores caveat rests on them); on a node with GPUs the device stays unknown."""
    two = Cell("pytorch", "bert_base", "fp32", False, 8, Layout(1, 2))
    auto = CONFIG | {"device": "auto"}

    def record(gpus: list) -> RunRecord:
        return RunRecord(
            cell=two.key(), repeat=1, status="ok",
            adapter={"name": "pytorch", "version": "1", "launcher": "per_device"},
            measure=measure_of(CellSpec(two, {}), auto),
            tasks=[{"task": k, "log": f"rank{k}.log", "status": "ok"} for k in (0, 1)],
            backend="local", nodes={"vm#node0": {"cpus_usable": 2, "gpus": gpus}},
        )  # fmt: skip

    assert record([]).trained_device == "cpu" and record([]).cores_per_rank == 1
    assert record(["H100"]).trained_device is None and record(["H100"]).cores_per_rank is None


@pytest.mark.parametrize("status", ["oom", "failed", "timeout"])
def test_a_run_status_other_than_its_tasks_worst_is_a_parse_error_naming_it(tmp_path, status):
    """oom written over a run whose every task ended ok (its figure would read OOM): the record
    is not the run's. A job that ended before a task reported keeps the job's status."""
    run = RunPaths(CELL.id, 1, tmp_path)
    run.dir.mkdir(parents=True)
    run.manifest.write_text(json.dumps(record().to_json() | {"status": status}))
    with pytest.raises(ParseError, match=f"status is {status}, but its tasks' .* is ok") as err:
        RunRecord.read(run.manifest)
    assert str(run.manifest) in str(err.value)
    run.manifest.write_text(json.dumps(record(tasks=[]).to_json() | {"status": status}))
    assert RunRecord.read(run.manifest).status == status
