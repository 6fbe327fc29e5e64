"""`batch_size: max`, found not typed: the largest batch per device a cell trains with; and the
same for any integer option a case sweeps with the value `max` (`sweep: {num_classes: [max]}`:
InsightFace's identities, W&D's vocabulary), with the case's `max_search` settings.

The search (one per `max` cell, cached as the find_max_batch rule's output):

- Probes are real runs of the cell at one value and a few steps, launched as any run is
  (dlperf.launch.submit.run_cell), each with its own logs, manifest and status under
  results/maxbatch/<cell>/ (dlperf.paths.MaxBatchPaths).
- Double the value from ``start`` (never past ``ceiling``) while probes are ok; the first that
  runs out of memory (status oom) bounds it. Then bisect between the last that fit and the first
  that did not until they are at most ``granularity`` apart. The result is the last that fit.
- Only oom means "too big". Any other status of a probe (failed, timeout, skipped...) ends the
  search with that status and the probe's reason: the cell's runs are recorded with it, never
  run at a guessed size. A first probe that is already oom: the cell is oom, as DLPerf shows it.
- Every probe of the ceiling fitting: the ceiling, and the result says so.
- **Confirmation**: the size found is run once more for as many steps as the cell's runs. Memory
  can grow after the first steps (allocator fragmentation: on a CPU under a memory cap, glibc's
  heap), so a short probe may pass at a size a whole run cannot. A confirmation that runs out of
  memory makes that size too big, and the largest smaller size whose probe fit is confirmed
  next. The runs of the cell then train at a size that has run their whole length once.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlperf.matrix import Cell, CellSpec, sweep_slug
from dlperf.paths import MaxBatchPaths
from dlperf.status import Status
from dlperf.util import atomic_write_json

log = logging.getLogger(__name__)


BATCH = "batch_size"  # what a search finds unless an option is searched


@dataclass(frozen=True)
class SearchSettings:
    """The suite's `max_batch_search` key, with a case's `max_search` over it for an option (the
    schema owns the defaults)."""

    start: int = 1
    ceiling: int = 4096
    granularity: int = 1
    probe_steps: int = 3

    @classmethod
    def from_config(cls, settings: dict[str, Any]) -> SearchSettings:
        return cls(**settings)


def searched(spec: CellSpec) -> str | None:
    """What a cell's search finds: batch_size for a `max` batch, the option it sweeps with the
    value `max`, or None (no search; the config allows one per cell)."""
    if spec.cell.batch_size == "max":
        return BATCH
    return next((name for name, value in spec.swept.items() if value == "max"), None)


def search_params(
    spec: CellSpec, measure: dict[str, Any], config: dict[str, Any]
) -> dict[str, Any]:
    """What a cell's search depends on: what its runs measure (their steps: the confirmation
    runs as long), what it searches and its settings."""
    option = searched(spec)
    settings = dict(config["max_batch_search"])
    if option != BATCH:
        settings |= spec.search
    return measure | {"search": settings, "option": option}


@dataclass(frozen=True)
class Probe:
    """One probe run: the value it tried and what became of it."""

    value: int
    status: str
    detail: str = ""
    manifest: str = ""
    full_length: bool = False  # a confirmation, as long as the cell's runs


@dataclass(frozen=True)
class SearchResult:
    status: str  # ok: a value was found; else why none was (oom, failed, skipped...)
    value: int | None
    detail: str
    probes: list[Probe] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SearchResult:
        probes = [Probe(**_renamed(p)) for p in data.get("probes", [])]
        value = data.get("value", data.get(BATCH))  # results before option searches: batch_size
        return cls(data["status"], value, data.get("detail", ""), probes)


def _renamed(probe: dict[str, Any]) -> dict[str, Any]:
    return {("value" if k == BATCH else k): v for k, v in probe.items()}


ProbeRun = Callable[[int, bool], Probe]  # (value, full length?) -> what became of it


def search(probe: ProbeRun, settings: SearchSettings, option: str = BATCH) -> SearchResult:
    """The largest value of `option` whose probe and confirmation are ok (see the module's
    rules)."""
    probes: list[Probe] = []
    what = option.replace("_", " ")
    key = "max_batch_search" if option == BATCH else "max_search"  # where its settings are

    def run(batch: int, full_length: bool = False) -> Probe:
        result = probe(batch, full_length)
        probes.append(result)
        kind = "confirmation" if full_length else "probe"
        log.info("%s at %s %d: %s %s", kind, what, batch, result.status, result.detail)
        return result

    def stopped(p: Probe) -> SearchResult:
        detail = f"the probe at {what} {p.value} ended {p.status}: {p.detail}"
        return SearchResult(p.status, None, detail, probes)

    fits: int | None = None
    too_big: int | None = None
    batch = settings.start
    while True:
        p = run(batch)
        if p.status == Status.OOM:
            too_big = batch
            break
        if p.status != Status.OK:
            return stopped(p)
        fits = batch
        if batch >= settings.ceiling:
            break
        batch = min(2 * batch, settings.ceiling)
    if fits is None:
        detail = f"{what} {settings.start} ({key}.start) already runs out of memory"
        return SearchResult(Status.OOM, None, detail, probes)
    if too_big is None:
        detail = f"{fits}: every probe fit, up to the ceiling ({key}.ceiling)"
        return SearchResult(Status.OK, fits, detail, probes)
    step = settings.granularity
    while too_big - fits > step:
        batch = fits + step * max(1, (too_big - fits) // step // 2)
        p = run(batch)
        if p.status == Status.OK:
            fits = batch
        elif p.status == Status.OOM:
            too_big = batch
        else:
            return stopped(p)
    return _confirm(run, probes, fits, too_big, step, what, key)


def _confirm(
    run: Callable[[int, bool], Probe],
    probes: list[Probe],
    fits: int,
    too_big: int,
    step: int,
    what: str,
    key: str,
) -> SearchResult:
    """Run `fits` for the whole run length; on oom step down to the largest smaller size that
    fit its probe (see the module's rules)."""
    while True:
        p = run(fits, True)
        if p.status == Status.OK:
            detail = f"{fits} fits, {too_big} runs out of memory"
            if step > 1:
                detail += f" (granularity {step})"
            return SearchResult(Status.OK, fits, detail, probes)
        if p.status != Status.OOM:
            detail = f"the confirmation at {what} {fits} ended {p.status}: {p.detail}"
            return SearchResult(p.status, None, detail, probes)
        too_big = fits
        smaller = [q.value for q in probes if q.status == Status.OK and q.value < fits]
        if not smaller:
            detail = f"no {what} from {key}.start runs a whole run ({fits} oom)"
            return SearchResult(Status.OOM, None, detail, probes)
        fits = max(smaller)


def probe_run(
    measure: dict[str, Any],
    harness: Any,
    paths: MaxBatchPaths,
    settings: SearchSettings,
    option: str = BATCH,
) -> ProbeRun:
    """A probe function that runs the cell of `measure` for real at a given value of `option`:
    for `probe_steps` steps, or as many as the cell's runs (a confirmation, in its own folder).
    Each probe is a cell of its own: the batch in its id, or the option's value in its variant
    (num_classes_max -> num_classes_2000)."""
    from dlperf.launch.submit import run_cell

    cell = Cell.from_key(measure["cell"])

    def probe(value: int, full_length: bool) -> Probe:
        options = dict(measure["options"])
        if option == BATCH:
            probe_cell = dataclasses.replace(cell, batch_size=value)
        else:
            variant = cell.variant.replace(sweep_slug(option, "max"), sweep_slug(option, value))
            probe_cell = dataclasses.replace(cell, variant=variant)
            options[option] = value
        steps = measure["steps"] if full_length else settings.probe_steps
        probe_measure = measure | {"cell": probe_cell.key(), "steps": steps, "options": options}
        probe_harness = dataclasses.replace(harness, results_root=str(paths.probes))
        repeat = 2 if full_length else 1  # r1: the short probe, r2: the confirmation
        manifest_path = paths.probe(probe_cell.id, repeat).manifest
        record = run_cell(probe_measure, repeat, probe_harness, manifest_path)
        return Probe(value, record.status, record.status_detail, str(manifest_path), full_length)

    return probe


def find_max_batch(search_params: dict[str, Any], harness: Any, result_path: Path) -> SearchResult:
    """Run the search of one `max` cell and write its result (the rule's output) last."""
    cell = Cell.from_key(search_params["cell"])
    option = search_params.get("option") or BATCH
    if option == BATCH and cell.batch_size != "max":
        raise ValueError(f"{cell.id} is not a batch_size max cell")
    if option != BATCH and sweep_slug(option, "max") not in cell.variant:
        raise ValueError(f"{cell.id} does not sweep {option} with the value max")
    settings = SearchSettings.from_config(search_params["search"])
    paths = MaxBatchPaths(cell.id, Path(harness.results_root))
    if paths.result.resolve() != result_path.resolve():
        raise ValueError(f"search result path {result_path} does not belong to {cell.id}")
    paths.probes.mkdir(parents=True, exist_ok=True)
    measure = {k: v for k, v in search_params.items() if k not in ("search", "option")}
    result = search(probe_run(measure, harness, paths, settings, option), settings, option)
    atomic_write_json(
        result_path,
        {"cell": cell.key(), "option": option, "settings": dataclasses.asdict(settings)}
        | result.to_dict(),
    )
    return result


def load_result(path: Path) -> SearchResult:
    """A search result written by find_max_batch; a missing or unreadable one is `failed`."""
    try:
        return SearchResult.from_dict(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError) as err:
        return SearchResult(
            Status.FAILED, None, f"no readable max batch search result {path}: {err}"
        )


def main(argv: list[str] | None = None) -> int:
    """`python -m dlperf.maxbatch --search JSON --result PATH`: the find_max_batch rule's job."""
    from dlperf.launch.submit import Harness

    parser = argparse.ArgumentParser(prog="python -m dlperf.maxbatch", description=__doc__)
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
