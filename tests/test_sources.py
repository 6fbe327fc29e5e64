"""`dlperf sources`: the suite's upstream checkouts, from a local bare repository the test makes."""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from dlperf import cli
from dlperf.adapters import get_adapter
from dlperf.adapters.base import ModelSource
from dlperf.launch import sources
from dlperf.launch.sources import Checkout

REPO = "pytorch/examples"  # the test's bare repository stands in for it (file:// URL template)


def git(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def remote(tmp_path: Path) -> tuple[Path, str]:
    """A bare repository at <tmp>/remotes/pytorch+examples.git with imagenet/, mnist/ and a root
    file; (its folder, the commit)."""
    work = tmp_path / "work"
    for name, text in {
        "README.md": "examples\n",
        "imagenet/main.py": "print('imagenet')\n",
        "mnist/main.py": "print('mnist')\n",
    }.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    git("init", "-q", str(work))
    git("add", ".", cwd=work)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "c", cwd=work)
    commit = git("rev-parse", "HEAD", cwd=work)
    bare = tmp_path / "remotes" / "pytorch+examples.git"
    git("clone", "-q", "--bare", str(work), str(bare))
    git("config", "uploadpack.allowAnySHA1InWant", "true", cwd=bare)
    git("config", "uploadpack.allowFilter", "true", cwd=bare)
    return bare, commit


def url(tmp_path: Path) -> str:
    return f"file://{tmp_path}/remotes/{{owner}}+{{name}}.git"


def test_a_sparse_checkout_holds_the_folders_asked_and_is_kept(remote, tmp_path: Path) -> None:
    _, commit = remote
    into = tmp_path / "sources"
    placed = sources.place(Checkout(REPO, commit, ("imagenet",)), into, url(tmp_path))
    folder = into / f"pytorch+examples@{commit}"
    assert placed.folder == folder and not placed.kept
    assert (folder / "imagenet" / "main.py").read_text() == "print('imagenet')\n"
    assert (folder / "README.md").is_file() and not (folder / "mnist").exists()  # cone: root files
    assert git("rev-parse", "HEAD", cwd=folder) == commit
    assert placed.files == 2 and placed.size_bytes == len("examples\n") + len("print('imagenet')\n")
    again = sources.place(Checkout(REPO, commit, ("imagenet",)), into, url(tmp_path))
    assert again.kept and "kept imagenet; 2 files" in again.line()
    # a suite needing another folder: both are there afterwards
    more = sources.place(Checkout(REPO, commit, ("mnist",)), into, url(tmp_path))
    assert not more.kept and more.checkout.paths == ("imagenet", "mnist")
    assert (folder / "mnist" / "main.py").is_file() and (folder / "imagenet" / "main.py").is_file()
    whole = sources.place(Checkout(REPO, commit, ()), into, url(tmp_path))
    assert not whole.kept and "the whole tree" in whole.line()
    assert sources.place(Checkout(REPO, commit, ("imagenet",)), into, url(tmp_path)).kept


def test_a_folder_dlperf_did_not_make_is_never_removed(remote, tmp_path: Path) -> None:
    """Review: a checkout copied in without .git (a patched main.py) was removed before the fetch,
    and lost for good when the fetch failed. A fetch goes beside it and takes its place only
    once complete; a folder without dlperf's marker is an error naming it."""
    _, commit = remote
    into = tmp_path / "sources"
    folder = into / f"pytorch+examples@{commit}"
    (folder / "imagenet").mkdir(parents=True)
    (folder / "imagenet" / "main.py").write_text("patched\n")
    with pytest.raises(
        sources.SourcesError, match=f"{re.escape(str(folder))} exists and is no checkout"
    ):
        sources.place(Checkout(REPO, commit, ("imagenet",)), into, url(tmp_path))
    assert (folder / "imagenet" / "main.py").read_text() == "patched\n"
    placed = sources.place(Checkout(REPO, commit, ("imagenet",)), into / "ok", url(tmp_path))
    with pytest.raises(sources.SourcesError, match="has no folder vision"):  # a failed refetch
        sources.place(Checkout(REPO, commit, ("vision",)), into / "ok", url(tmp_path))
    assert (placed.folder / "imagenet" / "main.py").is_file()  # the old checkout stands
    assert sources.place(Checkout(REPO, commit, ("imagenet",)), into / "ok", url(tmp_path)).kept


