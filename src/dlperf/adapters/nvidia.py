"""NVIDIA's sources: DeepLearningExamples in the NGC containers, Megatron-LM and HugeCTR.

DLPerf v1.0 ran DeepLearningExamples at fixed commits in the NGC 20.03 containers; PyTorch through
`torch.distributed.launch` on every node, TensorFlow 1.x and MXNet through `horovodrun` from node 0.

Release `current` (option `release`, see dlperf.adapters.upstream): DeepLearningExamples' last
commit (DLE_CURRENT) in containers that run on Hopper, Megatron-LM's core_v0.19.0 and HugeCTR
v24.06.00's Python W&D sample in merlin-hugectr:24.06; what each changes is said at the adapter,
and docs/upstream-releases.md says what was read from which file and what is not verified.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from dlperf.adapters.base import ModelSource, TaskContext
from dlperf.adapters.oneflow import gpt_args
from dlperf.adapters.upstream import Release, UpstreamAdapter, upstream_options
from dlperf.errors import ConfigError
from dlperf.matrix import Cell

DLE = "NVIDIA/DeepLearningExamples"
DLE_PYTORCH_RN50 = "46ff3707e04683e41b79af0f94a74e45f8016786"
DLE_PYTORCH_BERT = "26c26761042c0e352238add07f0074e87ac66023"
DLE_TENSORFLOW = "fed7ba99cde958fda12c9e81d12b3d7e738e0590"
DLE_MXNET = "e470c2150abf4179f873cabad23945bbc920cc5f"
DLE_ROOT = "/workspace/DeepLearningExamples"
# DeepLearningExamples master, April 2024 (its last commit). PyTorch ConvNets last changed at
# a684cf0 and PyTorch BERT at a0781f8 (March 2023); TensorFlow 1.x models were retired at 9de48bc.
DLE_CURRENT = "729963dd47e7c8bd462ad10bfac7a7b0b604e6dd"
NGC_PYTORCH_CURRENT = "nvcr.io/nvidia/pytorch:24.03-py3"
# NVIDIA's last TensorFlow 1.x container: "After the current 23.03 release, TF1 will no longer
# release monthly" (NVIDIA/tensorflow release 23.03). CUDA 12.1, so it has Hopper kernels.
NGC_TF1_LAST = "nvcr.io/nvidia/tensorflow:23.03-tf1-py3"
# Megatron-LM's release tag core_v0.19.0 (August 2026) and the NGC PyTorch image its CI builds
# from (docker/.ngc_version.dev; its LTS image, docker/.ngc_version.lts, is 25.09).
MEGATRON_CURRENT = "5be9626709af2722333bf54797c954c09edeada3"
NGC_PYTORCH_MEGATRON = "nvcr.io/nvidia/pytorch:26.06-py3"
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
# HugeCTR's release v24.06.00 and the last HugeCTR image on NGC: from v25.03.00 (March 2025) on
# HugeCTR ships only a Dockerfile, and v25.03.00's samples/wdl, src/pybind/model.cpp and
# core23/logger.cpp are v24.06.00's unchanged. NVIDIA-Merlin/Merlin v24.06.00's
# docker/dockerfile.ctr builds the image's HugeCTR with -DSM="60;61;70;75;80;90" (Hopper).
HUGECTR_CURRENT = "a89cf40460b3e73d77a8d84264a001c253730576"
NGC_HUGECTR = "nvcr.io/nvidia/merlin/merlin-hugectr:24.06"


class NGCPyTorch(UpstreamAdapter):
    """DeepLearningExamples PyTorch ResNet-50 v1.5 (DALI, APEX AMP) and BERT (APEX) in NGC PyTorch 20.03."""

    name: ClassVar[str] = "ngc_pytorch"
    display_name: ClassVar[str] = "NGC PyTorch"
    version: ClassVar[str] = (
        f"PyTorch 1.5.0a0+8f84ded (NGC 20.03); DeepLearningExamples {DLE_PYTORCH_RN50[:7]}/{DLE_PYTORCH_BERT[:7]}"
    )
    launch: ClassVar[str] = "torch"
    models: ClassVar[dict[str, ModelSource]] = {
        "resnet50": ModelSource(DLE, "PyTorch/Classification/ConvNets", DLE_PYTORCH_RN50),
        "bert_base": ModelSource(DLE, "PyTorch/LanguageModeling/BERT", DLE_PYTORCH_BERT),
    }
    entry: ClassVar[dict[str, str]] = {"resnet50": "main.py", "bert_base": "run_pretraining.py"}
    parsers: ClassVar[dict[str, str]] = {
        "resnet50": "parse_dle_pytorch_rn50",
        "bert_base": "parse_dle_pytorch_bert",
    }
    environment: ClassVar[str] = "nvcr.io/nvidia/pytorch:20.03-py3"
    features: ClassVar[tuple[str, ...]] = ("DALI", "APEX AMP", "torch.distributed")
    source_root: ClassVar[str] = DLE_ROOT
    synthetic_models: ClassVar[frozenset[str]] = frozenset({"resnet50"})
    options: ClassVar[dict[str, Any]] = upstream_options(
        max_batch_size={
            "resnet50": {"fp32": 128, "amp": 256},
            "bert_base": {"fp32": 48, "amp": 96},
        },
        data_backend="dali-cpu",  # with data_dir (DLPerf's); without, DLE's synthetic loader
        workers=8,
        bert_config="",  # "" = bert_config.json in the BERT folder
        seq_len=128,
        max_predictions_per_seq=20,
        vocab_file="",  # release current: "" = vocab/vocab in the BERT folder
    )
    releases: ClassVar[dict[str, Release]] = {
        # The scripts take LOCAL_RANK from the environment (ConvNets' main.py asserts that no
        # argument is left over, so torch.distributed.launch's --local-rank would stop it): torchrun.
        # DLE's Dockerfiles add dllogger (ConvNets), and dllogger, lddl and lamb_amp_opt (BERT) to
        # the image; their own FROM lines (21.03, 21.11) predate Hopper.
        "current": Release(
            version=f"PyTorch 2.3.0a0 (NGC 24.03); DeepLearningExamples {DLE_CURRENT[:7]}",
            environment=NGC_PYTORCH_CURRENT,
            models={
                "resnet50": ModelSource(DLE, "PyTorch/Classification/ConvNets", DLE_CURRENT),
                "bert_base": ModelSource(DLE, "PyTorch/LanguageModeling/BERT", DLE_CURRENT),
            },
            parsers={"bert_base": "parse_dle_pytorch_bert_current"},
            launch="torchrun",
            unverified="not run: no GPU or container here; argument names and log lines read "
            "from the scripts at DLE_CURRENT",
        ),
    }

    def script_args(self, ctx: TaskContext) -> list[str]:
        o, cell = ctx.options, ctx.cell
        if self.release_name(o) == "current":
            return self.current_args(ctx)
        bsz = self.batch_size(cell, o)
        node = ctx.node_rank
        if cell.model == "resnet50":
            amp = ["--amp", "--dynamic-loss-scale"] if cell.precision == "amp" else []
            backend = o["data_backend"] if o["data_dir"] else "syntetic"  # sic: DLE's spelling
            return [
                "--data-backend",
                backend,
                "--arch",
                "resnet50",
                "-b",
                str(bsz),
                "-j",
                str(o["workers"]),
                "-p",
                "1",
                "--epochs",
                "1",
                "--prof",
                str(ctx.steps),
                "--training-only",
                "--no-checkpoints",
                "--optimizer-batch-size",
                "-1",
                "--warmup",
                "8",
                "-c",
                "fanin",
                "--label-smoothing",
                "0.1",
                "--lr-schedule",
                "cosine",
                "--mom",
                "0.875",
                "--wd",
                "3.0517578125e-05",
                "--workspace",
                str(ctx.run_dir),
                "--raport-file",
                str(ctx.run_dir / f"raport_node{node}.json"),
                *amp,
                str(o["data_dir"] or ctx.run_dir),
            ]
        config = o["bert_config"] or f"{self.model_dir('bert_base', o)}/bert_config.json"
        return [
            f"--input_dir={o['data_dir']}",
            f"--output_dir={ctx.run_dir / f'checkpoints_node{node}'}",
            f"--config_file={config}",
            "--bert_model=bert-base-uncased",
            f"--train_batch_size={bsz}",
            f"--max_seq_length={o['seq_len']}",
            f"--max_predictions_per_seq={o['max_predictions_per_seq']}",
            f"--max_steps={ctx.steps}",
            "--warmup_proportion=1",
            "--num_steps_per_checkpoint=1000000",
            "--learning_rate=6e-3",
            "--seed=42",
            "--do_train",
            "--skip_checkpoint",
            f"--json-summary={ctx.run_dir / f'dllogger_node{node}.json'}",
            *(["--fp16"] if cell.precision == "amp" else []),
        ]

    def current_args(self, ctx: TaskContext) -> list[str]:
        """Release current: ConvNets main.py (torch.cuda.amp, `synthetic` spelled right, model
        flags parsed apart) and BERT run_pretraining.py (LDDL parquet input, a vocab file)."""
        o, cell = ctx.options, ctx.cell
        bsz = self.batch_size(cell, o)
        node = ctx.node_rank
        if cell.model == "resnet50":
            # configs.yml: AMP is `amp: True, static_loss_scale: 128` with memory_format nhwc
            amp = ["--amp", "--static-loss-scale", "128", "--memory-format", "nhwc"]
            return [
                "--data-backend",
                o["data_backend"] if o["data_dir"] else "synthetic",
                "--arch",
                "resnet50",
                "--batch-size",
                str(bsz),
                "--workers",
                str(o["workers"]),
                "--print-freq",
                "1",
                "--epochs",
                "1",
                "--prof",
                str(ctx.steps),
                "--training-only",
                "--no-checkpoints",
                "--warmup",
                "8",
                "--label-smoothing",
                "0.1",
                "--lr-schedule",
                "cosine",
                "--momentum",
                "0.875",
                "--weight-decay",
                "3.0517578125e-05",
                "--workspace",
                str(ctx.run_dir),
                "--raport-file",
                f"raport_node{node}.json",
                *(amp if cell.precision == "amp" else []),
                str(o["data_dir"] or ctx.run_dir),
            ]
        folder = self.model_dir("bert_base", o)
        return [
            f"--input_dir={o['data_dir']}",
            f"--output_dir={ctx.run_dir / f'checkpoints_node{node}'}",
            f"--config_file={o['bert_config'] or folder + '/bert_configs/base.json'}",
            f"--vocab_file={o['vocab_file'] or folder + '/vocab/vocab'}",
            f"--train_batch_size={bsz}",
            f"--max_seq_length={o['seq_len']}",
            f"--max_predictions_per_seq={o['max_predictions_per_seq']}",
            f"--max_steps={ctx.steps}",
            "--warmup_proportion=1",
            "--num_steps_per_checkpoint=1000000",
            "--learning_rate=6e-3",
            "--seed=42",
            "--do_train",
            "--skip_checkpoint",
            f"--json-summary={ctx.run_dir / f'dllogger_node{node}.json'}",
            "--disable_progress_bar",
            f"--num_workers={o['workers']}",
            *(["--fp16"] if cell.precision == "amp" else []),
        ]


@dataclass(frozen=True)
class ConvNetsFlags:
    """What TensorFlow/Classification/ConvNets main.py calls its flags at a release."""

    mode: str
    dali: str
    cosine_lr: str
    xla: str
    fp32: tuple[str, ...]
    amp: tuple[str, ...]


CONVNETS_FLAGS = {
    # DLPerf v1.0 (DLE fed7ba9, NGC 20.03)
    "dlperf_v1": ConvNetsFlags(
        mode="train",
        dali="--use_dali",
        cosine_lr="--use_cosine_lr",
        xla="--use_xla",
        fp32=("--precision=fp32",),
        amp=("--precision=fp32", "--use_tf_amp", "--use_static_loss_scaling", "--loss_scale=128"),
    ),
    # The last TF1 main.py, as resnet50v1.5/training/training_perf.sh runs it
    # (`--mode=training_benchmark`, `--amp --static_loss_scale 128`, `--xla`)
    "current": ConvNetsFlags(
        mode="training_benchmark",
        dali="--dali",
        cosine_lr="--cosine_lr",
        xla="--xla",
        fp32=(),
        amp=("--amp", "--static_loss_scale=128"),
    ),
}


class NGCTensorFlow(UpstreamAdapter):
    """DeepLearningExamples TensorFlow 1.x ResNet-50 v1.5 (DALI, Horovod, XLA) and BERT (Horovod, XLA)."""

    name: ClassVar[str] = "ngc_tensorflow"
    display_name: ClassVar[str] = "NGC TensorFlow 1.x"
    version: ClassVar[str] = (
        f"TensorFlow 1.15.2 (NGC 20.03); DeepLearningExamples {DLE_TENSORFLOW[:7]}"
    )
    launch: ClassVar[str] = "horovodrun"
    models: ClassVar[dict[str, ModelSource]] = {
        "resnet50": ModelSource(DLE, "TensorFlow/Classification/ConvNets", DLE_TENSORFLOW),
        "bert_base": ModelSource(DLE, "TensorFlow/LanguageModeling/BERT", DLE_TENSORFLOW),
    }
    entry: ClassVar[dict[str, str]] = {"resnet50": "main.py", "bert_base": "run_pretraining.py"}
    parsers: ClassVar[dict[str, str]] = {
        "resnet50": "parse_dle_tf1_rn50",
        "bert_base": "parse_dle_tf1_bert",
    }
    environment: ClassVar[str] = "nvcr.io/nvidia/tensorflow:20.03-tf1-py3"
    features: ClassVar[tuple[str, ...]] = ("DALI", "Horovod", "XLA", "TF-AMP")
    source_root: ClassVar[str] = DLE_ROOT
    xla_models: ClassVar[frozenset[str]] = frozenset({"resnet50", "bert_base"})
    synthetic_models: ClassVar[frozenset[str]] = frozenset({"resnet50"})
    log_interval: ClassVar[int] = 10  # BERT's hook prints every 10 steps (display_loss_steps)
    options: ClassVar[dict[str, Any]] = upstream_options(
        mpi=True,
        max_batch_size={
            "resnet50": {"fp32": 128, "amp": 224},
            "bert_base": {"fp32": 48, "amp": 64, "amp_xla": 96},
        },
        dali=False,  # ResNet-50: read the TFRecords with DALI (needs its index files)
        dali_idx_dir="",  # "" = dali_idx beside data_dir (DLPerf's layout: <root>/tfrecords, <root>/dali_idx)
        bert_config="",  # "" = data/bert_config.json in the BERT folder
        seq_len=128,
        max_predictions_per_seq=20,
    )
    releases: ClassVar[dict[str, Release]] = {
        # TensorFlow 1.x ended: DLE retired its TF1 models (9de48bc, April 2023; ConvNets unmaintained
        # since April 2021) and NGC's last TF1 container is 23.03. This release is the last TF1
        # code in that last container (the Dockerfiles say 20.12-tf1 and 20.06-tf1, which predate
        # Hopper). ResNet-50: main.py's `--mode=training_benchmark`, whose hook prints `total_ips`.
        # BERT: TensorFlow/LanguageModeling/BERT run_pretraining.py (last changed 71aab7b), the
        # same program as DLPerf v1.0's with `--amp`/`--use_xla` (both default on) for
        # `--use_fp16`, and a line every display_loss_steps (now 1 by default).
        "current": Release(
            version=f"TensorFlow 1.15.5 (NGC 23.03, the last TF1); DeepLearningExamples {DLE_CURRENT[:7]}",
            environment=NGC_TF1_LAST,
            models={
                "resnet50": ModelSource(DLE, "TensorFlow/Classification/ConvNets", DLE_CURRENT),
                "bert_base": ModelSource(DLE, "TensorFlow/LanguageModeling/BERT", DLE_CURRENT),
            },
            parsers={
                "resnet50": "parse_dle_tf1_rn50_benchmark",
                "bert_base": "parse_dle_tf1_bert_current",
            },
            unverified="not run: no GPU or container here; DLE never tested these scripts in "
            "23.03 (the scripts' own containers are 20.12-tf1 and 20.06-tf1)",
        ),
    }

    def script_args(self, ctx: TaskContext) -> list[str]:
        o, cell = ctx.options, ctx.cell
        bsz = self.batch_size(cell, o)
        if cell.model == "bert_base":
            return self.bert_args(ctx, bsz, current=self.release_name(o) == "current")
        return self.rn50_args(ctx, bsz, CONVNETS_FLAGS[self.release_name(o)])

    def bert_args(self, ctx: TaskContext, bsz: int, current: bool) -> list[str]:
        """run_pretraining.py's arguments as DLPerf v1.0 passed them. Release current (the last
        TF1 BERT) takes the same, except: precision and XLA said both ways (`--amp`/`--noamp`,
        `--use_xla`/`--nouse_xla`, as scripts/run_pretraining_adam.sh passes them: both default
        to on), a line every step (`--display_loss_steps=1`, so an AMP-skipped step is a line of
        its own) and the dllogger JSON in the run folder (its default /results/bert_dllog.json
        needs DLE's docker mount)."""
        o, cell = ctx.options, ctx.cell
        amp = cell.precision == "amp"
        config = o["bert_config"] or f"{self.model_dir('bert_base', o)}/data/bert_config.json"
        if current:
            precision = ["--amp" if amp else "--noamp", "--use_xla" if cell.xla else "--nouse_xla"]
        else:
            precision = [*(["--use_fp16"] if amp else []), *(["--use_xla"] if cell.xla else [])]
        return [
            f"--input_files_dir={o['data_dir']}",
            f"--eval_files_dir={o['data_dir']}",
            f"--output_dir={ctx.run_dir / 'tf_bert_output'}",
            *([f"--dllog_path={ctx.run_dir / 'tf_bert_dllog.json'}"] if current else []),
            f"--bert_config_file={config}",
            "--do_train=True",
            "--do_eval=False",
            f"--train_batch_size={bsz}",
            "--eval_batch_size=32",
            f"--max_seq_length={o['seq_len']}",
            f"--max_predictions_per_seq={o['max_predictions_per_seq']}",
            f"--num_train_steps={ctx.steps}",
            "--num_warmup_steps=10000",
            "--num_accumulation_steps=1",
            "--save_checkpoints_steps=1000000",
            *(["--display_loss_steps=1"] if current else []),
            "--learning_rate=1e-4",
            "--optimizer_type=adam",
            "--horovod",
            "--allreduce_post_accumulation=False",
            *precision,
        ]

    def rn50_args(self, ctx: TaskContext, bsz: int, flags: ConvNetsFlags) -> list[str]:
        """ConvNets main.py's arguments with DLPerf's hyper-parameters, in the spelling of the
        release's main.py; `--warmup_steps=0` so the hook prints from the first step."""
        o, cell = ctx.options, ctx.cell
        data: list[str] = []
        if o["data_dir"]:
            data = [f"--data_dir={o['data_dir']}"]
            if o["dali"]:
                idx = o["dali_idx_dir"] or str(Path(o["data_dir"]).parent / "dali_idx")
                data += [flags.dali, f"--data_idx_dir={idx}"]
        return [
            "--arch=resnet50",
            f"--mode={flags.mode}",
            "--iter_unit=batch",
            f"--num_iter={ctx.steps}",
            f"--batch_size={bsz}",
            "--warmup_steps=0",
            flags.cosine_lr,
            "--label_smoothing=0.1",
            "--lr_init=0.256",
            "--lr_warmup_epochs=8",
            "--momentum=0.875",
            "--weight_decay=3.0517578125e-05",
            "--weight_init=fan_in",
            "--display_every=1",
            "--gpu_memory_fraction=0.98",
            f"--results_dir={ctx.run_dir / 'tf_results'}",
            *(flags.amp if cell.precision == "amp" else flags.fp32),
            *data,
            *([flags.xla] if cell.xla else []),
        ]


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
    parsers: ClassVar[dict[str, str]] = {"resnet50": "parse_dle_mxnet_rn50"}
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
            parsers={"resnet50": "parse_dle_mxnet_rn50_current"},
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


class Megatron(UpstreamAdapter):
    """NVIDIA Megatron-LM GPT pretraining (DLPerf's GPT special case) in NGC PyTorch 20.12.

    The cell's batch size is Megatron's micro batch; options set the model size and the
    tensor/pipeline parallel degrees. `data_dir` is the preprocessed dataset's path prefix.
    """

    name: ClassVar[str] = "megatron"
    display_name: ClassVar[str] = "Megatron-LM"
    version: ClassVar[str] = "Megatron-LM 8aa4619 (NGC PyTorch 20.12)"
    launch: ClassVar[str] = "torch"
    models: ClassVar[dict[str, ModelSource]] = {
        "gpt": ModelSource("NVIDIA/Megatron-LM", "", "8aa4619f2b2a57b5725026a50ebd2b15e8121482"),
    }
    entry: ClassVar[dict[str, str]] = {"gpt": "pretrain_gpt.py"}
    parsers: ClassVar[dict[str, str]] = {"gpt": "parse_megatron"}
    environment: ClassVar[str] = "nvcr.io/nvidia/pytorch:20.12-py3"
    features: ClassVar[tuple[str, ...]] = (
        "tensor/pipeline/data parallel",
        "activation checkpointing",
        "AMP (fp16)",
    )
    source_root: ClassVar[str] = "/workspace/Megatron-LM"
    log_interval: ClassVar[int] = 10
    seq_len: ClassVar[int] = 2048
    options: ClassVar[dict[str, Any]] = upstream_options(
        max_batch_size={"gpt": {"fp32": 4, "amp": 8}},
        tensor_parallel=1,
        pipeline_parallel=1,
        global_batch_size=0,  # 0: micro batch x data-parallel size
        num_layers=16,
        hidden_size=1536,
        num_attention_heads=16,
        seq_len=2048,
        vocab_file="",  # "" = gpt2-vocab.json in the checkout
        merge_file="",  # "" = gpt2-merges.txt in the checkout
        checkpoint_activations=True,
    )
    releases: ClassVar[dict[str, Release]] = {
        # Megatron Core's pretrain_gpt.py at core_v0.19.0, started by torchrun (as
        # examples/gpt3/train_gpt3_175b_distributed.sh does). `--checkpoint-activations` now stops
        # the script: full recompute of every layer is --recompute-granularity/-method/-num-layers.
        # Its training_log also prints the first iteration (see parse_megatron_current).
        "current": Release(
            version=f"Megatron-LM core_v0.19.0 ({MEGATRON_CURRENT[:7]}, NGC PyTorch 26.06)",
            environment=NGC_PYTORCH_MEGATRON,
            models={"gpt": ModelSource("NVIDIA/Megatron-LM", "", MEGATRON_CURRENT)},
            parsers={"gpt": "parse_megatron_current"},
            launch="torchrun",
            unverified="not run: no GPU or container here; flags read from "
            "megatron/training/arguments.py and its config dataclasses, the log line from "
            "megatron/training/training.py at core_v0.19.0",
        ),
    }

    def workload_env(self, ctx: TaskContext) -> dict[str, str]:
        env = {}
        if self.release_name(ctx.options) == "current":
            env["CUDA_DEVICE_MAX_CONNECTIONS"] = "1"  # as Megatron's own example scripts set it
        return {**env, **super().workload_env(ctx)}

    def script_args(self, ctx: TaskContext) -> list[str]:
        o = ctx.options
        if self.release_name(o) == "current":
            return self.current_args(ctx)
        root = self.root(o)
        return [
            *gpt_args(ctx, self.batch_size(ctx.cell, o), oneflow=False),
            f"--max-position-embeddings={o['seq_len']}",
            f"--data-path={o['data_dir']}",
            f"--vocab-file={o['vocab_file'] or root + '/gpt2-vocab.json'}",
            f"--merge-file={o['merge_file'] or root + '/gpt2-merges.txt'}",
            "--data-impl=mmap",
            "--distributed-backend=nccl",
            "--lr=0.00015",
            "--save-interval=1000000",
            "--eval-interval=1000000",
            "--eval-iters=1",
        ]

    def current_args(self, ctx: TaskContext) -> list[str]:
        """Release current: DLPerf's GPT flags under their current names. Gone: --data-impl,
        --distributed-backend and --checkpoint-activations (full recompute per layer instead); new:
        the tokenizer type the vocab and merge files need, and the TFLOP/s on the log line."""
        o = ctx.options
        root = self.root(o)
        shared = gpt_args(ctx, self.batch_size(ctx.cell, o), oneflow=False)
        recompute = ["--recompute-granularity=full", "--recompute-method=uniform"]
        recompute.append("--recompute-num-layers=1")
        return [
            *(a for a in shared if a != "--checkpoint-activations"),
            *(recompute if o["checkpoint_activations"] else []),
            f"--max-position-embeddings={o['seq_len']}",
            f"--data-path={o['data_dir']}",
            "--tokenizer-type=GPT2BPETokenizer",
            f"--vocab-file={o['vocab_file'] or root + '/gpt2-vocab.json'}",
            f"--merge-file={o['merge_file'] or root + '/gpt2-merges.txt'}",
            "--lr=0.00015",
            "--save-interval=1000000",
            "--eval-interval=1000000",
            "--eval-iters=1",
            "--log-throughput",
        ]


class HugeCTR(UpstreamAdapter):
    """NVIDIA HugeCTR Wide & Deep (DLPerf's W&D special case), one process per node.

    HugeCTR takes its batch size and iterations from a JSON file: the adapter writes
    `hugectr_<cell>.json` in the run folder from option config_template (DLPerf's wdl_7x1024.json
    or similar, with the data paths) with the batch size (global), iterations, GPUs per node and
    mixed precision filled in; `mpirun` on node 0 starts one `huge_ctr` per node over ssh.
    """

    name: ClassVar[str] = "hugectr"
    display_name: ClassVar[str] = "HugeCTR"
    version: ClassVar[str] = "HugeCTR v2.2"
    launch: ClassVar[str] = "mpirun"
    models: ClassVar[dict[str, ModelSource]] = {
        "wide_deep": ModelSource("NVIDIA/HugeCTR", "samples/wdl", "v2.2")
    }
    entry: ClassVar[dict[str, str]] = {"wide_deep": "huge_ctr"}
    parsers: ClassVar[dict[str, str]] = {"wide_deep": "parse_hugectr"}
    environment: ClassVar[str] = "nvcr.io/nvidia/hugectr:v2.2"
    features: ClassVar[tuple[str, ...]] = (
        "model-parallel embedding",
        "MPI multi-node",
        "mixed precision",
    )
    synthetic_models: ClassVar[frozenset[str]] = frozenset(
        {"wide_deep"}
    )  # the data is in the template
    options: ClassVar[dict[str, Any]] = upstream_options(
        mpi=True,
        max_batch_size={"wide_deep": 16384},
        binary="huge_ctr",
        config_template="",  # the W&D JSON (layers, data paths); required
        loss_scale=1024,  # solver.mixed_precision for amp (release current: CreateSolver's scaler)
        # DLPerf's vocabulary sweep (HugeCTR/scripts/gen_hugectr_conf_json.py): both embeddings'
        # max_vocabulary_size_per_gpu; 0 = the template's. Release dlperf_v1 only.
        vocab_size=0,
        # the deep embedding's embedding_vec_size (and reshape1's leading_dim); 0 = the
        # template's. Release dlperf_v1 only.
        deep_embedding_vec_size=0,
    )
    releases: ClassVar[dict[str, Release]] = {
        # The Python API's W&D sample, samples/wdl/wdl_8gpu.py: one process drives a node's GPUs
        # (CreateSolver's vvgpu, one list per node), several nodes under mpirun as
        # samples/dcn/README.md runs dcn_2node_8gpu.py. The script takes no arguments: the task
        # runs a copy of it with this cell's values (see current_edits), as DLPerf v1.0's
        # HugeCTR took them from a JSON file. Its data are the Parquet files of the sample's
        # preprocess.sh (option data_dir: the folder it calls criteo_data).
        "current": Release(
            version=f"HugeCTR 24.06 (v24.06.00 {HUGECTR_CURRENT[:7]}, merlin-hugectr:24.06)",
            environment=NGC_HUGECTR,
            models={
                "wide_deep": ModelSource("NVIDIA-Merlin/HugeCTR", "samples/wdl", HUGECTR_CURRENT)
            },
            entry={"wide_deep": "wdl_8gpu.py"},
            parsers={"wide_deep": "parse_hugectr_current"},
            source_root="/hugectr",  # samples/wdl/README.md mounts the checkout there
            unverified="not run: no GPU or container here; the script, its solver and fit "
            "arguments and the log line read from HugeCTR v24.06.00 (samples/wdl/wdl_8gpu.py, "
            "include/pybind/solver_wrapper.hpp, include/pybind/model_wrapper.hpp, "
            "src/pybind/model.cpp, core23/logger.cpp)",
        ),
    }

    def resolved_options(self, options: dict[str, Any]) -> dict[str, Any]:
        """As every upstream adapter's, less vocab_size and deep_embedding_vec_size at 0 (the
        template's): cells that do not set them measure (and stay fresh) as before they existed."""
        resolved = super().resolved_options(options)
        for key in JSON_ONLY_OPTIONS:
            if not resolved.get(key):
                resolved.pop(key, None)
        return resolved

    def check_case(self, case: dict[str, Any]) -> None:
        super().check_case(case)
        blocks = [case.get("options", {}), *case.get("precision_options", {}).values()]
        for options in blocks:
            if self.release_name(options) != "current":
                continue
            for key in JSON_ONLY_OPTIONS:
                if options.get(key) or key in case.get("sweep", {}):
                    raise ConfigError(
                        f".options.{key}: HugeCTR release current takes its vocabulary and "
                        "embedding sizes from its script, not from this option (dlperf_v1 only)"
                    )

    def skip_reason(self, cell: Cell, options: dict[str, Any]) -> str | None:
        if self.release_name(options) == "current":
            if not options.get("data_dir"):
                return (
                    "HugeCTR's W&D sample reads the Criteo Parquet files of its preprocess.sh: "
                    "set option data_dir to that folder (criteo_data, with train/ and val/)"
                )
            return None
        if not options.get("config_template"):
            return (
                "HugeCTR needs option config_template (a W&D JSON such as DLPerf's wdl_7x1024.json)"
            )
        return None

    def procs_per_node(self, ctx: TaskContext) -> int:
        return 1

    def program(self, ctx: TaskContext) -> list[str]:
        if self.release_name(ctx.options) == "current":
            return [str(ctx.options["python"]), str(self.write_script(ctx))]
        return [str(ctx.options["binary"]), "--train", str(self.write_config(ctx))]

    def current_edits(self, ctx: TaskContext) -> list[tuple[str, str]]:
        """Release current: the lines of samples/wdl/wdl_8gpu.py (v24.06.00) that hold the batch
        size (global), GPUs, data paths and iterations, and what this cell puts there. Mixed
        precision is CreateSolver's use_mixed_precision with scaler (include/pybind/
        solver_wrapper.hpp); fit's eval_interval and snapshot 0 turn evaluation and snapshots off
        (src/pybind/model.cpp tests `> 0`); display 1 logs every iteration, as DLPerf v1.0 did."""
        o = ctx.options
        total = self.batch_size(ctx.cell, o) * ctx.nodes * ctx.gpus_per_node
        vvgpu = [list(range(ctx.gpus_per_node))] * ctx.nodes
        solver = f"    vvgpu={vvgpu},\n"
        if ctx.cell.precision == "amp":
            solver += f"    use_mixed_precision=True,\n    scaler={float(o['loss_scale'])},\n"
        data = str(o["data_dir"]).rstrip("/")
        return [
            ("    batchsize=16384,\n", f"    batchsize={total},\n"),
            ("    vvgpu=[[0, 1, 2, 3, 4, 5, 6, 7]],\n", solver),
            (
                'source=["./criteo_data/train/_file_list.txt"],',
                f"source=[{data + '/train/_file_list.txt'!r}],",
            ),
            (
                'eval_source="./criteo_data/val/_file_list.txt",',
                f"eval_source={data + '/val/_file_list.txt'!r},",
            ),
            (
                "model.fit(max_iter=2300, display=200, eval_interval=1000, snapshot=1000000, "
                'snapshot_prefix="wdl")',
                f"model.fit(max_iter={ctx.steps}, display=1, eval_interval=0, snapshot=0, "
                'snapshot_prefix="wdl")',
            ),
        ]

    def write_script(self, ctx: TaskContext) -> Path:
        """Release current: `hugectr_<cell>.py` in the run folder, which reads the upstream script
        on the node, makes current_edits (each old text must be there exactly once, else it stops
        naming it) and runs the result as the script itself."""
        script = self.script(ctx.cell.model, ctx.options)
        path = Path(ctx.run_dir) / f"hugectr_{ctx.cell.id}.py"
        path.write_text(HUGECTR_RUNNER.format(script=script, edits=self.current_edits(ctx)))
        return path

    def script_args(self, ctx: TaskContext) -> list[str]:
        return []

    def write_config(self, ctx: TaskContext) -> Path:
        """The run's HugeCTR JSON: the template with this cell's batch, steps, GPUs and precision."""
        o = ctx.options
        conf = json.loads(Path(o["config_template"]).read_text())
        solver = conf.setdefault("solver", {})
        devices = list(range(ctx.gpus_per_node))
        solver["batchsize"] = self.batch_size(ctx.cell, o) * ctx.nodes * ctx.gpus_per_node
        solver["max_iter"] = ctx.steps
        solver["display"] = 1
        solver["eval_interval"] = ctx.steps + 1000
        solver["snapshot"] = 10 * ctx.steps + 1000000
        solver["gpu"] = [devices] * ctx.nodes if ctx.nodes > 1 else devices
        if ctx.cell.precision == "amp":
            solver["mixed_precision"] = int(o["loss_scale"])
        else:
            solver.pop("mixed_precision", None)
        set_embedding_sizes(
            conf, int(o.get("vocab_size", 0)), int(o.get("deep_embedding_vec_size", 0))
        )
        path = Path(ctx.run_dir) / f"hugectr_{ctx.cell.id}.json"
        path.write_text(json.dumps(conf, indent=2))
        return path


JSON_ONLY_OPTIONS = ("vocab_size", "deep_embedding_vec_size")


def set_embedding_sizes(conf: dict[str, Any], vocab_size: int, vec_size: int) -> None:
    """DLPerf's vocabulary and embedding-width settings in a HugeCTR v2.2 W&D JSON, as its
    HugeCTR/scripts/gen_hugectr_conf_json.py wrote them: the vocabulary (the sweep's value, not
    divided by the GPUs) in both embeddings' max_vocabulary_size_per_gpu (`sparse_embedding2`:
    wide, `sparse_embedding1`: deep); the width in the deep embedding's embedding_vec_size and in
    `reshape1`'s leading_dim (width x the deep slots: the data layer's `deep_data` slot_num, 26 in
    DLPerf's template). 0 leaves the template's value."""
    if not vocab_size and not vec_size:
        return
    layers = {layer.get("name"): layer for layer in conf.get("layers", [])}

    def layer(name: str) -> dict[str, Any]:
        if name not in layers:
            raise ConfigError(
                f".options.config_template: no layer {name!r} in the HugeCTR JSON (the vocabulary "
                "and embedding options follow DLPerf's wdl_7x1024.json layer names)"
            )
        return layers[name]

    if vocab_size:
        for name in ("sparse_embedding2", "sparse_embedding1"):
            hparam = layer(name).setdefault("sparse_embedding_hparam", {})
            hparam["max_vocabulary_size_per_gpu"] = vocab_size
    if vec_size:
        layer("sparse_embedding1").setdefault("sparse_embedding_hparam", {})[
            "embedding_vec_size"
        ] = vec_size
        slots = next(
            (
                int(sparse.get("slot_num", 26))
                for sparse in layers.get("data", {}).get("sparse", [])
                if sparse.get("top") == "deep_data"
            ),
            26,
        )
        layer("reshape1")["leading_dim"] = vec_size * slots


# Release current's runner (HugeCTR.write_script): the upstream script with the cell's edits.
HUGECTR_RUNNER = """\
# dlperf: HugeCTR's {script} with this cell's batch size, GPUs, data and iterations
import sys

SCRIPT = {script!r}
EDITS = {edits!r}
with open(SCRIPT) as f:
    text = f.read()
for old, new in EDITS:
    if text.count(old) != 1:
        sys.exit(f"dlperf: {{SCRIPT}} has {{text.count(old)}} copies of {{old!r}}, not one")
    text = text.replace(old, new)
sys.argv = [SCRIPT]
exec(compile(text, SCRIPT, "exec"), {{"__name__": "__main__", "__file__": SCRIPT}})
"""
