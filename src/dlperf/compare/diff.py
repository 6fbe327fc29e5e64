"""A/B comparison, as the PyTorch DDP benchmark's diff does: two runs' JSON, two cells tables,
or two results folders (environment differences first, dlperf.compare.environment; then a
per-cell test on the runs). What a diff is given is read and checked by dlperf.compare.inputs."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from dlperf.compare.inputs import (
    CELLS_COLUMNS,
    PERCENTILES,
    DiffInputError,
    ResultsFolder,
    read_cells_table,
    read_run_json,
    read_runs_table,
    results_folder,
)
from dlperf.compare.significance import compare_samples
from dlperf.i18n import Phrase, Series, english
from dlperf.measure.runflags import run_flags
from dlperf.status import Status
from dlperf.util import is_number


def diff_runs(a: Path, b: Path) -> tuple[pd.DataFrame, list[str]]:
    """Per-run JSONs (results/json/<cell>/r<k>.json): throughput and latency percentiles, B vs A,
    and what makes them no like for like (run_json_notes)."""
    ja, jb = (read_run_json(Path(p)) for p in (a, b))
    rows = [
        (
            "throughput_samples_per_s",
            ja.get("throughput_samples_per_s"),
            jb.get("throughput_samples_per_s"),
        )
    ]
    rows += [(q, ja["percentiles_ms"].get(q), jb["percentiles_ms"].get(q)) for q in PERCENTILES]
    frame = pd.DataFrame(rows, columns=["metric", "a", "b"])
    frame["b_over_a"] = [_ratio(x, y) for x, y in zip(frame.a, frame.b, strict=True)]
    return frame, run_json_notes(ja, jb)


def run_json_notes(ja: dict[str, Any], jb: dict[str, Any]) -> list[str]:
    """Why two runs' figures do not measure the same thing (another cell, window or timing method,
    another batch size or value a `max` search found), a side that is no ok run (its figures are empty), and a
    side whose window steps logged a loss of nan or inf: one line each, none where they are
    alike."""
    notes = []
    differs = [
        f"{key} A {_json_text(ja.get(key))}, B {_json_text(jb.get(key))}"
        for key in ("cell", "batch_size_resolved", "options_resolved", "window", "method")
        if key in ja and key in jb and _json_text(ja[key]) != _json_text(jb[key])
    ]
    if differs:
        notes.append("not comparable: " + "; ".join(differs))
    for side, data in (("A", ja), ("B", jb)):
        status = data.get("status")
        if status is not None and status != Status.OK:
            detail = str(data.get("status_detail") or "")
            notes.append(f"{side} is a {status} run" + (f": {detail}" if detail else ""))
        steps = data.get("nonfinite_loss_steps")  # the cells table flags it (measure.runflags)
        if isinstance(steps, int | float) and steps > 0:  # a number or null (read_run_json)
            repeat = data.get("repeat")
            run = Series((f"r{repeat}" if isinstance(repeat, int) else "?",))
            flag = Phrase.of("flags.nonfinite_loss", steps=f"{int(steps)}", runs=run)
            notes.append(f"{side}: {english(flag)}")
    return notes


def _json_text(value: object) -> str:
    if isinstance(value, dict) and "cell_id" in value:
        return str(value["cell_id"])
    return json.dumps(value, sort_keys=True)


def diff_cells(a: Path, b: Path) -> pd.DataFrame:
    """Two cells tables (or results folders): median throughput per cell of either side, B vs A,
    and why a ratio is missing or no like for like (a cell only in A or B, other settings, B's
    median from a smaller share of its runs), and what either table flags the cell with."""
    ta, tb = (_cells(p) for p in (a, b))
    merged = ta.merge(tb, on="cell_id", how="outer", suffixes=("_a", "_b"), indicator=True)
    out = pd.DataFrame(
        {
            "cell_id": merged.cell_id,
            "throughput_a": merged.throughput_median_a,
            "throughput_b": merged.throughput_median_b,
            "status_a": merged.status_a,
            "status_b": merged.status_b,
        }
    )
    out["b_over_a"] = [
        _ratio(x, y) for x, y in zip(out.throughput_a, out.throughput_b, strict=True)
    ]
    reasons = []
    for row in merged.to_dict("records"):
        differs = [
            f"{column} A {_setting(row[f'{column}_a'])}, B {_setting(row[f'{column}_b'])}"
            for column in CELL_SETTING_COLUMNS
            if f"{column}_a" in row
            and _setting(row[f"{column}_a"])
            and _setting(row[f"{column}_b"])
            and _setting(row[f"{column}_a"]) != _setting(row[f"{column}_b"])
        ]
        if row["_merge"] != "both":
            reason = f"only in {'A' if row['_merge'] == 'left_only' else 'B'}"
        else:
            reason = "not comparable: " + "; ".join(differs) if differs else _fewer_ok(row)
        flagged = [f"{side.upper()}: {row[f'flags_{side}']}" for side in "ab" if _said(row, side)]
        reasons.append("; ".join(filter(None, [reason, *flagged])))
    out["reason"] = reasons
    return out.sort_values("cell_id").reset_index(drop=True)


# What a cells table states its cell measured with, beside its id: two tables that differ in
# one measured another thing.
CELL_SETTING_COLUMNS = ("window", "batch_size_resolved", "setting", "method")
# How many of a cell's runs gave its median, and what its runs are flagged with (stalls, nan or
# inf losses, instability, outliers), where a cells table states it
CELL_RUN_COLUMNS = ("runs_ok", "runs_done", "statuses", "flags")


def _cells(path: Path) -> pd.DataFrame:
    path = Path(path)
    if path.is_dir():
        path = results_folder(path).cells_table
    frame = read_cells_table(path)
    optional = (*CELL_SETTING_COLUMNS, *CELL_RUN_COLUMNS)
    keep = [*CELLS_COLUMNS, *(c for c in optional if c in frame.columns)]
    return frame[keep].reindex(columns=[*CELLS_COLUMNS, *optional])


def _said(row: dict[str, Any], side: str) -> bool:
    """Whether a side's cells table flags the cell."""
    flags = row[f"flags_{side}"]
    return isinstance(flags, str) and bool(flags.strip())


