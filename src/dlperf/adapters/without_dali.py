"""Runs DeepLearningExamples' ConvNets `main.py` where NVIDIA DALI is not installed.

ConvNets' `image_classification/dataloaders.py` tries to import DALI, prints "Please install
DALI" when it cannot, and then defines `class HybridTrainPipe(Pipeline)` at module level anyway:
without DALI the script stops with `NameError: name 'Pipeline' is not defined` before it reads
`--data-backend` (found on an H100 without DALI, 2026-11-27; NGC's image has DALI). This puts
stand-ins for the names that module imports into `sys.modules`, only when DALI is absent, and runs
the script as `__main__` with its own arguments. The synthetic and pytorch backends never touch
DALI; a DALI backend would fail at its first use of a stand-in, naming DALI.

    python without_dali.py main.py [main.py's arguments...]
"""

from __future__ import annotations

import importlib
import importlib.util
import runpy
import sys
import types
from pathlib import Path

MISSING = "NVIDIA DALI is not installed: choose --data-backend synthetic or pytorch"


class Absent:
    """What DALI's classes stand in as: subclassable, and failing when made."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise ImportError(MISSING)


def dali_installed() -> bool:
    try:
        return importlib.util.find_spec("nvidia.dali") is not None
    except ImportError:  # no `nvidia` package at all
        return False


def module(name: str, **names: object) -> types.ModuleType:
    m = types.ModuleType(name, f"stand-in for {name}: {MISSING}")
    m.__dict__.update(names)
    sys.modules[name] = m
    return m


def install_stand_ins() -> None:
    """`nvidia.dali` with the modules and names dataloaders.py imports."""
    try:
        nvidia = importlib.import_module("nvidia")  # CUDA wheels' namespace, when installed
    except ImportError:
        nvidia = module("nvidia")
    dali = module("nvidia.dali")
    dali.pipeline = module("nvidia.dali.pipeline", Pipeline=Absent)  # type: ignore[attr-defined]
    dali.ops = module("nvidia.dali.ops")  # type: ignore[attr-defined]
    dali.types = module("nvidia.dali.types")  # type: ignore[attr-defined]
    dali.plugin = module("nvidia.dali.plugin")  # type: ignore[attr-defined]
    dali.plugin.pytorch = module(  # type: ignore[attr-defined]
        "nvidia.dali.plugin.pytorch",
        DALIClassificationIterator=Absent,
        DALIGenericIterator=Absent,
    )
    nvidia.dali = dali  # type: ignore[attr-defined]


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: without_dali.py SCRIPT [ARGS...]")
    script = Path(sys.argv[1])
    if not dali_installed():
        install_stand_ins()
    sys.argv = sys.argv[1:]
    sys.path[0] = str(script.parent)  # as if the script had been run itself
    runpy.run_path(str(script), run_name="__main__")


if __name__ == "__main__":
    main()
