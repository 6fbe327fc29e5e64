"""pytorch/examples' imagenet ResNet-50: 4b119d7 as DLPerf v1.0 ran it, and release `current`
(main) in NGC PyTorch.
"""

from __future__ import annotations

from typing import Any, ClassVar

from dlperf.adapters.base import ModelSource, TaskContext
from dlperf.adapters.launchers import STEP_GROUP
from dlperf.adapters.releases import GPU_RECORD, Evidence, Ran, Release
from dlperf.adapters.upstream import UpstreamAdapter, upstream_options
from dlperf.matrix import Cell
from dlperf.parse.upstream import Parser
from dlperf.parse.upstream.pytorch_examples import parse_pytorch_examples

# pytorch/examples main as stored (2025-08-25); imagenet/main.py last changed at 4206858
# (2025-07-07). Its requirements.txt asks torch>=2.6 (the torch.accelerator API).
PT_EXAMPLES_CURRENT = "77f55b912142e11fcfdf5b530231fb9c52f181e8"
# NVIDIA's release notes for 25.12: PyTorch 2.10.0a0+b4e4ee81d3, CUDA 13.1.0 (Hopper: sm_90).
NGC_PYTORCH_EXAMPLES = "nvcr.io/nvidia/pytorch:25.12-py3"


class PyTorchExamples(UpstreamAdapter):
    """pytorch/examples imagenet (4b119d7) ResNet-50, FP32 only (no AMP at that commit).

    `-b` of the script is the batch of all GPUs of a node; `--multiprocessing-distributed` spawns
    one process per GPU. The script has no step limit: it is stopped once the window is logged.
    Release `current`: the same script at pytorch/examples main (still FP32 only), with `--dummy`
    (FakeData) when there is no data_dir.
    """

    name: ClassVar[str] = "pytorch_examples"
    display_name: ClassVar[str] = "PyTorch"
    version: ClassVar[str] = "PyTorch 1.6.0; pytorch/examples 4b119d7"
    models: ClassVar[dict[str, ModelSource]] = {
        "resnet50": ModelSource(
            "pytorch/examples", "imagenet", "4b119d735b802453479d739bf823f3f7d8d5d422"
        ),
    }
    entry: ClassVar[dict[str, str]] = {"resnet50": "main.py"}
    parsers: ClassVar[dict[str, Parser]] = {"resnet50": parse_pytorch_examples}
    precisions: ClassVar[dict[str, tuple[str, ...]]] = {"resnet50": ("fp32",)}
    environment: ClassVar[str] = "envs/pytorch_examples.yaml"
    features: ClassVar[tuple[str, ...]] = ("DistributedDataParallel (NCCL)",)
    source_root: ClassVar[str] = "/workspace/pytorch-examples"
    stop_pattern: ClassVar[str] = rf"Epoch: \[\d+\]\[\s*{STEP_GROUP}/"
    options: ClassVar[dict[str, Any]] = upstream_options(
        max_batch_size={"resnet50": {"fp32": 128}},
        # `-j`, DataLoader workers of a node: main.py gives each of its processes
        # ceil(j / GPUs) of them (DLPerf tried 8 and 48)
        workers=8,
    )
    releases: ClassVar[dict[str, Release]] = {
        # pytorch/examples imagenet/main.py at main: the same flags and ProgressMeter line as
        # 4b119d7 (the batch now printed 1-based, `display(i + 1)`), plus `--dummy` (FakeData of
        # 1281167 random 224x224 images, made on the CPU by the DataLoader workers). Still no AMP
        # flag, no step limit, and no LOCAL_RANK handling (torchrun would put every rank on one
        # GPU), so the launch stays `--multiprocessing-distributed` with a tcp:// dist-url.
        "current": Release(
            version=(f"PyTorch 2.10.0a0 (NGC 25.12); pytorch/examples {PT_EXAMPLES_CURRENT[:7]}"),
            environment=NGC_PYTORCH_EXAMPLES,
            models={"resnet50": ModelSource("pytorch/examples", "imagenet", PT_EXAMPLES_CURRENT)},
            evidence=Evidence(
                Ran.ONCE,
                'docs/upstream-releases.md, "Sources run once by hand": on a CPU (torch 2.13.0, '
                f"--dummy); {GPU_RECORD}: on an H100 (torch 2.11.0, --dummy, through gpu-proof, "
                "2026-11-27)",
            ),
        ),
    }

    def skip_reason(self, cell: Cell, options: dict[str, Any]) -> str | None:
        if self.release_name(options) == "current":
            return None  # --dummy when there is no data_dir
        return super().skip_reason(cell, options)

    def script_args(self, ctx: TaskContext) -> list[str]:
        o = ctx.options
        node_batch = self.batch_size(ctx.cell, o) * ctx.gpus_per_node
        data = [str(o["data_dir"])]
        if self.release_name(o) == "current" and not o["data_dir"]:
            data = ["--dummy"]  # main.py's DIR is optional there (nargs='?')
        # main.py at main trains on the CPU where there is no accelerator, but its process group
        # takes --dist-backend as given: a CPU torch has no NCCL (found by running it on a CPU)
        backend = "gloo" if self.release_name(o) == "current" and ctx.device == "cpu" else "nccl"
        return [
            "-a",
            "resnet50",
            "-b",
            str(node_batch),
            "-j",
            str(o["workers"]),
            "-p",
            "1",
            "--epochs",
            "1",
            "--dist-url",
            f"tcp://{ctx.master_addr}:{ctx.master_port}",
            "--dist-backend",
            backend,
            "--multiprocessing-distributed",
            "--world-size",
            str(ctx.nodes),
            "--rank",
            str(ctx.node_rank),
            *data,
        ]
