"""A suite as the workflow runs it: rules/common.smk wires Snakemake to one Campaign.

Everything the workflow knows before a job runs is computed here once, when the Snakefile is
read, and tested here: the validated suite (its baselines read, so a bad one stops nothing late),
its cells and where each is placed (an impossible layout stops the dry run), the campaign plan
whose run order becomes the jobs' priorities, what each run measures, and the inputs and params
of the rules (a param changes exactly when what its output shows would).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

from dlperf import environments
from dlperf.adapters import Launcher, get_adapter
from dlperf.config import Suite, resolve_baselines, snakemake_config
from dlperf.errors import ConfigError
from dlperf.launch.allocation import Allocation, LocalMachine, allocate, check_extra_args
from dlperf.launch.measured import measure_digest, measure_of, redo_inputs
from dlperf.launch.spec import harness_json
from dlperf.matrix import CellSpec
from dlperf.measure.decision import DECISION_KEYS, made_otherwise
from dlperf.paths import RESULTS, RUN_MANIFEST_PATTERN, ResultPaths, RunPaths
from dlperf.plan.jobs import WORKFLOW_TIME_LIMIT_S, PlanError
from dlperf.plan.maxbatch import (
    found_value,
    recorded_other_value,
    recorded_search_digest,
    search_params,
    search_timed_out_sooner,
    searched,
    usable_result,
)
from dlperf.plan.plan import machine_site, make_plan, plan_text, run_priorities
from dlperf.rulecode import rule_code
from dlperf.util import folder_problem, json_digest, marker_time_ns, modified_ns, stamp_inputs

T = TypeVar("T")
# processes the tables rule reads runs with at most: a Slurm login node, where it runs, is shared
TABLES_READERS = 4
# cases: the tables list the planned cells, each missing one too (a case removed from the suite
# must leave them with .snakemake/ lost as well)
TABLES_KEYS = ("cases", "window", "repeats", "variance", "adaptive_repeats")
REPORT_KEYS = ("name", "report", "baselines", "repeats", "window", "backend", "device",
               "time_limit_min", "cases")  # fmt: skip
PLAN_KEYS = ("name", "cases", "repeats", "site", "time_limit_min", "backend", "device")


@dataclass(frozen=True)
class PlanOutcome:
    """The plan made at start-up: its run order as priorities, and what to log (a warning when
    it has no schedule; the jobs are still all there)."""

    priorities: dict[tuple[str, int], int]
    message: str
    scheduled: bool


@dataclass
class Campaign:
    config: dict[str, Any]
    basedir: Path  # the workflow's folder: envs/ and the shipped baselines are there
    local: LocalMachine | None  # this machine, for the local backend
    cells: dict[str, CellSpec] = field(init=False)
    allocations: dict[str, Allocation] = field(init=False)
    results: ResultPaths = field(default_factory=ResultPaths)
    _once: dict[tuple[str, str], Any] = field(default_factory=dict, init=False, repr=False)
    _newest_change_ns: int = field(default=0, init=False, repr=False)  # of the runs' files

    def __post_init__(self) -> None:
        self.suite = Suite(self.config)
        self.cells = {spec.id: spec for spec in self.suite.cell_specs()}
        self.allocations = {
            cell_id: allocate(
                spec.cell,
                get_adapter(spec.cell.framework).launcher,
                self.config["backend"],
                self.config["site"],
                self.local,
            )
            for cell_id, spec in self.cells.items()
        }

    @classmethod
    def load(
        cls,
        loaded: Mapping[str, Any],
        configfiles: Sequence[str | Path],
        cli: Mapping[str, Any],
        basedir: Path,
        cwd: Path | None = None,
    ) -> Campaign:
        """The campaign of what Snakemake loaded (dlperf.config.snakemake_config: errors name the
        file, line and key), its baselines found and read, its cells placed on the site or on
        this machine. Raises ConfigError or ValueError."""
        cwd = cwd or Path.cwd()
        config = snakemake_config(loaded, configfiles, cli, search=[cwd, basedir])
        problem = folder_problem(cwd / RESULTS)
        if problem:  # a dry run writes there too: the stamps of what to redo
            raise ConfigError(
                f"{RESULTS}: {problem}; the workflow, a dry run too, writes its runs and stamps "
                f"there: run it where {RESULTS}/ can be written (a copy), or read these results "
                f"with `dlperf plan --results {RESULTS}` and `dlperf report {RESULTS}/tables/cells.tsv`"
            )
        return cls.of(config, basedir, cwd)

    @classmethod
    def of(cls, config: dict[str, Any], basedir: Path, cwd: Path) -> Campaign:
        """The campaign of a validated suite (dlperf.config.load), as the workflow places it:
        its baselines found and read, its cells placed. Raises ConfigError or ValueError."""
        resolve_baselines(config, search=[cwd, basedir])
        if config["baselines"]:
            # imported here: pandas would double the start-up of every dry run without baselines
            from dlperf.report.load import load_baseline

            for i, baseline in enumerate(config["baselines"]):
                load_baseline(baseline["name"], Path(baseline["path"]), i)
        check_extra_args(config["site"])
        local = LocalMachine.probe(config["device"]) if config["backend"] == "local" else None
        return cls(config, basedir, local)

    # ------------------------------------------------------------------------------ start-up

    def plan_site(self) -> dict[str, Any]:
        """make_plan's site arguments: locally the site is this machine, one node, one run at a
        time; else the suite's `site`."""
        return {} if self.local is None else machine_site(self.local.devices, self.local.kind)

    def plan(self) -> PlanOutcome:
        """The campaign's plan (pulp), logged in every run and dry run."""
        try:
            plan = make_plan(
                self.config,
                self.results.root,
                time_limit_s=WORKFLOW_TIME_LIMIT_S,
                **self.plan_site(),
            )
        except PlanError as err:
            return PlanOutcome({}, f"dlperf plan: no schedule: {err}", False)
        return PlanOutcome(run_priorities(plan), plan_text(plan, cells=False), True)

    def job_environment(self) -> dict[str, str]:
        """What jobs inherit: `python -m dlperf` on the interpreter Snakemake runs on, where and
        how runs are launched (DLPERF_HARNESS: not a param; what of the site changes what runs is
        in the measure, dlperf.launch.measured.site_measure, and the rest reruns nothing), and
        where envs/*.txt are."""
        return {
            "PATH": os.pathsep.join([str(self._python_dir()), os.environ.get("PATH", "")]),
            "DLPERF_HARNESS": harness_json(self.config),
            "DLPERF_WORKFLOW_DIR": str(self.basedir),
        }

    def _python_dir(self) -> Path:
        """Where `python` is this interpreter (the rules run `python -m dlperf`)."""
        return environments.python_command_dir(Path(self.config["site"]["environments"]["root"]))

    # ------------------------------------------------------------------------------ one run

    def cell(self, cell_id: str) -> CellSpec:
        try:
            return self.cells[cell_id]
        except KeyError:
            raise ValueError(f"cell {cell_id} is not in the configured matrix") from None

    def once(self, what: str, key: str, make: Callable[[], T]) -> T:
        """`make()`, computed once per (what, key): 5,000 jobs ask for 1,000 cells' values."""
        if (what, key) not in self._once:
            self._once[what, key] = make()
        return cast(T, self._once[what, key])

    def measure(self, cell_id: str) -> dict[str, Any]:
        """What a run measures (dlperf.launch.measured.measure_of)."""
        return self.once(
            "measure", cell_id, lambda: measure_of(self.cell(cell_id), self.config, self.basedir)
        )

    def measure_digest(self, cell_id: str) -> str:
        """dlperf.launch.measured.measure_digest of the cell's measure."""
        return self.once("digest", cell_id, lambda: measure_digest(self.measure(cell_id)))

    def measure_json(self, cell_id: str) -> str:
        """The run rule's param: a change reruns that cell's runs and nothing else."""
        return self.once("json", cell_id, lambda: json.dumps(self.measure(cell_id), sort_keys=True))

    def run_inputs(self, cell_id: str, repeat: int) -> list[str]:
        """A run's inputs: for a `max` cell its search result, and for a run recorded with
        another measure (another environment too: a changed pin), or timed out under a shorter
        limit than the suite's, the stamp that redoes it even without Snakemake's records
        (dlperf.launch.measured.redo_inputs)."""
        spec = self.cell(cell_id)
        option = searched(spec)
        result = self.results.max_batch(cell_id).result
        search = [str(result)] if option else []
        if cell_id not in self.cells_on_disk:
            return search  # no record, no stamp: nothing to redo
        run = self.results.run(cell_id, repeat)
        other_value = False
        if option:  # a run recorded at another value than the search's is redone too
            value = self.once("found", cell_id, lambda: found_value(result, cell_id))
            other_value = recorded_other_value(run.manifest, option, value)
        limit = self.config["time_limit_min"]
        redo = redo_inputs(run, self.measure_digest(cell_id), limit, other_value)
        return search + redo

    @functools.cached_property
    def cells_on_disk(self) -> set[str]:
        """The cells with runs or redo stamps when the workflow started. A cell that gets its
        first run later has no record of another measure to redo, nor a stamp: what this tells
        stays true for the whole workflow."""
        return self.results.cells_on_disk()

    def search_json(self, cell_id: str) -> str:
        """The find_max_batch rule's param: what the search depends on."""
        spec = self.cell(cell_id)
        return json.dumps(search_params(spec, self.measure(cell_id), self.config), sort_keys=True)

    def search_inputs(self, cell_id: str) -> list[str]:
        """The find_max_batch rule's inputs: a stamp that redoes the search when its result
        records other search params than these (their digest), even with Snakemake's records
        lost (util.stamp_inputs): a changed ceiling or environment (the measure names it), a
        result copied from another cell's search, or a search that ended on a timeout under a
        shorter limit than the suite's."""
        result = self.results.max_batch(cell_id).result
        digest = json_digest(json.loads(self.search_json(cell_id)))
        # a result it cannot use (a value none of its probes confirmed: edited by hand) too;
        # one that found no value (its start ran out of memory, a skipped cell) is a result
        stale = result.exists() and (
            recorded_search_digest(result) != digest
            or not usable_result(result, cell_id)
            or search_timed_out_sooner(result, self.config["time_limit_min"])
        )
        return stamp_inputs(self.results.max_batch(cell_id).redo, result, stale)

    def task_logs(self, cell_id: str) -> list[str]:
        """The log file names a run of `cell_id` writes: one per rank, or one per node."""
        allocation = self.allocations[cell_id]
        per_node = get_adapter(self.cells[cell_id].cell.framework).launcher is Launcher.PER_NODE
        tasks = allocation.nodes * allocation.tasks_per_node
        return [RunPaths(cell_id, 1).task_log(i, per_node).name for i in range(tasks)]

    # ------------------------------------------------------------------------------ all runs

    def every_run(self) -> list[tuple[str, int]]:
        """(cell id, repeat) of every run there may be: the `repeats`, and with adaptive repeats
        as many as they may add."""
        adaptive = self.config.get("adaptive_repeats") or {}
        top = max(self.config["repeats"], adaptive.get("max", 0))
        return [(cell_id, repeat) for cell_id in self.cells for repeat in range(1, top + 1)]

    def all_manifests(self) -> list[str]:
        """Every planned run's manifest (formatted, not built from Path objects: 5,000 runs)."""
        return [
            RUN_MANIFEST_PATTERN.format(cell=spec.id, repeat=repeat)
            for spec, repeat in self.suite.runs()
        ]

    def edited_logs(self, runs: Iterable[tuple[str, int]]) -> list[list[Any]]:
        """Task logs changed or deleted since their run wrote its manifest (written last): part
        of a param of whatever reads the logs, so a hand edit rebuilds it and nothing else does.

        The logs are not Snakemake files: 5,000 runs of up to 32 ranks would be 86,000 more files
        to index on every dry run (4.4x a bare Snakefile). Their manifests are files, so a run
        that never finished is redone; a deleted log is that run's parse_error, which names it.
        """
        changed: list[list[Any]] = []
        for cell_id, repeat in runs:
            run = self.results.run(cell_id, repeat)
            try:
                manifest = os.stat(run.manifest)
            except FileNotFoundError:
                continue  # not run yet, or to be redone: the manifest brings its logs
            self._newest_change_ns = max(self._newest_change_ns, manifest.st_ctime_ns)
            for name in self.task_logs(cell_id):
                path = str(run.dir / name)
                try:
                    log = os.stat(path)
                except FileNotFoundError:
                    changed.append([path, "missing"])
                    continue
                self._newest_change_ns = max(self._newest_change_ns, log.st_ctime_ns)
                if log.st_mtime_ns > manifest.st_mtime_ns:
                    changed.append([path, log.st_mtime_ns, log.st_size])
        return changed

    def decision_inputs(self, cell_id: str, runs: int) -> dict[str, list[str]]:
        """A repeat decision's inputs: the runs it reads, and a stamp that remakes it when it was
        made with other settings (its recorded digest), also with Snakemake's records lost, or
        edited by hand since (decision.made_otherwise)."""
        decision = self.results.repeat_decision(cell_id, runs)
        stale = decision.exists() and made_otherwise(decision, self.config)
        stamp = self.results.remake(f"repeats/{cell_id}/after_r{runs}")
        return self.cell_manifests(cell_id, runs) | {"remake": stamp_inputs(stamp, decision, stale)}

    def cell_manifests(self, cell_id: str, runs: int) -> dict[str, list[str]]:
        """The manifests of a cell's first `runs` runs (what a repeat decision reads)."""
        return {
            "manifests": [str(self.results.run(cell_id, r).manifest) for r in range(1, runs + 1)]
        }

    def adaptive_run_lists(self) -> list[str]:
        """Every cell's list of the runs it got (inputs of the tables); none without adaptive
        repeats."""
        if not self.config.get("adaptive_repeats"):
            return []
        return [str(self.results.adaptive_runs(cell_id)) for cell_id in self.cells]

    # ------------------------------------------------------------------------------ params

    def _settings(self, keys: Iterable[str]) -> dict[str, Any]:
        return {k: self.config.get(k) for k in keys}

    def tables_params(self) -> str:
        """What the tables are computed with besides the runs' manifests."""
        return json.dumps(self._settings(TABLES_KEYS), sort_keys=True, default=str)

    def tables_threads(self, cores: int) -> int:
        """The tables rule's threads: its processes reading runs (dlperf.measure.runs)."""
        return min(cores, TABLES_READERS)

    def tables_edited_logs(self) -> str:
        """Made when the workflow starts: only the cells with runs on disk can have logs."""
        on_disk = self.cells_on_disk
        return json.dumps(self.edited_logs(run for run in self.every_run() if run[0] in on_disk))

    def adaptive_params(self, cell_id: str, runs: int) -> str:
        """A repeat decision's settings, and its runs' task logs edited since they ran."""
        edited = self.edited_logs((cell_id, r) for r in range(1, runs + 1))
        return json.dumps(self._settings(DECISION_KEYS) | {"edited_logs": edited}, sort_keys=True)

    def report_params(self) -> str:
        """Every setting the report shows or uses: a change re-renders it, never leaves it
        stale."""
        # each baseline's content too: a file replaced with its mtime kept (cp -p) is re-read
        contents = {
            b["path"]: hashlib.sha256(Path(b["path"]).read_bytes()).hexdigest()[:16]
            for b in self.config["baselines"]
        }
        settings = self._settings(REPORT_KEYS) | {"baseline_contents": contents}
        return json.dumps(settings, sort_keys=True, default=str)

    def plan_params(self) -> str:
        """What the plan is made of besides earlier runs: a change remakes it (before any run, as
        the plan logged at start-up), so the report states the plan that was followed."""
        settings = self._settings(PLAN_KEYS) | {
            "results": str(self.results.root),
            "plan_site": self.plan_site(),  # this machine, when local
            "time_limit_s": WORKFLOW_TIME_LIMIT_S,
        }
        return json.dumps(settings, sort_keys=True, default=str)

    def code_inputs(self, rule: str) -> list[str]:
        """A rule's `code` input: its script (workflow/scripts/RULE.py) and the dlperf code it
        runs (rule_code). Snakemake's own code trigger is off (profiles/default), so these are
        what remakes the rule's outputs after an edit."""
        return [str(self.basedir / "workflow" / "scripts" / f"{rule}.py"), *rule_code(rule)]

    # ------------------------------------------------------------------------------ outputs

    def report_outputs(self) -> list[str]:
        langs = self.config["report"]["languages"]
        return [str(self.results.report(lang, ext)) for lang in langs for ext in ("md", "html")]

    # ------------------------------------------------------------------ made with what params

    def rule_params(self, rule: str) -> dict[str, str]:
        """The `params:` of a rule after the runs (tables, report, plan), computed once: the rule
        and its marker (made_marker) read the same values."""
        makers = {
            "tables": lambda: {
                "settings": self.tables_params(),
                "edited_logs": self.tables_edited_logs(),
            },
            "report": lambda: {"settings": self.report_params()},
            "plan": lambda: {"settings": self.plan_params()},
        }
        return self.once("rule_params", rule, makers[rule])

    def _rule_files(self, rule: str) -> list[Path]:
        """The files the rule writes (its folders aside), its stamp's output first."""
        return {
            "tables": [self.results.cells, self.results.runs, self.results.steps],
            "report": [Path(p) for p in self.report_outputs()],
            "plan": [self.results.tables / "plan.json"],
        }[rule]

    def _rule_output(self, rule: str) -> Path:
        return self._rule_files(rule)[0]

    def made_marker(self, rule: str) -> str:
        """A `touch` output of the rule named by its params' digest: what its output was made
        with, kept beside the results (Snakemake keeps it in .snakemake/, which a fresh clone of a
        results folder, a new machine or `rm -rf .snakemake` loses: then a changed window or
        report setting left the tables and reports of the old ones, shown as ok). A marker older
        than a file of the rule's output was made before that file's last change: a remake with
        other params (a setting changed and changed back), or an edit by hand: removed."""
        marker = self.results.made(rule, json_digest(self.rule_params(rule)))
        # Any file of the output modified since (a runs table edited by hand: the report would
        # show its figures). Not by its ctime: a copied results folder would remake its plan,
        # which states the plan its runs followed. The tables also go when a run's manifest or
        # log changed in any way (its ctime, which `cp -p`, `touch -r` or `rsync -a` cannot set
        # back; the scan is the edited logs' param's).
        changed = max(map(modified_ns, self._rule_files(rule)))
        if rule == "tables":
            changed = max(changed, self._newest_change_ns)
        try:
            if marker_time_ns(marker) < changed:
                marker.unlink()
        except FileNotFoundError:
            pass
        return str(marker)

    def remake_inputs(self, rule: str) -> list[str]:
        """The rule's extra input: a stamp that remakes its output when it stands without the
        marker of these params (util.stamp_inputs), whatever target asked for it."""
        output = self._rule_output(rule)
        stale = output.exists() and not Path(self.made_marker(rule)).exists()
        return stamp_inputs(self.results.remake(rule), output, stale)

    def final_outputs(self) -> list[str]:
        """The reports, and each run whose manifest is missing while the tables are there:
        Snakemake would leave a missing input of an up-to-date job alone, so a run whose manifest
        was deleted (or whose rerun was interrupted) is asked for by name. Without tables, the
        tables rule asks for every run. Listing all 5,000 manifests here cost a dry run 1.2 s."""
        reports = self.report_outputs()
        if not self.results.cells.exists():
            return reports
        wanted = self.all_manifests() + self.adaptive_manifests()
        return reports + [m for m in dict.fromkeys(wanted) if not os.path.exists(m)]

    def adaptive_manifests(self) -> list[str]:
        """The runs beyond `repeats` that the cells' decisions added (their runs.json lists): one
        deleted is asked for by name too, as a planned run is."""
        found: list[str] = []
        for path in map(Path, self.adaptive_run_lists()):
            try:
                found += [str(m) for m in json.loads(path.read_text())["manifests"]]
            except (OSError, ValueError, KeyError, TypeError):
                continue  # none yet, or unreadable: the tables rule names it
        return found
