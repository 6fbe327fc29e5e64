"""Command line: `dlperf run-cell` (called by the workflow), `dlperf adapters`, `dlperf check`,
`dlperf plan`, `dlperf sources` (the upstream code a suite runs, checked out for a machine
without network), `dlperf diff` (A/B of two results folders: exit 1 on a significant regression,
2 on bad input), `dlperf report` (the report of cells tables alone, nothing run), `dlperf
gpu-proof` (the GPU suite and its plain-loop references, dlperf.gpuproof)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from dlperf.argtypes import above, at_least, count, fraction
from dlperf.errors import ConfigError
from dlperf.paths import RESULTS
from dlperf.plan.jobs import DEFAULT_TIME_LIMIT_S


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["gpu-proof"]:  # its options are its own (dlperf.gpuproof.kit)
        from dlperf.gpuproof import kit

        try:
            return kit.main(argv[1:])
        except ConfigError as err:
            print(f"dlperf gpu-proof: {err}", file=sys.stderr)
            return 2
    parser = argparse.ArgumentParser(prog="dlperf", description="DLPerf benchmarks as a workflow")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run-cell", help="submit one run, wait for it, write its manifest")
    run.add_argument("--measure", required=True, help="JSON: what is measured (the rule's params)")
    run.add_argument(
        "--harness",
        default=os.environ.get("DLPERF_HARNESS"),
        help="JSON: backend, site, time limits (default: $DLPERF_HARNESS, set by the workflow)",
    )
    run.add_argument(
        "--manifest", type=Path, required=True, help="results/runs/CELL/rREPEAT/manifest.json"
    )

    check = sub.add_parser("check", help="validate a suite config and print its plan")
    check.add_argument("config", type=Path, help="the suite file")
    check.add_argument(
        "more",
        type=Path,
        nargs="*",
        default=[],
        help="files merged over it, in order (e.g. slurm/site.yaml)",
    )

    plan = sub.add_parser(
        "plan", help="GPU-hours, node-hours and makespan of a suite on its site, and the run order"
    )
    plan.add_argument("config", type=Path)
    plan.add_argument(
        "more",
        type=Path,
        nargs="*",
        default=[],
        help="files merged over it, in order (e.g. slurm/site.yaml)",
    )
    plan.add_argument(
        "--results",
        type=_folder,
        default=RESULTS,
        help="earlier results for run durations (default: results, if there)",
    )
    plan.add_argument("--nodes", type=count, help="nodes for the campaign (default: site.nodes)")
    plan.add_argument(
        "--gpus-per-node", type=count, help="GPUs per node (default: site.gpus_per_node_max)"
    )
    share = plan.add_mutually_exclusive_group()
    share.add_argument("--shared", dest="exclusive", action="store_false", default=None)
    share.add_argument("--exclusive", dest="exclusive", action="store_true", default=None)
    plan.add_argument(
        "--time-limit-s",
        type=above(0),
        default=DEFAULT_TIME_LIMIT_S,
        help="solver time limit",
    )
    plan.add_argument("--runs", action="store_true", help="also print every run's planned start")

    sources = sub.add_parser(
        "sources",
        help="check out the upstream code a suite's cells run, at the adapters' commits, only the "
        "folders they need (option sources_dir points the cells at DIR)",
    )
    sources.add_argument("config", type=Path, help="the suite file")
    sources.add_argument("--into", type=Path, required=True, help="the sources_dir to fill")
    sources.add_argument(
        "--from",
        dest="source",
        default="https://github.com",
        help="URL prefix of the repositories (URL/owner/name; default https://github.com), or a "
        "template with {owner} and {name}, e.g. 'file:///mirrors/{owner}+{name}/repo'",
    )

    diff = sub.add_parser(
        "diff",
        help="A/B: two results folders (exit 1 on a significant regression), "
        "two per-run JSONs or two cells tables",
    )
    what = "a results folder (or the folder holding results/), a per-run JSON or a .tsv table"
    diff.add_argument("a", type=Path, help=f"baseline: {what}")
    diff.add_argument("b", type=Path, help="the one compared with A, of the same kind")
    diff.add_argument(
        "--threshold",
        type=at_least(0),
        default=0.05,
        help="relative slow-down that counts as a regression when significant (default 0.05)",
    )
    diff.add_argument("--alpha", type=fraction, default=0.05, help="test level (default 0.05)")

    report = sub.add_parser(
        "report",
        help="render the en/zh Markdown and HTML report from cells tables alone (nothing is run)",
    )
    report.add_argument(
        "tables",
        type=Path,
        nargs="+",
        metavar="CELLS",
        help="cells tables (.tsv or .csv): measured, earlier, or published ones typed in; "
        "each becomes a source named after its file",
    )
    report.add_argument("--out", type=Path, required=True, help="folder for report.*.* and plots/")
    report.add_argument("--name", help="the report's title (default: the tables' file names)")

    sub.add_parser("adapters", help="list registered adapters and their options")
    sub.add_parser(
        "gpu-proof",
        help="prove the GPU paths on one GPU within a time budget (dlperf gpu-proof --help)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        if args.command == "run-cell":
            return _run_cell(args)
        if args.command == "check":
            return _check(args.config, args.more)
        if args.command == "plan":
            return _plan(args)
        if args.command == "sources":
            return _sources(args.config, args.into, args.source)
        if args.command == "diff":
            return _diff(args.a, args.b, args.alpha, args.threshold)
        if args.command == "report":
            return _report(args.tables, args.out, args.name)
        return _adapters()
    except ConfigError as err:
        print(f"dlperf: {err}", file=sys.stderr)
        return 2


def _folder(text: str) -> Path:
    if Path(text).exists() and not Path(text).is_dir():
        raise argparse.ArgumentTypeError(
            f"{text}: is a file; give the results folder (the folder that holds runs/ and tables/)"
        )
    if not Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text}: no such folder")
    return Path(text)


def _run_cell(args: argparse.Namespace) -> int:
    from dlperf.launch.measured import MEASURE_FIELDS, OPTIONAL_MEASURE_FIELDS
    from dlperf.launch.spec import Harness
    from dlperf.launch.submit import run_cell
    from dlperf.matrix import Cell
    from dlperf.paths import RunPaths

    if not args.harness:
        raise ConfigError("run-cell needs --harness or DLPERF_HARNESS (backend, site, time limits)")
    try:
        repeat = RunPaths.of_manifest(args.manifest).repeat  # run_cell checks the cell too
    except ValueError as err:
        raise ConfigError(f"run-cell --manifest {err}") from None
    if args.manifest.exists():  # run_cell clears the run's folder: Snakemake removed it first
        raise ConfigError(
            f"run-cell --manifest {args.manifest}: already measured (status "
            f"{_status_of(args.manifest)}); delete it to redo the run"
        )
    required = tuple(k for k in MEASURE_FIELDS if k not in OPTIONAL_MEASURE_FIELDS)
    measure = _json_object("--measure", args.measure, required)
    try:
        Cell.from_key(measure["cell"])
    except (KeyError, ValueError, TypeError, AttributeError) as err:
        raise ConfigError(
            f"run-cell --measure's cell: no cell of {measure['cell']!r} ({err})"
        ) from None
    try:
        harness = Harness(**_json_object("--harness", args.harness, ()))
    except TypeError as err:
        raise ConfigError(f"run-cell --harness: {err}") from None
    try:
        record = run_cell(measure, repeat, harness, args.manifest)
    except OSError as err:  # the disk filled, a folder it may not write: no record was written
        print(
            f"dlperf run-cell: {err.filename or args.manifest}: {err.strerror or err}; the run "
            "has no manifest, so the next invocation redoes it (what it logged is in "
            f"{args.manifest.parent} until then)",
            file=sys.stderr,
        )
        return 1
    logging.info("%s r%d: %s %s", record.cell_id, repeat, record.status, record.status_detail)
    return 0


def _json_object(option: str, text: str, keys: tuple[str, ...]) -> dict[str, Any]:
    """The JSON object an option gives, with the keys it must have (ConfigError naming it)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError(f"run-cell {option}: not JSON: {err}") from None
    if not isinstance(value, dict):
        raise ConfigError(f"run-cell {option}: not a JSON object: {text}")
    missing = [key for key in keys if key not in value]
    if missing:
        raise ConfigError(f"run-cell {option}: no key {', '.join(map(repr, missing))}")
    return value