def _fewer_ok(row: dict[str, Any]) -> str:
    """Where B's median came from a smaller share of its runs than A's (the others ran out of
    memory, failed, timed out), that share: B's ratio is of a cell that trains less often."""
    counts = [row[f"{c}_{side}"] for side in "ab" for c in ("runs_ok", "runs_done")]
    if not all(is_number(c) for c in counts):
        return ""
    ok_a, done_a, ok_b, done_b = (int(c) for c in counts)
    if not done_a or not done_b or ok_b * done_a >= ok_a * done_b:
        return ""
    said = f" ({row['statuses_b']})" if isinstance(row["statuses_b"], str) else ""
    return f"B ok in {ok_b} of {done_b} runs{said}; A in {ok_a} of {done_a}"


def _ratio(a: object, b: object) -> float:
    try:
        fa, fb = float(a), float(b)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan
    return fb / fa if math.isfinite(fa) and fa > 0 and math.isfinite(fb) else math.nan


# --- results folders: a per-cell test on the runs ---------------------------------------------


DIFF_COLUMNS = [
    "cell_id",
    "runs_ok_a",
    "runs_ok_b",
    "median_a",
    "median_b",
    "b_over_a",
    "ci_low",
    "ci_high",
    "p_value",
    "verdict",
    "regression",
    "reason",
]


# What a cell's ok runs trained or measured with, from the runs table: two sides that differ in
# one measured another thing, so their throughputs are not compared.
SETTING_COLUMNS = {
    "batch_size_resolved": "batch_size_resolved",
    "options_resolved": "options_resolved",
    "window": "window_first_step",  # with window_last_step: the measured iterations
    # how the logs gave time (dlperf.parse.records.Method): a sum of printed step times leaves
    # out what a wall clock between steps counts (PaddleNLP's, where no timestamp prefix is on)
    "method": "method",
}
Settings = dict[str, dict[str, set[str]]]  # cell id -> setting -> the values its ok runs had


