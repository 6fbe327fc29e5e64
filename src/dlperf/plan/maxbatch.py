"""`batch_size: max`, found not typed: the largest batch per device a cell trains with; and the
same for any integer option a case sweeps with the value `max` (`sweep: {num_classes: [max]}`:
InsightFace's identities, W&D's vocabulary), with the case's `max_search` settings.

The search (one per `max` cell, cached as the find_max_batch rule's output):

- Probes are real runs of the cell at one value and a few steps, launched as any run is
  (dlperf.launch.probes, the find_max_batch rule's job), each with its own logs, manifest and
  status under results/maxbatch/<cell>/ (dlperf.paths.MaxBatchPaths).
- Double the value from ``start`` (never past ``ceiling``) while probes are ok; the first that
  runs out of memory (status oom) bounds it. Then bisect between the last that fit and the first
  that did not until they are at most ``granularity`` apart. The result is the last that fit.
- Only oom means "too big". Any other status of a probe (failed, timeout, skipped...) ends the
  search with that status and the probe's reason: the cell's runs are recorded with it, never
  run at a guessed size. A first probe that is already oom: the cell is oom, as DLPerf shows it.
- Every probe up to the ceiling fitting: the ceiling, confirmed as any value is, and the result
  says it is a lower bound (`at_ceiling`: the tables carry it, the report shows "≥").
- **Confirmation**: the size found is run once more for as many steps as the cell's runs. Memory
  can grow after the first steps (allocator fragmentation: on a CPU under a memory cap, glibc's
  heap), so a short probe may pass at a size a whole run cannot. A confirmation that runs out of
  memory makes that size too big; the largest smaller size whose probe fit is the new lower
  bound, and whole runs bisect between the two to the same granularity. The runs of the cell
  then train at a size that has run their whole length once.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlperf.defaults import suite_default
from dlperf.matrix import Cell, CellSpec, sweep_slug, with_slug_replaced
from dlperf.status import Status, timed_out_sooner

log = logging.getLogger(__name__)


BATCH = "batch_size"  # what a search finds unless an option is searched


def _schema_default(key: str) -> Any:
    return field(default_factory=lambda: suite_default("max_batch_search", key))


@dataclass(frozen=True)
class SearchSettings:
    """The suite's `max_batch_search` key, with a case's `max_search` over it for an option (a
    key left out: the schema's default)."""

    start: int = _schema_default("start")
    ceiling: int = _schema_default("ceiling")
    granularity: int = _schema_default("granularity")
    probe_steps: int = _schema_default("probe_steps")

    @classmethod
    def from_config(cls, settings: dict[str, Any]) -> SearchSettings:
        return cls(**settings)


def searched(spec: CellSpec) -> str | None:
    """What a cell's search finds: batch_size for a `max` batch, the option it sweeps with the
    value `max`, or None (no search; the config allows one per cell)."""
    return searched_in(spec.cell, spec.swept)


def searched_in(cell: Cell, options: Mapping[str, Any]) -> str | None:
    """`searched` of a cell whose swept values are among `options` (a run's resolved options)."""
    if cell.batch_size == "max":
        return BATCH
    return next((name for name, value in options.items() if value == "max"), None)


def search_settings(
    config: Mapping[str, Any], option: str | None, case_search: Mapping[str, Any]
) -> dict[str, Any]:
    """The settings a search of `option` runs with: the suite's `max_batch_search`, with the
    case's `max_search` over it for a swept option (what it leaves out is the batch's)."""
    settings = dict(config["max_batch_search"])
    if option != BATCH:
        settings |= case_search
    return settings


def probe_cell(cell: Cell, option: str, value: int) -> Cell:
    """The cell a probe of `cell`'s search of `option` runs at `value`: a cell of its own, the
    batch in its id, or the option's value in its variant (num_classes_max -> num_classes_2000)."""
    if option == BATCH:
        return dataclasses.replace(cell, batch_size=value)
    variant = with_slug_replaced(cell.variant, sweep_slug(option, "max"), sweep_slug(option, value))
    return dataclasses.replace(cell, variant=variant)


def search_params(
    spec: CellSpec, measure: dict[str, Any], config: dict[str, Any]
) -> dict[str, Any]:
    """What a cell's search depends on: what its runs measure (their steps: the confirmation
    runs as long), what it searches and its settings."""
    option = searched(spec)
    settings = search_settings(config, option, spec.search)
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
    at_ceiling: bool = False  # the value is the search's ceiling: a lower bound of the largest

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SearchResult:
        probes = [Probe(**_renamed(p)) for p in data.get("probes", [])]
        value = data.get("value", data.get(BATCH))  # results before option searches: batch_size
        at_ceiling = bool(data.get("at_ceiling", False))
        return cls(data["status"], value, data.get("detail", ""), probes, at_ceiling)


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
    step = settings.granularity
    while too_big is not None and too_big - fits > step:
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
    too_big: int | None,
    step: int,
    what: str,
    key: str,
) -> SearchResult:
    """Run `fits` for the whole run length; on oom, bisect again by whole runs between the
    largest smaller size whose probe fit and the size that ran out, to the same granularity (see
    the module's rules). `too_big` None: every probe fit, up to the ceiling."""
    confirmed = False
    while not confirmed:
        p = run(fits, True)
        if p.status == Status.OK:
            break
        if p.status != Status.OOM:
            detail = f"the confirmation at {what} {fits} ended {p.status}: {p.detail}"
            return SearchResult(p.status, None, detail, probes)
        too_big = fits
        smaller = [q.value for q in probes if q.status == Status.OK and q.value < fits]
        if not smaller:
            detail = f"no {what} from {key}.start runs a whole run ({fits} oom)"
            return SearchResult(Status.OOM, None, detail, probes)
        fits = max(smaller)
        while too_big - fits > step:  # a whole run ok is confirmed as it runs
            q = run(fits + step * max(1, (too_big - fits) // step // 2), True)
            if q.status == Status.OK:
                fits, confirmed = q.value, True
            elif q.status == Status.OOM:
                too_big = q.value
            else:
                detail = f"the confirmation at {what} {q.value} ended {q.status}: {q.detail}"
                return SearchResult(q.status, None, detail, probes)
    if too_big is None:
        detail = f"{fits}: every probe fit, up to the ceiling ({key}.ceiling): a lower bound"
        return SearchResult(Status.OK, fits, detail, probes, at_ceiling=True)
    detail = f"{fits} fits, {too_big} runs out of memory"
    if step > 1:
        detail += f" (granularity {step})"
    return SearchResult(Status.OK, fits, detail, probes)


def recorded_search_digest(path: Path) -> str | None:
    """The digest of the search params a result was searched with (None: unreadable, or a
    result from before digests were recorded)."""
    try:
        return json.loads(path.read_text()).get("search_digest")
    except (OSError, ValueError, AttributeError):
        return None


READ_ERRORS = (OSError, ValueError, KeyError, TypeError, AttributeError)


def read_result(path: Path, cell_id: str | None = None) -> SearchResult:
    """A search result written by find_max_batch, or one of READ_ERRORS saying why it cannot be
    used: unreadable, of another cell's search (with `cell_id`), or with a value its probes did
    not confirm (copied, or edited by hand). Where the search ran whole-run confirmations, only
    a value one of them ran ok, and none ran out of memory, is confirmed."""
    data = json.loads(path.read_text())
    found = SearchResult.from_dict(data)
    searched_cell = data.get("cell", {}).get("cell_id", cell_id)
    if cell_id is not None and searched_cell != cell_id:
        raise ValueError(f"it is the search of {searched_cell}")
    whole = [p for p in found.probes if p.full_length]
    confirmed = {p.value for p in whole or found.probes if p.status == Status.OK}
    confirmed -= {p.value for p in whole if p.status == Status.OOM}
    if found.value is not None and found.probes and found.value not in confirmed:
        raise ValueError(f"its value {found.value} is none of its ok probes' {sorted(confirmed)}")
    return found


def load_result(path: Path, cell_id: str | None = None) -> SearchResult:
    """read_result, or `failed` naming why the result cannot be used."""
    try:
        return read_result(path, cell_id)
    except READ_ERRORS as err:
        return SearchResult(
            Status.FAILED, None, f"no readable max batch search result {path}: {err}"
        )


def recorded_other_value(manifest: Path, option: str, value: int | None) -> bool:
    """Whether a `max` cell's run trained at another value of the searched option (batch_size,
    or a swept option) than its search's result holds now: a result changed with its mtime kept
    (`cp -p`, `touch -r`) would otherwise leave runs of two values in one cell."""
    try:
        data = json.loads(manifest.read_text())
    except (OSError, ValueError):
        return False  # no record (nothing to redo) or an unreadable one (the tables' parse_error)
    if not isinstance(data, dict):
        return False
    if option == BATCH:
        resolved = data.get("batch_size_resolved")
    else:
        resolved = (data.get("options_resolved") or {}).get(option)
    return value is not None and resolved != value


def search_timed_out_sooner(result: Path, time_limit_min: float) -> bool:
    """Whether a search ended on a probe's timeout under a shorter limit than `time_limit_min`
    (status.timed_out_sooner; its result records the limit): searched again, it may find a
    value."""
    try:
        data = json.loads(result.read_text())
        return timed_out_sooner(data["status"], data.get("time_limit_min"), time_limit_min)
    except READ_ERRORS:
        return False  # none, or unreadable: usable_result tells


def usable_result(result: Path, cell_id: str) -> bool:
    """Whether a cell's search result can be used (read_result): found a value, or found none."""
    try:
        read_result(result, cell_id)
    except READ_ERRORS:
        return False
    return True


def found_value(result: Path, cell_id: str) -> int | None:
    """The value a cell's search found, where its result can be used (None: not searched yet,
    found none, or a result that cannot be trusted: read_result)."""
    try:
        return read_result(result, cell_id).value
    except READ_ERRORS:
        return None