def _status_of(manifest: Path) -> str:
    """A manifest's recorded status, as far as it can be read."""
    try:
        return str(json.loads(manifest.read_text())["status"])
    except (OSError, ValueError, KeyError, TypeError):
        return "unreadable"


def _check(path: Path, more: list[Path]) -> int:
    """The suite as the workflow takes it: valid, its baselines readable, every cell placeable
    on its backend (the site's limits, or this machine's devices for the local backend)."""
    from dlperf.campaign import Campaign
    from dlperf.config import load
    from dlperf.launch.allocation import AllocationError
    from dlperf.paths import WORKFLOW_DIR

    try:  # baselines are found as the workflow finds them: here, or in its checkout
        campaign = Campaign.of(load(path, *more), WORKFLOW_DIR, Path.cwd())
    except AllocationError as err:
        raise ConfigError(f"{path}: {err}") from None
    print(f"{path}: {campaign.suite.plan_summary()}")
    return 0


def _sources(path: Path, into: Path, source: str) -> int:
    from dlperf.config import Suite, load
    from dlperf.launch import sources

    checkouts = sources.needed(Suite(load(path)))
    if not checkouts:
        print(f"{path}: no upstream cells, no sources to check out")
        return 0
    placed = []
    try:
        for checkout in checkouts:
            placed.append(sources.place(checkout, into, source))
            print(placed[-1].line(), flush=True)
    except sources.SourcesError as err:
        print(f"dlperf sources: {err}", file=sys.stderr)
        return 1
    except OSError as err:  # --into a file, a device, a folder it may not write
        where = err.filename or into
        raise ConfigError(f"sources --into {into}: {where}: {err.strerror or err}") from None
    print(sources.total_line(placed))
    return 0


