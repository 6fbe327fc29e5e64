"""The probe runs of a `max` cell's search (dlperf.plan.maxbatch's rules), launched as any run is, and
the find_max_batch rule's job: `python -m dlperf.launch.probes --search JSON --result PATH`."""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from dlperf.launch.measured import measure_digest
from dlperf.launch.record import RunRecord
from dlperf.launch.spec import Harness
from dlperf.launch.submit import run_cell
from dlperf.matrix import Cell, names_slug, sweep_slug
from dlperf.parse.records import ParseError
from dlperf.paths import MaxBatchPaths
from dlperf.plan.maxbatch import (
    BATCH,
    Probe,
    ProbeRun,
    SearchResult,
    SearchSettings,
    probe_cell,
    search,
)
from dlperf.status import Status
from dlperf.util import atomic_write_json, json_digest

log = logging.getLogger(__name__)


def probe_run(
    measure: dict[str, Any],
    harness: Harness,
    paths: MaxBatchPaths,
    settings: SearchSettings,
    option: str = BATCH,
) -> ProbeRun:
    """A probe function that runs the cell of `measure` for real at a given value of `option`:
    for `probe_steps` steps, or as many as the cell's runs (a confirmation, in its own folder).
    Each probe is a cell of its own (maxbatch.probe_cell)."""
    cell = Cell.from_key(measure["cell"])

    def probe(value: int, full_length: bool) -> Probe:
        probed = probe_cell(cell, option, value)
        options = dict(measure["options"])
        if option != BATCH:
            options[option] = value
        steps = measure["steps"] if full_length else settings.probe_steps
        probe_measure = measure | {"cell": probed.key(), "steps": steps, "options": options}
        probe_harness = dataclasses.replace(harness, results_root=str(paths.probes))
        repeat = 2 if full_length else 1  # r1: the short probe, r2: the confirmation
        manifest_path = paths.probe(probed.id, repeat).manifest
        record = finished_probe(manifest_path, probe_measure)
        if record is None:
            record = run_cell(probe_measure, repeat, probe_harness, manifest_path)
        else:
            log.info("%s: %s, as measured before", probed.id, record.status)
        return Probe(value, record.status, record.status_detail, str(manifest_path), full_length)

    return probe


def finished_probe(manifest: Path, measure: dict[str, Any]) -> RunRecord | None:
    """A probe that an interrupted run of this same search (find_max_batch keeps its probes
    only then) ran to its end, of this very measure (which names its environment, so a probe in
    an environment whose pins changed since is not): it fit (ok) or did not (oom). On a cluster
    each probe queued for its allocation; a search resumed after Ctrl-C or a lost node does not
    run them again. Any other (failed, timed out, of another measure, unreadable) runs again."""
    try:
        record = RunRecord.read(manifest)
    except (ParseError, OSError):
        return None
    if record.status not in (Status.OK, Status.OOM):
        return None
    return record if record.measure_digest == measure_digest(measure) else None


def find_max_batch(
    search_params: dict[str, Any], harness: Harness, result_path: Path
) -> SearchResult:
    """Run the search of one `max` cell and write its result (the rule's output) last."""
    cell = Cell.from_key(search_params["cell"])
    option = search_params.get("option") or BATCH
    if option == BATCH and cell.batch_size != "max":
        raise ValueError(f"{cell.id} is not a batch_size max cell")
    if option != BATCH and not names_slug(cell.variant, sweep_slug(option, "max")):
        raise ValueError(f"{cell.id} does not sweep {option} with the value max")
    settings = SearchSettings.from_config(search_params["search"])
    paths = MaxBatchPaths(cell.id, Path(harness.results_root))
    if paths.result.resolve() != result_path.resolve():
        raise ValueError(f"search result path {result_path} does not belong to {cell.id}")
    digest = json_digest(search_params)
    begun = paths.probes / "searching.json"  # removed once the result is written
    if _begun_digest(begun) != digest:  # not this search interrupted: its probes from scratch
        shutil.rmtree(paths.probes, ignore_errors=True)
        paths.probes.mkdir(parents=True)
        atomic_write_json(begun, {"search_digest": digest})
    measure = {k: v for k, v in search_params.items() if k not in ("search", "option")}
    result = search(probe_run(measure, harness, paths, settings, option), settings, option)
    atomic_write_json(
        result_path,
        {
            "cell": cell.key(),
            "option": option,
            "settings": dataclasses.asdict(settings),
            "search_digest": digest,  # what it was searched with
            "time_limit_min": harness.time_limit_min,  # a timeout under it is searched again
        }
        | result.to_dict(),
    )
    begun.unlink()
    return result


def _begun_digest(begun: Path) -> str | None:
    """The search params' digest of a search that began and never wrote its result."""
    try:
        return str(json.loads(begun.read_text())["search_digest"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def main(argv: list[str] | None = None) -> int:
    """The find_max_batch rule's job."""
    parser = argparse.ArgumentParser(prog="python -m dlperf.launch.probes", description=__doc__)
    parser.add_argument("--search", required=True, help="JSON: the cell, options, device, search")
    parser.add_argument("--result", type=Path, required=True)
    parser.add_argument("--harness", default=os.environ.get("DLPERF_HARNESS"))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    if not args.harness:
        parser.error("needs --harness or DLPERF_HARNESS (backend, site, time limits)")
    result = find_max_batch(
        json.loads(args.search), Harness(**json.loads(args.harness)), args.result
    )
    log.info("%s: %s %s", args.result, result.status, result.detail)
    return 0


if __name__ == "__main__":
    sys.exit(main())
