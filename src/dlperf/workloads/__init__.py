"""Built-in workloads: training loops written against each framework's own library models."""

from __future__ import annotations

import ast
import functools
import hashlib
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # src/dlperf


@functools.cache
def code_digest(module: str) -> str:
    """A digest of what a run executes of dlperf: the workload module's source and that of every
    dlperf module it imports, however deeply (`code_files`). A run's params carry it, so its cell
    reruns when any of that code changes, and only then."""
    digest = hashlib.sha256()
    for name, path in sorted(code_files(module).items()):
        digest.update(f"{name}\0".encode() + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def code_files(module: str) -> dict[str, Path]:
    """The module's file and those of the dlperf modules it imports, by module name: read, never
    imported (the harness has no framework installed)."""
    files: dict[str, Path] = {}
    pending = [module]
    while pending:
        name = pending.pop()
        path = _source_file(name)
        if path is not None and name not in files:
            files[name] = path
            pending.extend(_dlperf_imports(name, path))
    return files


def _source_file(name: str) -> Path | None:
    """dlperf.a.b's file: dlperf/a/b.py or dlperf/a/b/__init__.py; None for a name that is not
    a dlperf module (a class or function imported from one)."""
    parts = name.split(".")
    if parts[0] != "dlperf":
        return None
    base = PACKAGE_ROOT.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _dlperf_imports(name: str, path: Path) -> list[str]:
    """Every dlperf module (and package) the source imports, at any level of its code."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_bytes(), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package, up level - 1 packages
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for dotted in names:  # a package's __init__ runs too when a submodule is imported
            parts = dotted.split(".")
            found.extend(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return [n for n in found if n.startswith("dlperf")]