def _plan(args: argparse.Namespace) -> int:
    """The plan the workflow makes of the suite (its files merged as `check` merges them): on
    the local backend this machine, one run at a time; on Slurm the site; flags override."""
    from dlperf.config import load
    from dlperf.launch.allocation import LocalMachine
    from dlperf.plan.durations import no_runs_note
    from dlperf.plan.plan import machine_site, make_plan, plan_text, run_rows, text_table

    config = load(args.config, *args.more)
    flags = {"nodes": args.nodes, "gpus_per_node": args.gpus_per_node, "exclusive": args.exclusive}
    site: dict[str, Any] = {k: v for k, v in flags.items() if v is not None}
    if config["backend"] == "local" and not site:
        local = LocalMachine.probe(config["device"])
        site = machine_site(local.devices, local.kind)
    plan = make_plan(config, args.results, time_limit_s=args.time_limit_s, **site)
    note = no_runs_note(args.results)
    if note:
        print(note, file=sys.stderr)
    print(plan_text(plan))
    if args.runs:
        rows = run_rows(plan)
        print(text_table(rows, list(rows[0]), ".0f"))
    return 0


def _diff(a: Path, b: Path, alpha: float, threshold: float) -> int:
    """0: no regression; 1: a cell is significantly slower beyond the threshold; 2: bad input."""
    from dlperf.compare.inputs import DiffInputError

    try:
        return _diff_checked(a, b, alpha, threshold)
    except DiffInputError as err:
        print(f"dlperf diff: {err}", file=sys.stderr)
        return 2


