"""A/B comparison, as the PyTorch DDP benchmark's diff does: two runs' JSON, or two cells tables."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

PERCENTILES = ("p50_ms", "p75_ms", "p90_ms", "p95_ms")


def diff_runs(a: Path, b: Path) -> pd.DataFrame:
    """Per-run JSONs (results/json/<cell>/r<k>.json): throughput and latency percentiles, B vs A."""
    ja, jb = (json.loads(Path(p).read_text()) for p in (a, b))
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
    return frame


def diff_cells(a: Path, b: Path) -> pd.DataFrame:
    """Two cells tables (or results folders): median throughput per common cell, B vs A."""
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
    return out.sort_values("cell_id").reset_index(drop=True)


def _cells(path: Path) -> pd.DataFrame:
    path = Path(path)
    if path.is_dir():
        path = (
            path / "tables" / "cells.tsv"
            if (path / "tables").is_dir()
            else path / "results/tables/cells.tsv"
        )
    return pd.read_csv(path, sep="\t")[["cell_id", "throughput_median", "status"]]


def _ratio(a: object, b: object) -> float:
    try:
        fa, fb = float(a), float(b)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan
    return fb / fa if math.isfinite(fa) and fa > 0 and math.isfinite(fb) else math.nan
