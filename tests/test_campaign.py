"""The workflow's one package object: what rules/common.smk used to compute at parse time."""

from __future__ import annotations

import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from dlperf.campaign import Campaign
from dlperf.errors import ConfigError
from dlperf.launch.measured import measure_of
from dlperf.plan.jobs import WORKFLOW_TIME_LIMIT_S
from dlperf.rulecode import RULE_CODE, job_function, rule_code

ROOT = Path(__file__).resolve().parents[1]
SUITE = {
    "name": "campaign",
    "repeats": 2,
    "window": {"warmup": 2, "measure": 5},
    "device": "cpu",
    "cases": [
        {"framework": "pytorch", "model": "resnet50", "batch_size": [2], "layouts": ["1n1g", "1n2g"]},
        {"framework": "jax", "model": "resnet50", "xla": [True], "batch_size": [2], "layouts": ["1n1g"]},
    ],
}  # fmt: skip


def campaign(tmp_path: Path, suite: dict | None = None) -> Campaign:
    """The campaign of a suite file, from tmp_path (results/ is relative to the working
    directory, as under Snakemake: the tests chdir there)."""
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite or SUITE))
    return Campaign.load({}, ["suite.yaml"], {}, basedir=ROOT, cwd=tmp_path)


def test_cells_are_placed_and_measured_once(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    c = campaign(tmp_path)
    assert sorted(c.cells) == [
        "jax.resnet50.fp32.xla.b2.1n1g",
        "pytorch.resnet50.fp32.noxla.b2.1n1g",
        "pytorch.resnet50.fp32.noxla.b2.1n2g",
    ]
    two = c.allocations["pytorch.resnet50.fp32.noxla.b2.1n2g"]
    assert two.nodes * two.tasks_per_node == 2
    assert c.task_logs("pytorch.resnet50.fp32.noxla.b2.1n2g") == ["rank0.log", "rank1.log"]
    cell_id = "pytorch.resnet50.fp32.noxla.b2.1n1g"
    assert json.loads(c.measure_json(cell_id)) == measure_of(c.cells[cell_id], c.config)
    assert c.measure(cell_id) is c.measure(cell_id)  # 5,000 jobs ask; computed once
    assert len(c.all_manifests()) == 6 and len(c.every_run()) == 6


def test_runs_are_asked_for_by_name_only_when_their_manifest_is_missing_beside_tables(
    tmp_path, monkeypatch
):
    """Snakemake leaves a missing input of an up-to-date job alone: `all` names each run whose
    manifest is gone while the tables stand (the tables rule asks for every run without them)."""
    monkeypatch.chdir(tmp_path)
    c = campaign(tmp_path)
    reports = c.report_outputs()
    assert c.final_outputs() == reports  # nothing measured yet: the tables ask for every run
    for manifest in c.all_manifests():
        Path(manifest).parent.mkdir(parents=True)
        Path(manifest).write_text("{}")
    c.results.cells.parent.mkdir(parents=True)
    c.results.cells.write_text("")
    assert c.final_outputs() == reports
    gone = c.all_manifests()[1]
    os.remove(gone)
    assert c.final_outputs() == [*reports, gone]


def test_a_rules_marker_names_its_params_and_goes_when_the_output_was_remade_since(
    tmp_path, monkeypatch
):
    """What the tables, report and plan were made with is kept beside the results (Snakemake's
    own record of it is lost with .snakemake): other params, another marker; a marker older than
    the output it vouches for was made before the output's last remake, and is removed."""
    monkeypatch.chdir(tmp_path)
    marker = Path(campaign(tmp_path).made_marker("tables"))
    assert marker.parent == Path("results/.made") and marker.name.startswith("tables-")
    other = campaign(tmp_path, SUITE | {"window": {"warmup": 3, "measure": 4}})
    assert Path(other.made_marker("tables")) != marker
    assert Path(other.made_marker("report")) != Path(campaign(tmp_path).made_marker("report"))
    marker.parent.mkdir(parents=True)
    marker.touch()  # made with these params, then the tables were remade with others
    c = campaign(tmp_path)
    c.results.cells.parent.mkdir(parents=True)
    c.results.cells.write_text("")
    os.utime(marker, ns=(1, 1))
    assert c.made_marker("tables") == str(marker) and not marker.exists()
    marker.touch()  # made with these params after the tables: kept
    assert campaign(tmp_path).made_marker("tables") == str(marker) and marker.exists()


@pytest.mark.parametrize("rule", ["tables", "report"])
def test_any_file_of_a_rules_output_edited_since_it_was_made_remakes_it(
    rule, tmp_path, monkeypatch
):
    """Review: only the cells table and report.en.md were checked against their marker: a runs
    table edited by hand (throughput 99999.5) was shown by the report re-rendered from it, and
    an edited report.zh.html stood. Any file the rule writes modified after its marker
    removes the marker and stamps a remake."""
    monkeypatch.chdir(tmp_path)
    c = campaign(tmp_path)
    tables = [c.results.cells, c.results.runs, c.results.steps]
    files = tables if rule == "tables" else [Path(p) for p in c.report_outputs()]
    for path in files:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("made")
    marker = Path(c.made_marker(rule))
    marker.parent.mkdir(parents=True, exist_ok=True)
    time.sleep(0.05)  # the file clock ticks coarser than a nanosecond
    marker.touch()
    assert campaign(tmp_path).remake_inputs(rule) == [] and marker.exists()
    time.sleep(0.05)
    files[-1].write_text("edited by hand")
    assert campaign(tmp_path).remake_inputs(rule) == [str(c.results.remake(rule))]
    assert not marker.exists()


def test_an_output_made_with_other_params_gets_a_stamp_input_that_remakes_it(tmp_path, monkeypatch):
    """Whatever target asks for the tables (`all`, results/tables/cells.tsv), tables standing
    without the marker of the suite's params get a stamp input newer than them; once remade the
    stamp stays an input, also after a dry run of another suite touched it (set back to the
    tables' time: leaving the set of inputs Snakemake recorded would remake them)."""
    monkeypatch.chdir(tmp_path)
    c = campaign(tmp_path)
    stamp = str(c.results.remake("tables"))
    assert c.remake_inputs("tables") == []  # no tables: they are made anyway
    c.results.cells.parent.mkdir(parents=True)
    c.results.cells.write_text("")
    assert campaign(tmp_path).remake_inputs("tables") == [stamp]  # made with unknown params
    marker = Path(campaign(tmp_path).made_marker("tables"))
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()
    os.utime(stamp, ns=(1, 1))
    os.utime(c.results.cells, ns=(2, 2))  # remade after the stamp; the marker touched after
    assert campaign(tmp_path).remake_inputs("tables") == [stamp]  # consumed: stays an input
    other = campaign(tmp_path, SUITE | {"window": {"warmup": 3, "measure": 4}})
    assert other.remake_inputs("tables") == [stamp]  # a dry run of another window: touched
    assert campaign(tmp_path).remake_inputs("tables") == [stamp]
    assert os.stat(stamp).st_mtime_ns <= c.results.cells.stat().st_mtime_ns
    # a marker in the future (a clock stepped back) vouches for nothing: the tables are remade
    marker = Path(campaign(tmp_path).made_marker("tables"))
    marker.touch()
    future = time.time_ns() + 2 * 3600 * 10**9
    os.utime(marker, ns=(future, future))
    assert campaign(tmp_path).remake_inputs("tables") == [stamp] and not marker.exists()


def test_a_framework_with_its_own_environment_measures_in_it(tmp_path, monkeypatch):
    """What a run measures names its framework's environment: a changed pin or exclude, or the
    site's interpreter, redoes that framework's recorded runs, and the stamp does so without
    Snakemake's records. Review: the pins were a rule input, told by their file time, so an
    edited exclude or a site interpreter redid nothing, and a checkout copied elsewhere with its
    results (newer pins files) redid every JAX, TF, Paddle ... run."""
    monkeypatch.chdir(tmp_path)
    workflow = tmp_path / "workflow"
    (workflow / "envs").mkdir(parents=True)
    pins = workflow / "envs" / "jax.txt"
    pins.write_text((ROOT / "envs/jax.txt").read_text())
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(SUITE))

    def load() -> Campaign:
        return Campaign.load({}, ["suite.yaml"], {}, basedir=workflow, cwd=tmp_path)

    jax, torch = "jax.resnet50.fp32.xla.b2.1n1g", "pytorch.resnet50.fp32.noxla.b2.1n1g"
    c = load()
    planned = c.measure(jax)["environment"]
    assert re.fullmatch(r"[0-9a-f]{12}", planned) and "environment" not in c.measure(torch)
    assert c.run_inputs(jax, 1) == []  # no record: no stamp, and no pins file as an input
    run = c.results.run(jax, 1)
    run.dir.mkdir(parents=True)
    run.manifest.write_text(json.dumps({"measure": c.measure(jax)}))
    assert load().run_inputs(jax, 1) == []
    os.utime(pins)  # a newer pins file (a fresh clone): the same environment, nothing redone
    assert load().run_inputs(jax, 1) == []

    (workflow / "envs" / "jax.excludes.txt").write_text("tensorboard\n")
    edited = load()
    assert edited.measure(jax)["environment"] not in (planned, None)
    assert edited.run_inputs(jax, 1) == [str(run.redo)]
    assert edited.measure(torch) == c.measure(torch)  # the other framework's runs stay

    (workflow / "envs" / "jax.excludes.txt").unlink()
    suite = SUITE | {"site": {"environments": {"python": {"jax": "/opt/jax/bin/python"}}}}
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite))
    assert load().measure(jax)["environment"] == "site /opt/jax/bin/python"
    with pytest.raises(ValueError, match="not in the configured matrix"):
        c.run_inputs("pytorch.resnet50.fp32.noxla.b4.1n1g", 1)


