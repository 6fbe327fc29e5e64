"""DeepLearningExamples' MXNet ResNet-50 v1.5 in NGC MXNet, through `horovodrun` from node 0
(release `current`: DLE's last MXNet RN50 in NGC MXNet 24.06).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from dlperf.adapters.base import ModelSource, TaskContext
from dlperf.adapters.dle import DLE, DLE_CURRENT, DLE_ROOT
from dlperf.adapters.releases import Release
from dlperf.adapters.upstream import UpstreamAdapter, upstream_options
from dlperf.parse.upstream import Parser
from dlperf.parse.upstream.dllogger import parse_dle_mxnet_rn50_current
from dlperf.parse.upstream.mxnet import parse_dle_mxnet_rn50

DLE_MXNET = "e470c2150abf4179f873cabad23945bbc920cc5f"
# NVIDIA's MXNet container 24.06 (MXNet 1.9.1, CUDA 12.4.1; its release notes: "intended for use on
# the NVIDIA Hopper Architecture H100 GPU"), the newest MXNet release notes found. DLE's MXNet
# RN50 was last changed at 810bcf3 (May 2023); its Dockerfile still names mxnet:22.10-py3.
NGC_MXNET_LAST = "nvcr.io/nvidia/mxnet:24.06-py3"
# DLE master's MxNet/Classification/RN50v1.5/runner: the environment it sets before train.py.
DLE_MXNET_RUNNER_ENV = {
    "MXNET_UPDATE_ON_KVSTORE": "0",
    "MXNET_EXEC_ENABLE_ADDTO": "1",
    "MXNET_USE_TENSORRT": "0",
    "MXNET_GPU_WORKER_NTHREADS": "2",
    "MXNET_GPU_COPY_NTHREADS": "1",
    "MXNET_OPTIMIZER_AGGREGATION_SIZE": "60",
    "HOROVOD_CYCLE_TIME": "0.1",
    "HOROVOD_FUSION_THRESHOLD": "67108864",
    "MXNET_HOROVOD_NUM_GROUPS": "16",
    "MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_FWD": "999",
    "MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_BWD": "25",
    "MXNET_ENABLE_CUDA_GRAPHS": "1",
    "MXNET_ASYNC_GPU_ENGINE": "1",
    "HOROVOD_ENABLE_ASYNC_COMPLETION": "1",
    "MXNET_CUDNN_AUTOTUNE_DEFAULT": "0",
    "HOROVOD_BATCH_D2D_MEMCOPIES": "1",
    "HOROVOD_GROUPED_ALLREDUCES": "1",
    "OMP_NUM_THREADS": "1",
}


class NGCMXNet(UpstreamAdapter):
    """DeepLearningExamples MXNet ResNet-50 v1.5 (DALI, Horovod) in NGC MXNet 20.03.

    `--batch-size` of the script is the global batch (DLPerf passed per-device x devices).
    Release current: DLE's last MXNet RN50 (DLE_CURRENT) in NGC MXNet 24.06, the newest found.
    """

    name: ClassVar[str] = "ngc_mxnet"
    display_name: ClassVar[str] = "NGC MXNet"
    version: ClassVar[str] = f"MXNet 1.6.0 (NGC 20.03); DeepLearningExamples {DLE_MXNET[:7]}"
    launch: ClassVar[str] = "horovodrun"
    models: ClassVar[dict[str, ModelSource]] = {
        "resnet50": ModelSource(DLE, "MxNet/Classification/RN50v1.5", DLE_MXNET),
    }
    entry: ClassVar[dict[str, str]] = {"resnet50": "train.py"}
    parsers: ClassVar[dict[str, Parser]] = {"resnet50": parse_dle_mxnet_rn50}
    environment: ClassVar[str] = "nvcr.io/nvidia/mxnet:20.03-py3"
    features: ClassVar[tuple[str, ...]] = ("DALI", "Horovod", "AMP (float16, NHWC)")
    source_root: ClassVar[str] = DLE_ROOT
    synthetic_models: ClassVar[frozenset[str]] = frozenset({"resnet50"})
    options: ClassVar[dict[str, Any]] = upstream_options(
        mpi=True,
        max_batch_size={"resnet50": {"fp32": 128, "amp": 256}},
        data_backend="dali-gpu",  # with data_dir; without, the script's synthetic backend
        env={  # DeepLearningExamples' recommended settings for this script
            "MXNET_UPDATE_ON_KVSTORE": "0",
            "MXNET_EXEC_ENABLE_ADDTO": "1",
            "MXNET_USE_TENSORRT": "0",
            "MXNET_GPU_WORKER_NTHREADS": "2",
            "MXNET_GPU_COPY_NTHREADS": "1",
            "MXNET_OPTIMIZER_AGGREGATION_SIZE": "54",
            "HOROVOD_CYCLE_TIME": "0.1",
            "HOROVOD_FUSION_THRESHOLD": "67108864",
            "HOROVOD_NUM_NCCL_STREAMS": "2",
            "MXNET_HOROVOD_NUM_GROUPS": "16",
            "MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_FWD": "999",
            "MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_BWD": "25",
        },
    )

    releases: ClassVar[dict[str, Release]] = {
        # train.py and its flags as DLPerf v1.0 ran them (every one is still in fit.py, models.py,
        # data.py at DLE_CURRENT); new: rank 0 logs through dllogger (parse_dle_mxnet_rn50_current),
        # the runner's input of 4 channels in float16 and its environment (DLE_MXNET_RUNNER_ENV).
        # DLE's Dockerfile adds dllogger v0.1.0 (requirements.txt) to the image.
        "current": Release(
            version=f"MXNet 1.9.1 (NGC 24.06); DeepLearningExamples {DLE_CURRENT[:7]}",
            environment=NGC_MXNET_LAST,
            models={
                "resnet50": ModelSource(DLE, "MxNet/Classification/RN50v1.5", DLE_CURRENT),
            },
            parsers={"resnet50": parse_dle_mxnet_rn50_current},
            unverified="not run: no GPU or container here; flags read from fit.py, models.py, "
            "data.py and runner at DLE 729963d, the log line from fit.py and log_utils.py there "
            "and dllogger v0.1.0's StdOutBackend; DLE never ran these scripts in the 24.06 image",
        ),
    }

    def workload_env(self, ctx: TaskContext) -> dict[str, str]:
        """Release current: the runner's environment, then those of option env that differ from
        DLPerf v1.0's defaults (which the option holds unless the case sets it)."""
        env = super().workload_env(ctx)
        if self.release_name(ctx.options) != "current":
            return env
        defaults = self.options["env"]
        return DLE_MXNET_RUNNER_ENV | {k: v for k, v in env.items() if defaults.get(k) != v}

    def script_args(self, ctx: TaskContext) -> list[str]:
        args = self.dlperf_v1_args(ctx)
        if self.release_name(ctx.options) != "current":
            return args
        # runner: `n_ch = 4 - int(data_backend == 'mxnet')` in float16 (DALI pads to 4 channels)
        backend = args[args.index("--data-backend") + 1]
        channels = 4 - int(backend == "mxnet") if ctx.cell.precision == "amp" else 3
        args[args.index("--image-shape") + 1] = f"{channels},224,224"
        dllogger = Path(ctx.run_dir) / "dle_mxnet_dllogger.json"  # rank 0's JSON copy
        return [*args, "--dllogger-log", str(dllogger)]

    def dlperf_v1_args(self, ctx: TaskContext) -> list[str]:
        o, cell = ctx.options, ctx.cell
        total = self.batch_size(cell, o) * ctx.nodes * ctx.gpus_per_node
        if cell.precision == "amp":
            precision = [
                "--dtype",
                "float16",
                "--fuse-bn-relu",
                "1",
                "--fuse-bn-add-relu",
                "1",
                "--input-layout",
                "NCHW",
                "--conv-layout",
                "NHWC",
                "--batchnorm-layout",
                "NHWC",
                "--pooling-layout",
                "NHWC",
            ]
        else:
            precision = [
                "--dtype",
                "float32",
                "--input-layout",
                "NHWC",
                "--fuse-bn-relu",
                "0",
                "--fuse-bn-add-relu",
                "0",
            ]
        if o["data_dir"]:
            data = [
                "--data-backend",
                o["data_backend"],
                "--data-train",
                f"{o['data_dir']}/train.rec",
                "--data-train-idx",
                f"{o['data_dir']}/train.idx",
            ]
        else:
            data = ["--data-backend", "synthetic"]
        return [
            "--arch",
            "resnetv15",
            "--num-layers",
            "50",
            "--num-classes",
            "1000",
            "--mode",
            "train",
            "--gpus",
            ",".join(str(i) for i in range(ctx.gpus_per_node)),
            "--batch-size",
            str(total),
            "--image-shape",
            "3,224,224",
            "--lr",
            "0.256",
            "--lr-schedule",
            "cosine",
            "--optimizer",
            "sgd",
            "--mom",
            "0.875",
            "--wd",
            "3.0517578125e-05",
            "--label-smoothing",
            "0.1",
            "--kv-store",
            "horovod",
            "--benchmark-iters",
            str(ctx.steps),
            "--no-metrics",
            "--disp-batches",
            "1",
            "--save-frequency",
            "0",
            "--num-epochs",
            "1",
            *precision,
            *data,
        ]