def _diff_checked(a: Path, b: Path, alpha: float, threshold: float) -> int:
    from dlperf.compare import diff as compare
    from dlperf.compare import environment, inputs, verdicts

    kind_a, kind_b = inputs.diff_kind(a), inputs.diff_kind(b)
    if kind_a != kind_b:
        raise inputs.DiffInputError(
            f"{b}: is a {inputs.KIND_NAMES[kind_b]} but {a} is a {inputs.KIND_NAMES[kind_a]}; "
            "give two of the same kind"
        )
    if kind_a == "results":
        fa, fb = inputs.results_folder(a), inputs.results_folder(b)
        print("\n".join(environment.format_env_diff(*environment.env_diff(fa, fb))))
        if not (fa.runs_table.is_file() and fb.runs_table.is_file()) and (
            fa.cells_table.is_file() and fb.cells_table.is_file()
        ):
            lacking = [str(f.runs_table) for f in (fa, fb) if not f.runs_table.is_file()]
            print(f"no {' nor '.join(lacking)}: cell medians only, no test")
            kind_a, a, b = "cells_table", fa.cells_table, fb.cells_table
        else:
            table = compare.diff_results(fa, fb, alpha, threshold)
            print("\n".join(verdicts.format_results_diff(table, alpha, threshold)))
            return 1 if table.regression.any() else 0
    if kind_a == "runs_table":
        ra, rb = inputs.read_runs_table(a), inputs.read_runs_table(b)
        table = compare.diff_runs_tables(ra, rb, alpha, threshold)
        print("\n".join(verdicts.format_results_diff(table, alpha, threshold)))
        return 1 if table.regression.any() else 0
    notes: list[str] = []
    if kind_a == "run_json":
        frame, notes = compare.diff_runs(a, b)
    else:
        frame = compare.diff_cells(a, b)
        if not frame["reason"].astype(bool).any():
            frame = frame.drop(columns="reason")
    print("\n".join(verdicts.format_figures_diff(frame)))
    print("\n".join(notes))
    return 0


def _report(tables: list[Path], out: Path, name: str | None) -> int:
    from dlperf.report.load import table_in
    from dlperf.report.render import report_from_tables
    from dlperf.util import folder_problem

    for path in tables:
        if path.is_dir():
            raise ConfigError(
                f"dlperf report: {path}: is a folder; give a cells table (.tsv or .csv)"
                f"{table_in(path)}"
            )
    results = _workflow_results(out)
    if results is not None:
        where = "is" if results == out.absolute() else f"is inside {results},"
        raise ConfigError(
            f"dlperf report: --out {out}: {where} the workflow's results folder (it holds "
            "runs/ and tables/cells.tsv; its report is the workflow's); give another folder"
        )
    problem = folder_problem(out)
    if problem:
        raise ConfigError(f"dlperf report: --out {out}: {problem}; give a folder")
    try:
        written = report_from_tables(tables, out, name)
    except OSError as err:  # a folder that cannot be written, a table that cannot be read
        raise ConfigError(f"dlperf report: {err.filename or out}: {err.strerror or err}") from None
    for path in written:
        print(path)
    return 0


def _workflow_results(out: Path) -> Path | None:
    """The workflow results folder that `out` is, or is one or two levels inside: a folder
    holding runs/ and tables/cells.tsv."""
    from dlperf.paths import RUNS, ResultPaths

    folder = out.absolute()
    for candidate in (folder, *folder.parents[:2]):
        if (candidate / RUNS).is_dir() and ResultPaths(candidate).cells.is_file():
            return candidate
    return None


def _adapters() -> int:
    from dlperf.adapters import REGISTRY
    from dlperf.adapters.builtin import BuiltinWorkload
    from dlperf.adapters.releases import DEFAULT_RELEASE
    from dlperf.adapters.upstream import UpstreamAdapter
    from dlperf.i18n import english
    from dlperf.vocabulary import MODELS

    for name, cls in REGISTRY.items():
        adapter = cls()
        print(f"{name}: {english(adapter.title())} [{adapter.launcher}] {adapter.version}")
        print(f"  models: {', '.join(adapter.models)}; environment: {adapter.environment}")
        if isinstance(adapter, BuiltinWorkload) and adapter.sharded_models:
            print(
                f"  sharding fsdp: {', '.join(sorted(adapter.sharded_models))} (others: ddp only)"
            )
        if isinstance(adapter, BuiltinWorkload):
            for model, why in adapter.fsdp_lacks.items():
                print(f"  no sharding fsdp for {model}: {english(why)}")
        for model in (m for m in MODELS if m not in adapter.models):
            if model in adapter.lacks:
                print(f"  no {model}: {english(adapter.why_not(model))}")
        if isinstance(adapter, UpstreamAdapter):
            for release in (DEFAULT_RELEASE, *adapter.releases):
                print(f"  release {release}: {adapter.evidence_of(release)}")
        print(f"  options: {json.dumps(adapter.options, sort_keys=True)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