def diff_results(
    a: ResultsFolder, b: ResultsFolder, alpha: float = 0.05, threshold: float = 0.05
) -> pd.DataFrame:
    """Per cell of either side: B's ok-run throughputs against A's (dlperf.compare.significance);
    a cell whose sides trained or measured with other settings (the runs tables' resolved batch
    size, options, window and timing method; the manifests' steps and device) gets no verdict."""
    ra, rb = read_runs_table(a.runs_table), read_runs_table(b.runs_table)
    return diff_runs_tables(ra, rb, alpha, threshold, manifest_settings(a), manifest_settings(b))


def manifest_settings(folder: ResultsFolder) -> Settings:
    """The steps and device each cell's ok runs measured with, as their manifests record them."""
    from dlperf.launch.record import RunRecord  # the environment half reads them too
    from dlperf.parse.records import ParseError

    found: Settings = {}
    for path in folder.manifests():
        try:
            record = RunRecord.read(path)
        except ParseError as err:
            raise DiffInputError(f"unreadable run manifest: {err}") from err
        cell = found.setdefault(str(record.cell_id), {})
        for key, value in (
            ("steps", record.measured_steps),
            ("device", record.trained_device or record.measured_device),
        ):
            if value is not None:
                cell.setdefault(key, set()).add(str(value))
    return found


def diff_runs_tables(
    ra: pd.DataFrame,
    rb: pd.DataFrame,
    alpha: float = 0.05,
    threshold: float = 0.05,
    settings_a: Settings | None = None,
    settings_b: Settings | None = None,
) -> pd.DataFrame:
    """The per-cell comparison of two runs tables (columns cell_id, status, throughput). A cell
    whose two sides' ok runs trained at another resolved batch size or options, or measured
    another window or by another timing method (or, given `settings_*`, other steps or device),
    has verdict n/a, the reason
    naming what differs, and is no regression."""
    oka, okb = _ok_throughputs(ra), _ok_throughputs(rb)
    sa = _merge(_table_settings(ra), settings_a or {})
    sb = _merge(_table_settings(rb), settings_b or {})
    ids_a, ids_b = set(ra["cell_id"].astype(str)), set(rb["cell_id"].astype(str))
    rows = []
    for cell_id in sorted(ids_a | ids_b):
        c = compare_samples(oka.get(cell_id, []), okb.get(cell_id, []), alpha, threshold)
        verdict, regression, reason = c.verdict, c.regression, c.reason
        if cell_id not in ids_a or cell_id not in ids_b:
            reason = f"only in {'A' if cell_id in ids_a else 'B'}"
            if not ids_b and c.n_a:  # B measured nothing at all: a gate must not pass it
                regression, reason = True, "only in A: B's runs table has no runs"
        elif c.n_b == 0 and c.n_a > 0:
            counts = _status_counts(rb, cell_id)
            said = ", ".join(f"{status}: {n}" for status, n in sorted(counts.items()))
            reason = f"B has no ok run ({said}); A has {c.n_a}"
            regression = bool(BROKEN & set(counts))  # no longer trains: worse than slower
        else:
            differs = _differences(sa.get(cell_id, {}), sb.get(cell_id, {}))
            broke = c.n_a and _broke_more(_status_counts(ra, cell_id), _status_counts(rb, cell_id))
            if differs:
                verdict, regression = "n/a", False
                reason = "not comparable: " + "; ".join(differs)
            elif broke:  # trains less often: worse than slower, whatever its ok runs say
                regression, reason = True, f"{broke}; ok runs: {reason}"
        flagged = [
            f"{side}: {said}"
            for side, said in (("A", _flags(ra, cell_id)), ("B", _flags(rb, cell_id)))
            if said
        ]
        reason = "; ".join([reason, *flagged])
        rows.append(
            [cell_id, c.n_a, c.n_b, c.median_a, c.median_b, c.ratio, c.ci_low, c.ci_high]
            + [c.p_value, verdict, regression, reason]
        )
    return pd.DataFrame(rows, columns=DIFF_COLUMNS)


