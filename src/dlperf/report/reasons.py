"""Why a figure is missing or doubtful, as phrases (dlperf.i18n): a run's reason, an
outlier's distance from its cell's median, a cell's flags.

Each is composed from the tables' structured values (status, workload_wall_s, outlier, outlier_z,
unstable, throughput_cv, batch_size_resolved) and the suite's limits, never by reading the tables'
English text columns (flags, outlier_detail), which are shown, marked as recorded text, only where
a table lacks the values (a results folder older than them). A run's status_detail in dlperf's own
words (a detail.* phrase of the catalog: the harness's verdicts, a built-in workload's skip reason)
is said in the report's language; other evidence stays verbatim (a framework's error, an upstream
log line, older wording), marked as such in every language.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dlperf.i18n import Phrase, Series, Text, recognise
from dlperf.i18n import recorded as as_recorded
from dlperf.measure.runflags import cell_flags as runs_cell_flags
from dlperf.measure.variance import VarianceSettings, outlier_scores
from dlperf.report import fmt
from dlperf.report.load import MEASURED
from dlperf.status import Status

_STATUSES = {str(s) for s in Status}


@dataclass(frozen=True)
class Limits:
    """The suite's limits the tables were made with (None: not known, as for `dlperf report` of
    tables alone)."""

    max_cv: float | None = None  # a cell above this CV is unstable (a fraction)
    time_limit_s: float | None = None  # a run's wall-clock limit

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Limits:
        variance, minutes = config.get("variance"), config.get("time_limit_min")
        return cls(
            VarianceSettings.from_config(variance).max_cv if variance is not None else None,
            _number(minutes) * 60 if fmt.is_number(minutes) else None,
        )


def _number(value: Any) -> float:
    return float(value) if fmt.is_number(value) else math.nan


def recorded(text: Any) -> Text:
    """Text a record holds as evidence (an error, a skip reason, a published remark), verbatim
    and marked as such; '' for none."""
    return as_recorded(fmt.shorten(fmt.text(text)))


def run_said(text: Any) -> Text:
    """A run's recorded status_detail: the phrase it says where it is in dlperf's own words
    (i18n.recognise), its verbatim values shortened; else the text, recorded (verbatim)."""
    line = fmt.text(text)
    phrase = recognise(line)
    return _shortened(phrase) if phrase else recorded(line)


def _shortened(phrase: Phrase) -> Phrase:
    values = tuple(
        (name, _shortened(v) if isinstance(v, Phrase) else fmt.shorten(str(v)))
        for name, v in phrase.values
    )
    return Phrase(phrase.key, values)


def repeat_name(repeat: Any) -> str:
    return f"r{fmt.integer(repeat)}"


def by_repeat(runs: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows in the order of their repeat number."""
    ordered = runs.assign(_repeat=pd.to_numeric(runs["repeat"], errors="coerce"))
    return ordered.sort_values("_repeat", kind="stable").drop(columns="_repeat").to_dict("records")


def run_reason(run: Mapping[str, Any], limits: Limits) -> Text:
    """Why a run gave no figure. The harness's own verdicts are told from the run's numbers: a
    timeout whose workload ran the whole time limit, an OOM its task saw in the log (a workload
    that ran); anything else is the detail the run's record holds."""
    status, wall_s = run.get("status"), _number(run.get("workload_wall_s"))  # nan: not timed
    if status == Status.TIMEOUT and limits.time_limit_s and wall_s >= limits.time_limit_s:
        return Phrase.of("reason.timeout")
    if status == Status.OOM and wall_s > 0:
        return Phrase.of("detail.oom")
    return run_said(run.get("status_detail"))


def runs_reasons(runs: pd.DataFrame, limits: Limits) -> Text:
    """Each distinct reason of these runs with the repeats it applies to: "r1, r2: ...; r3: ..."
    (a run without one: its status)."""
    if not len(runs):
        return ""
    repeats: dict[Text, list[str]] = {}
    for run in by_repeat(runs):
        status = str(run["status"])
        reason = run_reason(run, limits) or (
            Phrase.of(f"status.{status}") if status in _STATUSES else status
        )
        repeats.setdefault(reason, []).append(repeat_name(run["repeat"]))
    return Series(
        tuple(
            Phrase.of("reason.runs", repeats=Series(tuple(names)), reason=reason)
            for reason, names in repeats.items()
        ),
        "clause_sep",
    )


