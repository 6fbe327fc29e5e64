"""gluon-cv's ImageNet ResNet-50 v1b (train_horovod.py) as DLPerf v1.0 ran it with MXNet 1.6.0."""

from __future__ import annotations

from typing import Any, ClassVar

from dlperf.adapters.base import ModelSource, TaskContext
from dlperf.adapters.launchers import STEP_GROUP
from dlperf.adapters.upstream import UpstreamAdapter, upstream_options
from dlperf.parse.upstream import Parser
from dlperf.parse.upstream.mxnet import parse_gluoncv_rn50


class GluonCV(UpstreamAdapter):
    """gluon-cv (f9a8a28) scripts/classification/imagenet/train_horovod.py ResNet-50 v1b.

    `mpirun` from node 0 (Horovod); the script has no step limit: it is stopped once the window is
    logged (DLPerf uncommented its per-batch speed line).
    """

    name: ClassVar[str] = "mxnet_gluoncv"
    display_name: ClassVar[str] = "MXNet"
    version: ClassVar[str] = "MXNet 1.6.0; gluon-cv f9a8a28"
    launch: ClassVar[str] = "mpirun"
    models: ClassVar[dict[str, ModelSource]] = {
        "resnet50": ModelSource(
            "dmlc/gluon-cv",
            "scripts/classification/imagenet",
            "f9a8a284b8222794bc842453e2bebe5746516048",
        ),
    }
    entry: ClassVar[dict[str, str]] = {"resnet50": "train_horovod.py"}
    parsers: ClassVar[dict[str, Parser]] = {"resnet50": parse_gluoncv_rn50}
    environment: ClassVar[str] = "envs/mxnet_gluoncv.yaml"
    features: ClassVar[tuple[str, ...]] = ("Horovod", "float16")
    source_root: ClassVar[str] = "/workspace/gluon-cv"
    stop_pattern: ClassVar[str] = rf"Epoch\[\d+\] Batch\[{STEP_GROUP}\]"
    options: ClassVar[dict[str, Any]] = upstream_options(
        mpi=True,
        max_batch_size={"resnet50": {"fp32": 128, "amp": 256}},
    )

    def script_args(self, ctx: TaskContext) -> list[str]:
        o, cell = ctx.options, ctx.cell
        data = o["data_dir"]
        # train_horovod.py has no index flags (ImageRecordDataset reads train.idx beside
        # train.rec) and no --mode: DLPerf's `--mode='hybrid'` was argparse's abbreviation of
        # --model, which the next flag overrode
        return [
            "--model=resnet50_v1b",
            "--use-rec",
            f"--rec-train={data}/train.rec",
            f"--rec-val={data}/val.rec",
            f"--batch-size={self.batch_size(cell, o)}",
            f"--dtype={'float16' if cell.precision == 'amp' else 'float32'}",
            "--log-interval=1",
            "--save-frequency=10000",
            "--lr=0.001",
            "--momentum=0.875",
            "--wd=0.000030518",
            "--num-epochs=1",
            "--warmup-epochs=1",
        ]