# What became of a run that is a regression in itself, where the same cell trained in A.
BROKEN = frozenset({Status.OOM, Status.TIMEOUT, Status.FAILED})


def _broke_more(a: dict[str, int], b: dict[str, int]) -> str:
    """B's broken runs, where a larger share of B's runs broke than of A's ('' where not)."""
    broken_a, broken_b = (sum(n for s, n in c.items() if s in BROKEN) for c in (a, b))
    if broken_b * sum(a.values()) <= broken_a * sum(b.values()):
        return ""
    said = ", ".join(f"{status}: {n}" for status, n in sorted(b.items()) if status in BROKEN)
    return (
        f"B broke in {broken_b} of {sum(b.values())} runs ({said}); "
        f"A in {broken_a} of {sum(a.values())}"
    )


def _flags(runs: pd.DataFrame, cell_id: str) -> str:
    """What the cells table flags about a cell's ok runs (dlperf.measure.runflags: a stalled run,
    a loss of nan or inf in the window, other hardware), so a verdict on them is not read bare."""
    ok = runs[(runs["cell_id"].astype(str) == cell_id) & (runs["status"] == Status.OK)]
    return "; ".join(english(phrase) for phrase in run_flags(ok))


def _status_counts(runs: pd.DataFrame, cell_id: str) -> dict[str, int]:
    counts = runs[runs["cell_id"].astype(str) == cell_id]["status"].astype(str).value_counts()
    return {str(status): int(n) for status, n in counts.items()}


def _table_settings(runs: pd.DataFrame) -> Settings:
    """The settings of each cell's ok runs a runs table states (its columns that it has)."""
    ok = runs[runs["status"] == Status.OK]
    found: Settings = {}
    for name, column in SETTING_COLUMNS.items():
        if column not in ok.columns:
            continue
        if name == "window":
            if "window_last_step" not in ok.columns:
                continue
            values = [
                f"{_setting(first)}-{_setting(last)}"
                for first, last in zip(ok["window_first_step"], ok["window_last_step"], strict=True)
            ]
        else:
            values = [_setting(v, json_object=name == "options_resolved") for v in ok[column]]
        for cell_id, value in zip(ok["cell_id"].astype(str), values, strict=True):
            if value.strip("-") or name == "options_resolved":  # else not stated: unknown
                found.setdefault(cell_id, {}).setdefault(name, set()).add(value)
    return found


def _setting(value: object, json_object: bool = False) -> str:
    """One setting's value, written the same on both sides ('' for none: for options_resolved,
    no option resolved; for the others, not stated)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(int(value)) if float(value).is_integer() else str(value)
    text = str(value).strip()
    if json_object:
        try:
            parsed = json.loads(text) if text else {}
        except json.JSONDecodeError:
            return text
        return json.dumps(parsed, sort_keys=True) if parsed else ""
    return text


def _merge(first: Settings, second: Settings) -> Settings:
    return {c: first.get(c, {}) | second.get(c, {}) for c in first.keys() | second.keys()}


def _differences(a: dict[str, set[str]], b: dict[str, set[str]]) -> list[str]:
    """'batch_size_resolved A 4, B 2' for each setting both sides state and differ in."""
    return [
        f"{name} A {_values(a[name])}, B {_values(b[name])}"
        for name in (*SETTING_COLUMNS, "steps", "device")
        if name in a and name in b and a[name] != b[name]
    ]


def _values(values: set[str]) -> str:
    return ", ".join(v or "{}" for v in sorted(values))


def _ok_throughputs(runs: pd.DataFrame) -> dict[str, list[float]]:
    ok = runs[runs["status"] == Status.OK]
    values = pd.to_numeric(ok["throughput_samples_per_s"], errors="coerce")
    return {
        str(cid): group.dropna().tolist()
        for cid, group in values.groupby(ok["cell_id"], sort=False)
    }