def test_no_git_is_an_error_naming_the_checkout(remote, tmp_path, monkeypatch) -> None:
    _, commit = remote
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    with pytest.raises(sources.SourcesError, match=f"pytorch/examples@{commit} .*cannot run git"):
        sources.place(Checkout(REPO, commit, ("imagenet",)), tmp_path / "s", url(tmp_path))
    assert not list((tmp_path / "s").iterdir())  # nothing half-made


def test_a_plain_url_prefix_is_owner_slash_name(tmp_path: Path) -> None:
    checkout = Checkout("NVIDIA/Megatron-LM", "abc", ())
    assert checkout.url("https://github.com/") == "https://github.com/NVIDIA/Megatron-LM"
    assert checkout.url("file:///m/{owner}+{name}/repo") == "file:///m/NVIDIA+Megatron-LM/repo"
    assert checkout.folder(tmp_path) == tmp_path / "NVIDIA+Megatron-LM@abc"


def test_a_bad_commit_or_url_is_an_error_naming_repo_and_commit(remote, tmp_path: Path) -> None:
    into = tmp_path / "sources"
    bad = "0" * 40
    with pytest.raises(sources.SourcesError, match=f"pytorch/examples@{bad} from file://.*fetch"):
        sources.place(Checkout(REPO, bad, ("imagenet",)), into, url(tmp_path))
    assert not (into / f"pytorch+examples@{bad}").exists()  # nothing half-made is left
    _, commit = remote
    with pytest.raises(sources.SourcesError, match=f"pytorch/examples@{commit} .*nowhere"):
        sources.place(Checkout(REPO, commit, ()), into, f"file://{tmp_path}/nowhere")
    with pytest.raises(sources.SourcesError, match="has no folder vision"):
        sources.place(Checkout(REPO, commit, ("vision",)), into, url(tmp_path))


def test_the_command_places_what_the_suites_upstream_cells_need(
    remote, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A suite of one built-in and one upstream case at the commit of the test's repository:
    one checkout, the model's folder only; the adapter's root is that checkout."""
    _, commit = remote
    adapter = get_adapter("pytorch_examples")
    release = adapter.releases["current"]
    models = {"resnet50": ModelSource(REPO, "imagenet", commit)}
    monkeypatch.setitem(adapter.releases, "current", dataclasses.replace(release, models=models))
    options = {"release": "current", "sources_dir": str(tmp_path / "sources")}
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        yaml.safe_dump(
            {
                "name": "s",
                "cases": [
                    {"framework": "pytorch", "model": "resnet50", "precision": ["fp32"],
                     "batch_size": [2], "layouts": ["1n1g"]},
                    {"framework": "pytorch_examples", "model": "resnet50", "precision": ["fp32"],
                     "batch_size": [2], "layouts": ["1n1g"], "options": options},
                ],
            }
        )
    )  # fmt: skip
    argv = ["sources", str(suite), "--into", str(tmp_path / "sources"), "--from", url(tmp_path)]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert f"pytorch+examples@{commit}: placed imagenet; 2 files" in out
    assert "1 checkouts:" in out
    script = adapter.script("resnet50", adapter.resolved_options(options))
    assert Path(script).read_text() == "print('imagenet')\n"
    assert cli.main(argv) == 0 and "kept imagenet" in capsys.readouterr().out
    assert cli.main([*argv[:-1], f"file://{tmp_path}/nowhere/{{name}}"]) == 0  # kept: no fetch
    shutil.rmtree(tmp_path / "sources" / f"pytorch+examples@{commit}")
    assert cli.main([*argv[:-1], f"file://{tmp_path}/nowhere/{{name}}"]) == 1
    assert f"dlperf sources: pytorch/examples@{commit} from" in capsys.readouterr().err
