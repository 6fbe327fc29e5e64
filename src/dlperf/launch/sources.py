"""`dlperf sources SUITE --into DIR [--from URL]`: the upstream code a suite's cells run, checked
out at the adapters' commits, for a machine without network (option `sources_dir`).

For every upstream cell, the source (repository, folder, commit) of the release its options pick;
for each repository and commit one checkout at `ModelSource.checkout_in(DIR)`
(`DIR/<owner>+<name>@<commit>`), holding only the folders the suite needs (a cone-mode sparse
checkout of the models' folders, or of `ModelSource.folders` where a source names them; the whole
tree where a model's folder is the repository itself and names none). It is fetched with
`git init`, `git fetch --depth 1 --filter=blob:none origin <commit>` and a checkout, from
`URL/<owner>/<name>` (URL: https://github.com), or from URL with `{owner}` and `{name}` filled in
where it has them (`file:///mirrors/{owner}+{name}/repo`). A checkout already complete at that
commit with those folders is kept; an incomplete one is made again.

A file:// repository (a local mirror) is served by this machine's own `git upload-pack`, told to
filter and to serve any commit (as GitHub does) without a change to the mirror's config; a mirror
missing blobs the needed folders do not hold (a partial one) serves the checkout still.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from dlperf.adapters import get_adapter
from dlperf.adapters.base import ModelSource
from dlperf.adapters.upstream import UpstreamAdapter
from dlperf.config import Suite
from dlperf.errors import ConfigError
from dlperf.util import atomic_write_text

DEFAULT_URL = "https://github.com"
MARKER = "dlperf-sources.json"  # in the checkout's .git, written last: the checkout is complete
# the upload-pack a file:// remote is fetched with, for the fetch and the checkout's blobs alike
LOCAL_UPLOAD_PACK = (
    "git -c uploadpack.allowFilter=true -c uploadpack.allowAnySHA1InWant=true upload-pack"
)


class SourcesError(RuntimeError):
    """A checkout that could not be made (a bad URL, a commit the remote does not have)."""


@dataclass(frozen=True)
class Checkout:
    """One repository at one commit, and the folders of it the suite needs (() = all of it)."""

    repo: str  # owner/name
    commit: str
    paths: tuple[str, ...]

    def folder(self, into: Path) -> Path:
        return Path(ModelSource(self.repo, "", self.commit).checkout_in(str(into)))

    def url(self, source: str) -> str:
        """Where it is fetched from: `source` with {owner} and {name} filled in, or
        `source/owner/name`."""
        owner, name = self.repo.split("/", 1)
        if "{owner}" in source or "{name}" in source:
            return source.format(owner=owner, name=name)
        return f"{source.rstrip('/')}/{owner}/{name}"


@dataclass(frozen=True)
class Placed:
    checkout: Checkout
    folder: Path
    kept: bool  # it was there already, complete
    files: int
    size_bytes: int  # the checked-out files
    git_bytes: int  # its .git (commits, trees and the blobs of the checked-out files)

    def line(self) -> str:
        what = ", ".join(self.checkout.paths) or "the whole tree"
        return (
            f"{self.folder}: {'kept' if self.kept else 'placed'} {what}; {self.files} files, "
            f"{_mib(self.size_bytes)} (+ {_mib(self.git_bytes)} .git)"
        )


def needed(suite: Suite) -> list[Checkout]:
    """The checkouts the suite's upstream cells run from, in the order the suite names them."""
    paths: dict[tuple[str, str], set[str]] = {}
    for spec in suite.cell_specs():
        adapter = get_adapter(spec.cell.framework)
        if not isinstance(adapter, UpstreamAdapter):
            continue
        source = adapter.source_of(spec.cell.model, adapter.resolved_options(spec.options))
        if not source.tag:
            raise ConfigError(
                f"{spec.id}: {source.repo}/{source.path} has no commit pinned; "
                "`dlperf sources` checks out commits only"
            )
        folders = source.folders or (source.path.strip("/"),)
        paths.setdefault((source.repo, source.tag), set()).update(folders)
    return [
        Checkout(repo, commit, () if "" in folders else tuple(sorted(folders)))
        for (repo, commit), folders in paths.items()
    ]


