"""The GPU proof's output: at most eight files (the GPU machine returns few, each under 16 MiB)."""

from __future__ import annotations

import tarfile
from pathlib import Path

from dlperf.errors import ConfigError
from dlperf.paths import RESULTS, RUNS, ResultPaths
from dlperf.util import folder_problem

PACKED_REPORTS = (("en", "html"), ("zh", "html"), ("en", "md"))  # (language, format)


def prepare(out: Path) -> None:
    """--out made before any case runs, or a ConfigError naming it: found at the first packing,
    after a case's minutes of runs, it ended the command in a traceback."""
    problem = folder_problem(out)
    if problem:
        raise ConfigError(f"--out {out}: {problem}; give a folder this user can write")
    out.mkdir(parents=True, exist_ok=True)


def pack(work: Path, out: Path) -> list[Path]:
    """proof.md, proof.json, the reports, and two archives: tables (with the suite that ran) and
    logs (every run's logs and manifests, the searches, the references, Snakemake's log)."""
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for name in ("proof.md", "proof.json"):
        files.append(_copy(work / name, out / name))
    results = ResultPaths(work / RESULTS)
    for lang, fmt in PACKED_REPORTS:
        path = results.report(lang, fmt)
        if path.exists():
            files.append(_copy(path, out / path.name))
    files.append(
        _tar(
            out / "tables.tar.gz",
            work,
            [results.tables, results.json, work / "suite.yaml"],
        )
    )
    files.append(
        _tar(
            out / "logs.tar.gz",
            work,
            [
                results.root / RUNS,
                results.root / "maxbatch",
                results.root / "logs",
                work / "logs",
                work / "snakemake.log",
            ],
        )
    )
    return files


def _copy(source: Path, target: Path) -> Path:
    target.write_bytes(source.read_bytes())
    return target


def _tar(target: Path, root: Path, paths: list[Path]) -> Path:
    with tarfile.open(target, "w:gz") as tar:
        for path in paths:
            if path.exists():
                tar.add(path, arcname=str(path.relative_to(root)))
    return target