def test_a_log_edited_after_its_manifest_is_a_changed_param(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    c = campaign(tmp_path)
    run = c.results.run("pytorch.resnet50.fp32.noxla.b2.1n2g", 1)
    run.dir.mkdir(parents=True)
    (run.dir / "rank0.log").write_text("x\n")
    run.manifest.write_text("{}")
    os.utime(run.manifest, ns=(10**18, 10**18))
    (run.dir / "rank1.log").write_text("x\n")
    os.utime(run.dir / "rank0.log", ns=(10**18 - 1, 10**18 - 1))  # before the manifest
    os.utime(run.dir / "rank1.log", ns=(10**18 + 1, 10**18 + 1))  # edited after it
    before = c.tables_edited_logs()
    edited = json.loads(before)
    assert edited == [[str(run.dir / "rank1.log"), 10**18 + 1, 2]]
    (run.dir / "rank0.log").unlink()
    assert [str(run.dir / "rank0.log"), "missing"] in json.loads(c.tables_edited_logs())


def test_the_plan_orders_every_run_and_its_param_states_its_limit(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    c = campaign(tmp_path)
    plan = c.plan()
    assert plan.scheduled
    assert set(plan.priorities) == set(c.every_run())
    # repeat 1 of every cell before repeat 2 of any
    assert min(p for (_, r), p in plan.priorities.items() if r == 1) > max(
        p for (_, r), p in plan.priorities.items() if r == 2
    )
    assert json.loads(c.plan_params())["time_limit_s"] == WORKFLOW_TIME_LIMIT_S


def test_a_renamed_suite_remakes_its_plan(tmp_path, monkeypatch):
    """Review: plan.json states its suite's name (plan_dict), but the name was no param of the
    plan rule: renamed, the suite kept a plan.json naming the old suite."""
    monkeypatch.chdir(tmp_path)
    from dlperf.plan.plan import make_plan, plan_dict

    renamed = campaign(tmp_path, SUITE | {"name": "renamed"})
    assert plan_dict(make_plan(renamed.config, renamed.results.root))["suite"] == "renamed"
    assert renamed.plan_params() != campaign(tmp_path).plan_params()


def test_a_missing_baseline_stops_before_anything_runs_naming_its_key(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    suite = SUITE | {"baselines": [{"name": "old", "path": "nowhere.tsv"}]}
    with pytest.raises(ConfigError, match=r"baselines\[0\]\.path: no such file 'nowhere.tsv'"):
        campaign(tmp_path, suite)


def test_jobs_inherit_the_harness_and_the_workflow_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env = campaign(tmp_path).job_environment()
    assert json.loads(env["DLPERF_HARNESS"])["backend"] == "local"
    assert env["DLPERF_WORKFLOW_DIR"] == str(ROOT)


@pytest.mark.parametrize(
    "rule, module",
    [
        ("tables", "dlperf.workflow"),
        ("repeat_decision", "dlperf.measure.repeats"),
        ("adaptive_runs", "dlperf.measure.repeats"),
        ("plan", "dlperf.plan.rule"),
        ("report", "dlperf.report.rule"),
    ],
)
def test_a_rules_code_input_holds_every_module_its_script_imports(rule, module):
    """Editing a module a rule runs remakes what it made (record.py's checks decide ok or
    parse_error: an upgrade that judges runs differently must rebuild the tables)."""
    from dlperf.workloads import code_files

    listed = {Path(f) for f in rule_code(rule)}
    missing = sorted(str(f) for f in code_files(module).values() if f not in listed)
    assert not missing


def test_a_rules_code_input_starts_with_its_own_script(tmp_path, monkeypatch):
    """Snakemake's code trigger is off (it would redo every run for a harness edit): a rule's
    script is an input instead, so editing it remakes what the rule made."""
    monkeypatch.chdir(tmp_path)
    c = campaign(tmp_path)
    profile = yaml.safe_load((ROOT / "profiles/default/config.yaml").read_text())
    assert "code" not in profile["rerun-triggers"]
    for rule in RULE_CODE:
        script, *code = c.code_inputs(rule)
        assert script == str(ROOT / "workflow" / "scripts" / f"{rule}.py")
        assert Path(script).is_file() and code == rule_code(rule)
    scripts = {p.stem for p in (ROOT / "workflow" / "scripts").glob("*.py")}
    assert scripts == set(RULE_CODE)


def test_the_workflows_start_up_imports_no_pandas():
    """Every dry run reads the Snakefile: its imports (the campaign, the plan, the decisions) stay
    off pandas, which alone took 0.15 s of a 5,000-job dry run (README figures)."""
    code = (
        "import sys, dlperf.campaign, dlperf.measure.decision, dlperf.paths; "
        "print(sorted(m for m in ('pandas', 'scipy', 'matplotlib') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_job_function_states_its_signature_once_and_every_rules_function_does():
    """Snakemake reads an input, params or priority function's signature on every call
    (inspect.signature); a stated one is read back, not rebuilt (README figures: the dry run)."""

    @job_function
    def inputs(wildcards, attempt=1):
        return [wildcards, attempt]

    assert inspect.signature(inputs) is inputs.__signature__
    assert list(inspect.signature(inputs).parameters) == ["wildcards", "attempt"]
    assert inputs("w") == ["w", 1]
    rules = "\n".join(p.read_text() for p in sorted((ROOT / "rules").glob("*.smk")))
    handed = set(re.findall(r"^def (\w+)\(wildcards\)", rules, re.M)) - {"cell_spec"}
    stated = set(re.findall(r"^@job_function\ndef (\w+)\(", rules, re.M))
    assert handed and handed == stated


def test_a_baseline_replaced_with_its_mtime_kept_re_renders_the_report(tmp_path, monkeypatch):
    """The report's params hold each baseline's content: a file copied over with `cp -p` (its
    mtime older than the report) still changes them, so the report is remade with it."""
    monkeypatch.chdir(tmp_path)
    shipped = ROOT / "config/baselines/dlperf_v1.0.tsv"
    mine = tmp_path / "mine.tsv"
    shutil.copy2(shipped, mine)
    suite = SUITE | {"baselines": [{"name": "DLPerf v1.0", "path": "mine.tsv"}]}
    before = campaign(tmp_path, suite).report_params()
    lines = mine.read_text().splitlines(keepends=True)
    mine.write_text("".join(lines[:-1]))  # one published row fewer
    os.utime(mine, ns=(shipped.stat().st_mtime_ns,) * 2)  # cp -p: the old mtime
    assert campaign(tmp_path, suite).report_params() != before


def test_a_search_result_edited_by_hand_is_searched_again_and_its_runs_redone(
    tmp_path, monkeypatch
):
    """A `max` cell's result whose value its probes never confirmed is redone (its digest is
    the suite's: only the value was edited), not used to record the cell's runs failed; a run
    recorded at another value than the result holds now (a result changed with its mtime kept)
    gets the stamp that redoes it."""
    from dlperf.util import json_digest

    monkeypatch.chdir(tmp_path)
    suite = SUITE | {"cases": [SUITE["cases"][0] | {"batch_size": ["max"], "layouts": ["1n1g"]}]}
    cell_id = "pytorch.resnet50.fp32.noxla.bmax.1n1g"
    c = campaign(tmp_path, suite)
    search = c.results.max_batch(cell_id)
    search.result.parent.mkdir(parents=True, exist_ok=True)
    probes = [{"value": 2, "status": "ok"}, {"value": 4, "status": "ok", "full_length": True}]
    digest = json_digest(json.loads(c.search_json(cell_id)))

    def write_result(value: int) -> None:
        data = {"status": "ok", "value": value, "detail": "", "probes": probes}
        search.result.write_text(json.dumps(data | {"search_digest": digest}))

    write_result(4)
    assert campaign(tmp_path, suite).search_inputs(cell_id) == []
    write_result(8)  # no probe ran 8
    assert campaign(tmp_path, suite).search_inputs(cell_id) == [str(search.redo)]
    search.redo.unlink()
    # a search that found no value (its start ran out of memory) is a result: not redone on
    # every invocation (review: it was, with its cell's runs, tables and report)
    none = {"status": "oom", "value": None, "detail": "2 already runs out of memory"}
    oom = [{"value": 2, "status": "oom"}]
    search.result.write_text(json.dumps(none | {"probes": oom, "search_digest": digest}))
    assert campaign(tmp_path, suite).search_inputs(cell_id) == []

    # a search that ended on a probe's timeout is searched again under a longer limit only
    timed_out = {"status": "timeout", "value": None, "detail": "the probe at 4 ended timeout"}
    probed = [{"value": 2, "status": "ok"}, {"value": 4, "status": "timeout"}]
    data = timed_out | {"probes": probed, "search_digest": digest, "time_limit_min": 1}
    search.result.write_text(json.dumps(data))
    assert campaign(tmp_path, suite | {"time_limit_min": 1}).search_inputs(cell_id) == []
    assert campaign(tmp_path, suite | {"time_limit_min": 5}).search_inputs(cell_id) == [
        str(search.redo)
    ]
    search.redo.unlink()

    write_result(4)
    run = c.results.run(cell_id, 1)
    run.dir.mkdir(parents=True)
    run.manifest.write_text(json.dumps({"batch_size_resolved": 4}))
    run.measured(c.measure_digest(cell_id)).touch()  # of the suite's measure
    assert str(run.redo) not in campaign(tmp_path, suite).run_inputs(cell_id, 1)
    probes[1] = {"value": 2, "status": "ok", "full_length": True}
    write_result(2)  # the result now holds 2 (confirmed); the run trained at 4
    assert str(run.redo) in campaign(tmp_path, suite).run_inputs(cell_id, 1)


def test_site_settings_that_change_what_runs_redo_its_runs_and_the_rest_none(tmp_path, monkeypatch):
    """Review: site.env, the setup lines and the container were no part of what a run measures,
    so runs measured with NCCL_IB_DISABLE=1 (or another image, another `module load`) stayed the
    suite's figures after the site changed them. The variables of every rank, and on Slurm the
    setup lines and the image, are in the measure; the partition or the mounts are not."""
    monkeypatch.chdir(tmp_path)
    cell_id = "pytorch.resnet50.fp32.noxla.b2.1n1g"
    suite = SUITE | {"cases": SUITE["cases"][:1]}

    def measured(backend: str, site: dict) -> dict:
        return campaign(tmp_path, suite | {"backend": backend, "site": site}).measure(cell_id)

    c = campaign(tmp_path, suite)
    assert "env" not in c.measure(cell_id)  # a site that sets none: the digest of before
    run = c.results.run(cell_id, 1)
    run.dir.mkdir(parents=True)
    run.manifest.write_text(json.dumps({"measure": c.measure(cell_id)}))
    assert measured("local", {"partition": "gpu", "account": "x"}) == c.measure(cell_id)
    assert campaign(tmp_path, suite | {"site": {"partition": "gpu"}}).run_inputs(cell_id, 1) == []
    env = {"env": {"NCCL_IB_DISABLE": "1"}}
    assert measured("local", env) == c.measure(cell_id) | env
    assert campaign(tmp_path, suite | {"site": env}).run_inputs(cell_id, 1) == [str(run.redo)]
    image = {"image": "nvcr.io#nvidia/pytorch:24.05-py3", "mounts": ["/a:/a"]}
    slurm = measured("slurm", {"container": image})
    assert slurm == c.measure(cell_id) | {"container": image["image"]}
    assert measured("slurm", {"container": image | {"mounts": []}, "partition": "b"}) == slurm
    assert measured("local", {"container": image}) == c.measure(cell_id)  # Slurm's only
    setup = ["module load cuda/12.4"]
    assert measured("slurm", {"container": image, "setup": setup}) == slurm | {"setup": setup}


def test_a_run_records_the_site_settings_it_was_launched_with():
    """run-cell's measure and harness come apart (a hand-given --harness): the record states
    the site settings the run ran with, so it is not read as a run of the planned ones."""
    from dlperf.launch.measured import launched_with

    planned = {"cell": {}, "steps": 7, "env": {"A": "1"}, "setup": ["module load x"]}
    site = {"env": {"A": "2"}, "setup": ["module load x"], "container": {"image": "img"}}
    assert launched_with(planned, "slurm", site) == {
        "cell": {},
        "steps": 7,
        "env": {"A": "2"},
        "setup": ["module load x"],
        "container": "img",
    }
    assert launched_with(planned, "local", site) == {"cell": {}, "steps": 7, "env": {"A": "2"}}


def test_a_repeat_decision_edited_by_hand_is_made_again(tmp_path, monkeypatch):
    """Review: a decision's `more` was trusted as it stood, so one flipped by hand (true to
    false) stopped its cell short of the runs the rule asks for, its runs list saying it
    stopped for a reason that wanted more. The checkpoint records the digest of what it
    decided: a decision that no longer matches it gets the stamp that makes it again, as one
    made with other settings does."""
    from dlperf.measure.decision import Decision, decision_record

    monkeypatch.chdir(tmp_path)
    suite = SUITE | {"cases": SUITE["cases"][:1], "adaptive_repeats": {"max": 4, "ci_width_pct": 5}}
    c = campaign(tmp_path, suite)
    cell_id = "pytorch.resnet50.fp32.noxla.b2.1n1g"
    path = c.results.repeat_decision(cell_id, 2)
    path.parent.mkdir(parents=True)
    reason = "2 runs: a 95% CI of the median needs at least 6"
    made = decision_record(Decision(cell_id, 2, 2, True, reason, None, 0.5), c.config)
    path.write_text(json.dumps(made))
    stamp = str(c.results.remake(f"repeats/{cell_id}/after_r2"))
    assert campaign(tmp_path, suite).decision_inputs(cell_id, 2)["remake"] == []
    path.write_text(json.dumps(made | {"more": False}))
    assert campaign(tmp_path, suite).decision_inputs(cell_id, 2)["remake"] == [stamp]
    os.remove(stamp)
    path.write_text(json.dumps(made))
    other = suite | {
        "adaptive_repeats": {"max": 5, "ci_width_pct": 5}
    }  # made with other settings: as before
    assert campaign(tmp_path, other).decision_inputs(cell_id, 2)["remake"] == [stamp]


def test_a_results_folder_it_cannot_write_stops_the_start_up_naming_it(tmp_path, monkeypatch):
    """Review: `snakemake -n` in a checkout whose results/ was read-only (an archive mounted
    read-only) ended in "OSError in file rules/tables.smk, line 12: [Errno 30] Read-only file
    system: 'results/.redo/rules/tables'" and a traceback, from a stamp a dry run writes."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results").mkdir()
    monkeypatch.setattr(
        "dlperf.util.os.access", lambda path, mode: Path(path) != tmp_path / "results"
    )
    with pytest.raises(ConfigError) as err:
        campaign(tmp_path)
    assert str(err.value).startswith(
        "results: cannot be written (this user may not write it); the workflow, a dry run too, "
        "writes its runs and stamps there: run it where results/ can be written (a copy), or "
        "read these results with `dlperf plan --results results`"
    )


def test_a_results_that_is_a_file_stops_the_start_up_naming_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results").write_text("not a folder\n")
    with pytest.raises(ConfigError, match=r"^results: is a file; the workflow"):
        campaign(tmp_path)
    assert (tmp_path / "results").read_text() == "not a folder\n"