def place(checkout: Checkout, into: Path, source: str = DEFAULT_URL) -> Placed:
    """The checkout under `into`: kept when complete with its folders, else made (again)."""
    folder = checkout.folder(into)
    had = _marker(folder)
    if had is not None and had["commit"] == checkout.commit and _covers(had["paths"], checkout):
        return _placed(checkout, folder, kept=True)
    if had is not None and had["commit"] == checkout.commit and had["paths"] and checkout.paths:
        # another suite's folders stay: the new checkout holds both
        checkout = Checkout(
            checkout.repo, checkout.commit, tuple(sorted({*had["paths"], *checkout.paths}))
        )
    if folder.exists() and had is None:
        raise SourcesError(
            f"{folder} exists and is no checkout `dlperf sources` made (no .git/{MARKER}): "
            "move it away, or remove it, to fetch the pinned commit there"
        )
    # fetched beside it, then put in its place: a failed fetch leaves the old checkout as it was
    fetching = folder.with_name(folder.name + ".fetching")
    shutil.rmtree(fetching, ignore_errors=True)
    fetching.parent.mkdir(parents=True, exist_ok=True)
    try:
        _fetch(checkout, fetching, checkout.url(source))
    except (SourcesError, OSError):
        shutil.rmtree(fetching, ignore_errors=True)  # nothing half-made is left to be kept
        raise
    marker = {"repo": checkout.repo, "commit": checkout.commit, "paths": list(checkout.paths)}
    atomic_write_text(fetching / ".git" / MARKER, json.dumps(marker, indent=1) + "\n")
    old = folder.with_name(folder.name + ".old")  # moved aside, so a failed swap loses nothing
    shutil.rmtree(old, ignore_errors=True)
    if folder.exists():
        folder.rename(old)
    fetching.rename(folder)
    shutil.rmtree(old, ignore_errors=True)
    return _placed(checkout, folder, kept=False)


def _fetch(checkout: Checkout, folder: Path, url: str) -> None:
    where = f"{checkout.repo}@{checkout.commit} from {url}"
    _git(where, "init", "-q", str(folder))
    _git(where, "-C", str(folder), "remote", "add", "origin", url)
    if url.startswith("file://"):
        _git(where, "-C", str(folder), "config", "remote.origin.uploadpack", LOCAL_UPLOAD_PACK)
    if checkout.paths:
        _git(where, "-C", str(folder), "sparse-checkout", "set", "--cone", "--", *checkout.paths)
    fetch = ["fetch", "-q", "--depth", "1", "--filter=blob:none", "origin", checkout.commit]
    _git(where, "-C", str(folder), *fetch)
    _git(where, "-C", str(folder), "checkout", "-q", "--detach", checkout.commit)
    head = _git(where, "-C", str(folder), "rev-parse", "HEAD").strip()
    if head != checkout.commit:
        raise SourcesError(f"{where}: checked out {head}, not the commit asked for")
    for path in checkout.paths:
        if not (folder / path).is_dir():
            raise SourcesError(f"{where}: the commit has no folder {path}")


def _git(where: str, *args: str) -> str:
    env = os.environ | {"GIT_TERMINAL_PROMPT": "0"}  # a bad https URL fails, never asks
    try:
        done = subprocess.run(["git", *args], capture_output=True, text=True, env=env, check=False)
    except OSError as err:  # no git on this machine
        raise SourcesError(f"{where}: cannot run git: {err}") from None
    if done.returncode != 0:
        said = " ".join(done.stderr.strip().splitlines()[-2:]) or f"exit {done.returncode}"
        command = " ".join(args[2:] if args[0] == "-C" else args)
        raise SourcesError(f"{where}: git {command} failed: {said}")
    return done.stdout


def _marker(folder: Path) -> dict | None:
    try:
        return dict(json.loads((folder / ".git" / MARKER).read_text()))
    except (OSError, ValueError):
        return None


def _covers(had: list[str], checkout: Checkout) -> bool:
    """A checkout of folders `had` ([]: the whole tree) holds everything `checkout` needs."""
    return not had or (bool(checkout.paths) and set(checkout.paths) <= set(had))


def _placed(checkout: Checkout, folder: Path, kept: bool) -> Placed:
    files, size = _size(p for p in folder.rglob("*") if ".git" not in p.relative_to(folder).parts)
    _, git = _size((folder / ".git").rglob("*"))
    return Placed(checkout, folder, kept, files, size, git)


def _size(paths: Iterable[Path]) -> tuple[int, int]:
    files = [p.lstat().st_size for p in paths if p.is_file() and not p.is_symlink()]
    return len(files), sum(files)


def _mib(size_bytes: int) -> str:
    return f"{size_bytes / 2**20:.1f} MiB"


def total_line(placed: list[Placed]) -> str:
    size = sum(p.size_bytes for p in placed)
    git = sum(p.git_bytes for p in placed)
    return (
        f"{len(placed)} checkouts: {_mib(size)} of files + {_mib(git)} of .git = {_mib(size + git)}"
    )
