"""Command line: `dlperf run-cell` (called by the workflow), `dlperf adapters`, `dlperf check`,
`dlperf plan`."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

from dlperf.errors import ConfigError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dlperf", description="DLPerf benchmarks as a workflow")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run-cell", help="submit one run, wait for it, write its manifest")
    run.add_argument("--measure", required=True, help="JSON: what is measured (the rule's params)")
    run.add_argument("--repeat", type=int, required=True)
    run.add_argument(
        "--harness",
        default=os.environ.get("DLPERF_HARNESS"),
        help="JSON: backend, site, time limits (default: $DLPERF_HARNESS, set by the workflow)",
    )
    run.add_argument("--manifest", type=Path, required=True)

    check = sub.add_parser("check", help="validate a suite config and print its plan")
    check.add_argument("config", type=Path, help="the suite file")
    check.add_argument(
        "more", type=Path, nargs="*", help="files merged over it, in order (e.g. slurm/site.yaml)"
    )

    plan = sub.add_parser(
        "plan", help="GPU-hours, node-hours and makespan of a suite on its site, and the run order"
    )
    plan.add_argument("config", type=Path)
    plan.add_argument(
        "--results", type=Path, default=Path("results"), help="earlier results for run durations"
    )
    plan.add_argument("--nodes", type=int, help="nodes for the campaign (default: site.nodes)")
    plan.add_argument(
        "--gpus-per-node", type=int, help="GPUs per node (default: site.gpus_per_node_max)"
    )
    share = plan.add_mutually_exclusive_group()
    share.add_argument("--shared", dest="exclusive", action="store_false", default=None)
    share.add_argument("--exclusive", dest="exclusive", action="store_true", default=None)
    plan.add_argument("--time-limit-s", type=float, default=4.0, help="solver time limit")
    plan.add_argument("--runs", action="store_true", help="also print every run's planned start")

    diff = sub.add_parser(
        "diff", help="A/B: two per-run JSONs, or two cells tables / results folders"
    )
    diff.add_argument("a", type=Path)
    diff.add_argument("b", type=Path)

    sub.add_parser("adapters", help="list registered adapters and their options")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        if args.command == "run-cell":
            return _run_cell(args)
        if args.command == "check":
            return _check(args.config, args.more)
        if args.command == "plan":
            return _plan(args)
        if args.command == "diff":
            return _diff(args.a, args.b)
        return _adapters()
    except ConfigError as err:
        print(f"dlperf: {err}", file=sys.stderr)
        return 2


def _run_cell(args: argparse.Namespace) -> int:
    from dlperf.launch.submit import Harness, run_cell

    if not args.harness:
        raise ConfigError("run-cell needs --harness or DLPERF_HARNESS (backend, site, time limits)")
    manifest = run_cell(
        json.loads(args.measure), args.repeat, Harness(**json.loads(args.harness)), args.manifest
    )
    logging.info(
        "%s r%d: %s %s",
        manifest["cell"]["cell_id"],
        args.repeat,
        manifest["status"],
        manifest["status_detail"],
    )
    return 0


def _check(path: Path, more: list[Path]) -> int:
    from dlperf.config import Suite, load

    print(f"{path}: {Suite(load(path, *more)).plan_summary()}")
    return 0


def _plan(args: argparse.Namespace) -> int:
    from dlperf.config import load
    from dlperf.plan import make_plan, plan_tables, plan_text

    plan = make_plan(
        load(args.config),
        args.results,
        nodes=args.nodes,
        gpus_per_node=args.gpus_per_node,
        exclusive=args.exclusive,
        time_limit_s=args.time_limit_s,
    )
    print(plan_text(plan))
    if args.runs:
        print(plan_tables(plan)["runs"].to_string(index=False, float_format=lambda v: f"{v:.0f}"))
    return 0


def _diff(a: Path, b: Path) -> int:
    from dlperf.compare import diff_cells, diff_runs

    table = diff_runs(a, b) if a.suffix == ".json" else diff_cells(a, b)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    return 0


def _adapters() -> int:
    from dlperf.adapters import REGISTRY

    for name, cls in REGISTRY.items():
        adapter = cls()
        print(f"{name}: {adapter.display_name} [{adapter.launcher}] {adapter.version}")
        print(f"  models: {', '.join(adapter.models)}; environment: {adapter.environment}")
        print(f"  options: {json.dumps(adapter.options, sort_keys=True)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
