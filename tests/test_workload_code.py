"""The digest of a built-in workload's code: its module and every dlperf module it imports, read
from the files. A run's params carry it, so editing the workload reruns its cells."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlperf import workloads
from dlperf.adapters import get_adapter

TREE = {
    "__init__.py": "",
    "flops.py": "PEAK = 1\n",
    "logline.py": "",
    "launch/__init__.py": "",
    "launch/task.py": "from dlperf.workloads import x_train\n",  # the harness: not imported back
    "workloads/__init__.py": "",
    "workloads/common.py": "from dlperf import logline\n",
    "workloads/helper.py": "",
    "workloads/x_train.py": (
        "import os\n"
        "from dlperf.workloads.common import log\n"
        "from . import helper\n"
        "def main():\n"
        "    from dlperf.flops import PEAK  # imported inside a function: still executed\n"
    ),
}


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "dlperf"
    for name, text in TREE.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    monkeypatch.setattr(workloads, "PACKAGE_ROOT", root)
    workloads.code_digest.cache_clear()
    yield root
    workloads.code_digest.cache_clear()


def digest() -> str:
    workloads.code_digest.cache_clear()
    return workloads.code_digest("dlperf.workloads.x_train")


def test_the_files_are_the_module_and_what_it_imports(package: Path) -> None:
    files = workloads.code_files("dlperf.workloads.x_train")
    assert sorted(files) == [
        "dlperf", "dlperf.flops", "dlperf.logline", "dlperf.workloads",
        "dlperf.workloads.common", "dlperf.workloads.helper", "dlperf.workloads.x_train",
    ]  # fmt: skip
    assert files["dlperf.workloads.common"] == package / "workloads" / "common.py"


@pytest.mark.parametrize("edited", ["workloads/x_train.py", "flops.py", "logline.py"])
def test_editing_the_workload_or_what_it_imports_changes_the_digest(
    package: Path, edited: str
) -> None:
    before = digest()
    (package / edited).write_text((package / edited).read_text() + "# edited\n")
    assert digest() != before


def test_editing_the_harness_leaves_the_digest(package: Path) -> None:
    before = digest()
    (package / "launch" / "task.py").write_text("# edited\n")
    assert digest() == before


def test_built_in_adapters_have_a_digest_and_upstream_ones_none() -> None:
    torch_files = workloads.code_files("dlperf.workloads.torch_train")
    assert {"dlperf.workloads.common", "dlperf.flops", "dlperf.measure.ceiling"} <= set(torch_files)
    assert not any(
        name.startswith(("dlperf.launch", "dlperf.measure.runs", "dlperf.measure.tables"))
        for name in torch_files
    )
    assert get_adapter("pytorch").code_digest() == workloads.code_digest(
        "dlperf.workloads.torch_train"
    )
    assert len(get_adapter("paddlepaddle").code_digest() or "") == 16
    assert get_adapter("ngc_pytorch").code_digest() is None