def with_outlier_z(runs: pd.DataFrame) -> pd.DataFrame:
    """`runs` with column outlier_z, each run's robust z among its cell's ok runs: as the table
    states it, else computed by dlperf.measure.variance from the throughputs (tables older than the
    column)."""
    stated = pd.to_numeric(
        runs["outlier_z"] if "outlier_z" in runs else pd.Series(math.nan, index=runs.index),
        errors="coerce",
    )
    needed = {"cell_id", "status", "throughput_samples_per_s"}
    if len(runs) and needed <= set(runs.columns) and stated.isna().any():
        stated = stated.where(stated.notna(), outlier_scores(runs))
    return runs.assign(outlier_z=stated)


def outlier_reason(run: Mapping[str, Any]) -> Text:
    """How far an outlier run lies from its cell's median, in robust scales (with_outlier_z)."""
    z = run.get("outlier_z")
    if not fmt.is_number(z):
        return recorded(run.get("outlier_detail"))
    side = "below" if _number(z) < 0 else "above"
    return Phrase.of(f"reason.outlier_{side}", z=f"{abs(_number(z)):.1f}")


def run_detail(run: Mapping[str, Any], limits: Limits) -> Text:
    """The appendix's detail of a run: why it gave no figure, or why it is an outlier."""
    if run.get("status") != Status.OK:
        return run_reason(run, limits)
    if run.get("outlier") is True:
        return outlier_reason(run)
    return run_said(run.get("status_detail"))


def cell_flags(record: Mapping[str, Any], runs: pd.DataFrame, limits: Limits) -> Text:
    """Why a cell is flagged: its CV above the limit, its outlier runs, a searched value that is
    its search's ceiling (a lower bound), ok runs that trained with different batch sizes, ok runs
    that logged a nan or inf loss in their window. `runs`: the cell's runs (none for a baseline's
    cell or a table given alone); the limit is the suite's, so it is stated for measured cells
    only."""
    parts: list[Text] = []
    if record.get("unstable") is True:
        cv = fmt.percent(record.get("throughput_cv"))
        limit = limits.max_cv if record.get("source", MEASURED) == MEASURED else None
        parts.append(
            Phrase.of("flags.unstable", cv=cv, limit=fmt.percent(limit))
            if limit is not None
            else Phrase.of("flags.unstable_cv", cv=cv)
        )
    if len(runs) and "outlier" in runs.columns:
        flagged = runs.loc[runs["outlier"].map(lambda v: v is True or v is np.True_), "repeat"]
        parts += [
            Phrase.of("flags.outlier", repeat=repeat_name(repeat))
            for repeat in sorted(pd.to_numeric(flagged, errors="coerce"))
        ]
    elif _number(record.get("outlier_runs")) > 0:
        parts.append(Phrase.of("flags.outlier_runs", count=fmt.integer(record["outlier_runs"])))
    if fmt.is_number(record.get("search_ceiling")):
        parts.append(Phrase.of("flags.at_ceiling", value=fmt.integer(record["search_ceiling"])))
    if "batch_size_resolved" in runs.columns:  # of the runs its median is of
        ok = runs[runs["status"] == Status.OK]
        sizes = pd.to_numeric(ok["batch_size_resolved"], errors="coerce").dropna()
        if sizes.nunique() > 1:
            names = tuple(fmt.integer(s) for s in sorted(sizes.unique()))
            parts.append(Phrase.of("flags.batch_sizes", sizes=Series(names)))
    parts += runs_cell_flags(record, runs)
    return Series(tuple(parts), "clause_sep") if parts else recorded(record.get("flags"))


class CellRuns:
    """The runs table by cell. A baseline's cell has none here: the runs are the measured cells'
    (a baseline may hold a cell of the same id)."""

    def __init__(self, runs: pd.DataFrame) -> None:
        self.none = runs.iloc[0:0]
        self.by_id: dict[str, pd.DataFrame] = {}
        if len(runs) and "cell_id" in runs.columns:
            self.by_id = {str(c): group for c, group in runs.groupby("cell_id", sort=False)}

    def __call__(self, record: Mapping[str, Any]) -> pd.DataFrame:
        if record.get("source", MEASURED) != MEASURED:
            return self.none
        return self.by_id.get(str(record["cell_id"]), self.none)
