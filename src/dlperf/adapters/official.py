"""The frameworks' own model zoos DLPerf v1.0 used: TensorFlow models r2.3, pytorch/examples,
gluon-cv, gluon-nlp, PaddlePaddle models release/1.8 and MindSpore model_zoo r1.1."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from dlperf.adapters.base import ModelSource, TaskContext
from dlperf.adapters.upstream import (
    Release,
    UpstreamAdapter,
    flag_bool,
    node_hosts,
    stop_after_prefix,
    upstream_options,
)
from dlperf.errors import ConfigError
from dlperf.matrix import Cell

STEP_GROUP = r"(?P<step>\d+)"
# tensorflow/models master as read (orbit/controller.py, official/core/config_definitions.py,
# official/vision/train.py, official/vision/configs/image_classification.py), 2023-2024.
TF_MODELS_CURRENT = "00b830c7ca641413f37e5147cf059c89f79b0e8e"
# mindspore-ai/models master as stored (2023-07-17); official/cv/ResNet last changed d70060f
# (2023-06-29), its gpu_resnet_benchmark.py 758a1fd (2023-03-01).
MS_MODELS_CURRENT = "eab643f51336dbf7d711f02d27e6516e5affee59"
# gpu_resnet_benchmark.py's MyTimeMonitor line: `epoch: [k/K] step: [s/S], loss is ...`, k the sink
MS_BENCH_STOP = r"epoch: \[(?P<step>\d+)/\d+\] step: \["
# PaddleClas release/2.5.2 (2024-09-04) and PaddleNLP as read (slm/model_zoo/bert/run_pretrain.py).
PADDLECLAS_CURRENT = "c1325704cfcd050259ad752a899b0c425e2a7b00"
PADDLENLP_CURRENT = "c502c9213fc22a210b139ec669a369ee22d0bf45"
# pytorch/examples main as stored (2025-08-25); imagenet/main.py last changed at 4206858
# (2025-07-07). Its requirements.txt asks torch>=2.6 (the torch.accelerator API).
PT_EXAMPLES_CURRENT = "77f55b912142e11fcfdf5b530231fb9c52f181e8"
# NVIDIA's release notes for 25.12: PyTorch 2.10.0a0+b4e4ee81d3, CUDA 13.1.0 (Hopper: sm_90).
NGC_PYTORCH_EXAMPLES = "nvcr.io/nvidia/pytorch:25.12-py3"


class TensorFlow2(UpstreamAdapter):
    """tensorflow/models r2.3.0: vision/image_classification ResNet-50 and nlp/bert pretraining.

    Multi-node through MultiWorkerMirroredStrategy: every node runs the script once with all its
    GPUs, the worker list and its own index. ResNet-50 logs every 100 steps (TimeHistory).
    Release `current`: both through the Model Garden's orbit trainers (official/vision/train.py,
    official/nlp/train.py), logging every steps_per_loop = 100 steps.
    """

    name: ClassVar[str] = "tensorflow2"
    display_name: ClassVar[str] = "TensorFlow 2.x"
    version: ClassVar[str] = "TensorFlow 2.3.0; tensorflow/models r2.3.0"
    models: ClassVar[dict[str, ModelSource]] = {
        "resnet50": ModelSource(
            "tensorflow/models", "official/vision/image_classification", "v2.3.0"
        ),
        "bert_base": ModelSource("tensorflow/models", "official/nlp/bert", "v2.3.0"),
    }
    entry: ClassVar[dict[str, str]] = {
        "resnet50": "classifier_trainer.py",
        "bert_base": "run_pretraining.py",
    }
    parsers: ClassVar[dict[str, str]] = {
        "resnet50": "parse_tf2_rn50",
        "bert_base": "parse_tf2_bert",
    }
    environment: ClassVar[str] = "envs/tensorflow2.yaml"
    features: ClassVar[tuple[str, ...]] = (
        "MultiWorkerMirroredStrategy (NCCL)",
        "XLA",
        "mixed_float16",
    )
    source_root: ClassVar[str] = "/workspace/tf-models"
    xla_models: ClassVar[frozenset[str]] = frozenset({"resnet50", "bert_base"})
    synthetic_models: ClassVar[frozenset[str]] = frozenset({"resnet50"})
    log_interval: ClassVar[int] = 100  # ResNet-50's TimeHistory (train.time_history.log_steps)
    options: ClassVar[dict[str, Any]] = upstream_options(
        max_batch_size={
            "resnet50": {"fp32": 128, "amp": 256},
            "bert_base": {"fp32": 32, "amp": 64},
        },
        config_file="",  # ResNet-50: "" = configs/examples/resnet/imagenet/gpu.yaml
        bert_config="",  # BERT: bert_config.json of BERT-base; required for bert_base
        seq_len=128,
        max_predictions_per_seq=20,
    )
    releases: ClassVar[dict[str, Release]] = {
        # The Model Garden's current trainers: official/vision/train.py
        # --experiment=resnet_imagenet and official/nlp/train.py --experiment=bert/pretraining,
        # both train_lib.run_experiment under orbit's Controller (`train | step: N | steps/sec: r`
        # every steps_per_loop). Their input is TFRecords only (resnet_imagenet has no synthetic
        # builder; masked_lm's input_path 'dummy' yields unbatched single examples), so data_dir
        # is needed. Multi-worker through TF_CONFIG (train.py builds the strategy from
        # runtime.distribution_strategy; the worker_hosts/task_index fields are not read there).
        "current": Release(
            version=f"TensorFlow 2.x; tensorflow/models {TF_MODELS_CURRENT[:7]} (orbit trainer)",
            environment="TensorFlow 2 with tf-models-official of the checkout (not pinned here)",
            models={
                "resnet50": ModelSource("tensorflow/models", "official/vision", TF_MODELS_CURRENT),
                "bert_base": ModelSource("tensorflow/models", "official/nlp", TF_MODELS_CURRENT),
            },
            entry={"resnet50": "train.py", "bert_base": "train.py"},
            parsers={"resnet50": "parse_tf2_orbit", "bert_base": "parse_tf2_orbit"},
            unverified="not run: no GPU here; flags and log line read from the files above",
        ),
    }

    def skip_reason(self, cell: Cell, options: dict[str, Any]) -> str | None:
        current = self.release_name(options) == "current"
        if cell.model == "bert_base" and not current and not options.get("bert_config"):
            return "TensorFlow 2.x BERT needs option bert_config (BERT-base's bert_config.json)"
        if current and not options.get("data_dir"):
            if cell.model == "bert_base":
                return (
                    "tensorflow/models' current BERT (bert/pretraining) reads TFRecords only (its "
                    "'dummy' input is not batched): set option data_dir to the pretraining "
                    "TFRecords folder"
                )
            return (
                "tensorflow/models' current ResNet-50 (resnet_imagenet) reads TFRecords only: set "
                "option data_dir to the ImageNet TFRecords folder"
            )
        return super().skip_reason(cell, options)

    def workload_env(self, ctx: TaskContext) -> dict[str, str]:
        env = {"PYTHONPATH": self.root(ctx.options)}
        if self.release_name(ctx.options) == "current" and ctx.nodes > 1:
            cluster = {"worker": self.workers(ctx).split(",")}
            task = {"type": "worker", "index": ctx.node_rank}
            env["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": task}, sort_keys=True)
        return {**env, **super().workload_env(ctx)}

    def current_args(self, ctx: TaskContext, bsz: int) -> list[str]:
        """Release current: train.py with the experiment's params overridden (the global batch,
        XLA explicitly, since resnet_imagenet and bert/pretraining turn it on, and one log line per
        log_interval)."""
        o, cell = ctx.options, ctx.cell
        runtime: dict[str, Any] = {
            "num_gpus": ctx.gpus_per_node,
            "enable_xla": cell.xla,
            "distribution_strategy": "multi_worker_mirrored" if ctx.nodes > 1 else "mirrored",
            "all_reduce_alg": "nccl",
        }
        if cell.precision == "amp":
            runtime |= {"mixed_precision_dtype": "float16", "loss_scale": "dynamic"}
        never = 10 * ctx.steps + 1000000
        global_batch = bsz * ctx.nodes * ctx.gpus_per_node
        if cell.model == "bert_base":
            # official/nlp/configs/pretraining_experiments.py: MaskedLMConfig, whose default
            # encoder (encoders.BertEncoderConfig) is BERT-base, with the next-sentence head;
            # BertPretrainDataConfig reads input_ids/segment_ids (use_v2_feature_names False),
            # the tf.Examples of create_pretraining_data.py
            experiment = "bert/pretraining"
            train_data: dict[str, Any] = {
                "input_path": f"{o['data_dir']}/*",
                "global_batch_size": global_batch,
                "seq_length": o["seq_len"],
                "max_predictions_per_seq": o["max_predictions_per_seq"],
            }
        else:
            experiment = "resnet_imagenet"
            train_data = {
                "input_path": f"{o['data_dir']}/train*",
                "global_batch_size": global_batch,
                "dtype": "float16" if cell.precision == "amp" else "float32",
            }
        trainer: dict[str, Any] = {
            "train_steps": ctx.steps,
            "steps_per_loop": self.log_interval,
            "summary_interval": self.log_interval,
            "checkpoint_interval": never,
            "validation_interval": never,
        }
        if cell.model == "bert_base":
            # bert/pretraining leaves the polynomial decay and warm-up lengths None
            # (learning_rate_config.py); these are configs/experiments/wiki_books_pretrain.yaml's
            trainer["optimizer_config"] = {
                "learning_rate": {"polynomial": {"decay_steps": 1000000}},
                "warmup": {"polynomial": {"warmup_steps": 10000}},
            }
        override = {"runtime": runtime, "task": {"train_data": train_data}, "trainer": trainer}
        return [
            f"--experiment={experiment}",
            "--mode=train",
            f"--model_dir={ctx.run_dir / f'tf2_model_node{ctx.node_rank}'}",
            f"--params_override={json.dumps(override, sort_keys=True)}",
        ]

    def workers(self, ctx: TaskContext) -> str:
        return ",".join(f"{h}:{ctx.master_port}" for h in node_hosts(ctx))

    def script_args(self, ctx: TaskContext) -> list[str]:
        o, cell = ctx.options, ctx.cell
        bsz = self.batch_size(cell, o)
        if self.release_name(o) == "current":
            return self.current_args(ctx, bsz)
        if cell.model == "resnet50":
            runtime: dict[str, Any] = {"num_gpus": ctx.gpus_per_node, "enable_xla": cell.xla}
            if cell.precision == "amp":
                runtime["loss_scale"] = "dynamic"
            if ctx.nodes > 1:
                runtime |= {
                    "distribution_strategy": "multi_worker_mirrored",
                    "worker_hosts": self.workers(ctx),
                    "task_index": ctx.node_rank,
                    "all_reduce_alg": "nccl",
                }
            override = {
                "runtime": runtime,
                "train_dataset": {
                    "batch_size": bsz,
                    "use_per_replica_batch_size": True,
                    "dtype": "float16" if cell.precision == "amp" else "float32",
                    "builder": "records" if o["data_dir"] else "synthetic",
                },
                "train": {
                    "epochs": 1,
                    "steps": ctx.steps,
                    "time_history": {"log_steps": self.log_interval},
                },
            }
            config = (
                o["config_file"]
                or f"{self.model_dir('resnet50', o)}/configs/examples/resnet/imagenet/gpu.yaml"
            )
            data = [f"--data_dir={o['data_dir']}"] if o["data_dir"] else []
            return [
                "--mode=train",
                "--model_type=resnet",
                "--dataset=imagenet",
                f"--model_dir={ctx.run_dir / f'tf2_model_node{ctx.node_rank}'}",
                *data,
                f"--config_file={config}",
                f"--params_override={json.dumps(override, sort_keys=True)}",
            ]
        world = ctx.nodes * ctx.gpus_per_node
        args = [
            f"--input_files={o['data_dir']}/*",
            f"--max_seq_length={o['seq_len']}",
            f"--max_predictions_per_seq={o['max_predictions_per_seq']}",
            f"--train_batch_size={bsz * world}",
            f"--num_steps_per_epoch={ctx.steps}",
            "--num_train_epochs=1",
            "--warmup_steps=10000",
            "--use_next_sentence_label=True",
            "--train_summary_interval=0",
            "--optimizer_type=adamw",
            f"--num_gpus={ctx.gpus_per_node}",
            "--datasets_num_private_threads=8",
            f"--dtype={'fp16' if cell.precision == 'amp' else 'fp32'}",
            f"--enable_xla={'true' if cell.xla else 'false'}",
            f"--model_dir={ctx.run_dir / f'tf2_model_node{ctx.node_rank}'}",
            f"--bert_config_file={o['bert_config']}",
        ]
        if ctx.nodes > 1:
            args += [
                "--distribution_strategy=multi_worker_mirrored",
                f"--worker_hosts={self.workers(ctx)}",
                f"--task_index={ctx.node_rank}",
                "--all_reduce_alg=nccl",
            ]
        return args


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
    parsers: ClassVar[dict[str, str]] = {"resnet50": "parse_pytorch_examples"}
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
            unverified="not run: no GPU here; flags and log line read from imagenet/main.py",
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
            "nccl",
            "--multiprocessing-distributed",
            "--world-size",
            str(ctx.nodes),
            "--rank",
            str(ctx.node_rank),
            *data,
        ]


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
    parsers: ClassVar[dict[str, str]] = {"resnet50": "parse_gluoncv_rn50"}
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
        return [
            "--mode=hybrid",
            "--model=resnet50_v1b",
            "--use-rec",
            f"--rec-train={data}/train.rec",
            f"--rec-train-idx={data}/train.idx",
            f"--rec-val={data}/val.rec",
            f"--rec-val-idx={data}/val.idx",
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


class GluonNLP(UpstreamAdapter):
    """gluon-nlp (7b7bf60) scripts/bert/run_pretraining.py BERT-base, through `horovodrun` from node 0.

    The script has no gradient clipping, so it runs only as variant `noclip`. DLPerf patched it
    (no eval, stop at num_steps, no `round_to`); use such a checkout. `--total_batch_size` is global.
    """

    name: ClassVar[str] = "mxnet_gluonnlp"
    display_name: ClassVar[str] = "MXNet"
    version: ClassVar[str] = "MXNet 1.6.0; gluon-nlp 7b7bf60"
    launch: ClassVar[str] = "horovodrun"
    models: ClassVar[dict[str, ModelSource]] = {
        "bert_base": ModelSource(
            "dmlc/gluon-nlp", "scripts/bert", "7b7bf60259e28b3bf1f4d70569a7e5c18e2f4b3e"
        ),
    }
    entry: ClassVar[dict[str, str]] = {"bert_base": "run_pretraining.py"}
    parsers: ClassVar[dict[str, str]] = {"bert_base": "parse_gluonnlp_bert"}
    environment: ClassVar[str] = "envs/mxnet_gluonnlp.yaml"
    features: ClassVar[tuple[str, ...]] = ("Horovod", "float16", "no gradient clipping")
    source_root: ClassVar[str] = "/workspace/gluon-nlp"
    only_variant: ClassVar[dict[str, str]] = {"bert_base": "noclip"}
    options: ClassVar[dict[str, Any]] = upstream_options(
        mpi=True,
        max_batch_size={"bert_base": {"fp32": 64, "amp": 128}},
        seq_len=128,
        max_predictions_per_seq=20,
    )

    def script_args(self, ctx: TaskContext) -> list[str]:
        o, cell = ctx.options, ctx.cell
        total = self.batch_size(cell, o) * ctx.nodes * ctx.gpus_per_node
        return [
            "--model",
            "bert_12_768_12",
            "--dtype",
            "float16" if cell.precision == "amp" else "float32",
            "--warmup_ratio",
            "1",
            "--comm_backend",
            "horovod",
            "--total_batch_size",
            str(total),
            "--total_batch_size_eval",
            str(total),
            "--accumulate",
            "1",
            "--lr",
            "1e-4",
            "--max_seq_length",
            str(o["seq_len"]),
            "--max_predictions_per_seq",
            str(o["max_predictions_per_seq"]),
            "--num_steps",
            str(ctx.steps),
            "--log_interval",
            "1",
            "--ckpt_interval",
            "1000000",
            "--ckpt_dir",
            str(ctx.run_dir / "gluonnlp_ckpt"),
            "--data",
            f"{o['data_dir']}/*",
        ]


class Paddle(UpstreamAdapter):
    """PaddlePaddle models release/1.8: PaddleCV image_classification and PaddleNLP BERT.

    `paddle.distributed.launch` on every node, each worker's log in its own file in the run folder.
    PaddleCV's `--batch_size` is a node's (per device x GPUs); PaddleNLP's counts tokens
    (per device x seq_len). Release `current`: PaddleClas release/2.5.2's tools/train.py and
    PaddleNLP's slm/model_zoo/bert/run_pretrain.py under Paddle 2.x's launcher (see `releases`).
    """

    name: ClassVar[str] = "paddle"
    display_name: ClassVar[str] = "PaddlePaddle"
    version: ClassVar[str] = "PaddlePaddle 1.8.3.post107; PaddlePaddle/models release/1.8"
    launch: ClassVar[str] = "paddle"
    models: ClassVar[dict[str, ModelSource]] = {
        "resnet50": ModelSource(
            "PaddlePaddle/models", "PaddleCV/image_classification", "release/1.8"
        ),
        "bert_base": ModelSource(
            "PaddlePaddle/models", "PaddleNLP/pretrain_language_models/BERT", "release/1.8"
        ),
    }
    entry: ClassVar[dict[str, str]] = {"resnet50": "train.py", "bert_base": "train.py"}
    parsers: ClassVar[dict[str, str]] = {
        "resnet50": "parse_paddle_cv",
        "bert_base": "parse_paddle_nlp_bert",
    }
    environment: ClassVar[str] = "envs/paddle.yaml"
    features: ClassVar[tuple[str, ...]] = ("DALI (ResNet-50, option dali)", "NCCL", "AMP")
    source_root: ClassVar[str] = "/workspace/paddle-models"
    options: ClassVar[dict[str, Any]] = upstream_options(
        max_batch_size={
            "resnet50": {"fp32": 128, "amp": 196},
            "bert_base": {"fp32": 96, "amp": 160},
        },
        dali=False,  # ResNet-50: DALI preprocessing (DLPerf's AMP runs)
        reader_thread=8,
        total_images=1281167,
        bert_config="",  # "" = data/demo_config/bert_config.json in the BERT folder
        vocab="",  # "" = data/demo_config/vocab.txt in the BERT folder
        seq_len=128,
        # release current, BERT: paddlenlp's name of the model (config and tokenizer; a name it
        # downloads unless it is cached, or a local folder) and masked tokens per sequence
        model_name_or_path="bert-base-uncased",
        max_predictions_per_seq=20,
    )
    releases: ClassVar[dict[str, Release]] = {
        # PaddleClas' dynamic-graph trainer (tools/train.py -c <yaml> -o key=value ...) and
        # PaddleNLP's BERT pretraining on NVIDIA-style hdf5 shards, both under Paddle 2.x's
        # paddle.distributed.launch. Each checkout lies in source_root under its repository's name.
        "current": Release(
            version=(
                f"PaddlePaddle 2.6.1; PaddleClas release/2.5.2 ({PADDLECLAS_CURRENT[:7]}), "
                f"PaddleNLP {PADDLENLP_CURRENT[:7]}"
            ),
            environment="paddlepaddle/paddle:2.6.1-gpu-cuda12.0-cudnn8.9-trt8.6",
            models={
                "resnet50": ModelSource("PaddlePaddle/PaddleClas", "", PADDLECLAS_CURRENT),
                "bert_base": ModelSource(
                    "PaddlePaddle/PaddleNLP", "slm/model_zoo/bert", PADDLENLP_CURRENT
                ),
            },
            entry={"resnet50": "tools/train.py", "bert_base": "run_pretrain.py"},
            parsers={"resnet50": "parse_paddleclas", "bert_base": "parse_paddlenlp_bert"},
            launch="paddle_collective",
            source_root="/workspace",
            unverified=(
                "not run: no GPU or container here; flags and log lines read from the files named "
                "in docs/upstream-releases.md"
            ),
        ),
    }

    def model_dir(self, model: str, options: dict[str, Any]) -> str:
        """Release current: <source_root>/<repository name>/<folder> (two repositories)."""
        if self.release_name(options) != "current":
            return super().model_dir(model, options)
        source = self.source_of(model, options)
        parts = [self.root(options).rstrip("/"), source.repo.split("/")[1], source.path]
        return "/".join(p for p in parts if p)

    def skip_reason(self, cell: Cell, options: dict[str, Any]) -> str | None:
        if self.release_name(options) == "current" and not options.get("data_dir"):
            what = (
                "ImageNet laid out for PaddleClas (train_list.txt and the images it names)"
                if cell.model == "resnet50"
                else "the hdf5 pretraining shards (file names containing `train`)"
            )
            return (
                f"PaddlePaddle release current reads real data only: set option data_dir to {what}"
            )
        return super().skip_reason(cell, options)

    def workload_env(self, ctx: TaskContext) -> dict[str, str]:
        if self.release_name(ctx.options) == "current":
            env = {}
            if ctx.cell.model == "bert_base":  # run_pretrain.py imports paddlenlp
                env["PYTHONPATH"] = f"{self.root(ctx.options).rstrip('/')}/PaddleNLP"
            return {**env, **super().workload_env(ctx)}
        fraction = "0.8" if ctx.options.get("dali") else "0.98"  # DALI needs room beside Paddle
        return {"FLAGS_fraction_of_gpu_memory_to_use": fraction, **super().workload_env(ctx)}

    def current_args(self, ctx: TaskContext, bsz: int) -> list[str]:
        """Release current. ResNet-50: PaddleClas' ResNet50 config (its AMP O1 one for amp)
        overridden to train `steps` iterations in one epoch, logging every iteration on every
        rank, with no evaluation or pretrained weights. BERT: run_pretrain.py's flags."""
        o, cell = ctx.options, ctx.cell
        amp = cell.precision == "amp"
        if cell.model == "resnet50":
            configs = f"{self.model_dir('resnet50', o)}/ppcls/configs/ImageNet/ResNet"
            config = f"{configs}/ResNet50_amp_O1.yaml" if amp else f"{configs}/ResNet50.yaml"
            ranks = ",".join(str(r) for r in range(ctx.nodes * ctx.gpus_per_node))
            data = str(o["data_dir"]).rstrip("/")
            overrides = {
                "Global.epochs": 1,
                "Global.iter_per_epoch": ctx.steps,
                "Global.print_batch_step": 1,
                "Global.log_ranks": ranks,
                "Global.eval_during_train": False,
                "Global.save_interval": 1000000,
                "Global.output_dir": ctx.run_dir / f"paddleclas_output_node{ctx.node_rank}",
                "Global.use_dali": flag_bool(o["dali"]),
                "Arch.pretrained": False,
                "DataLoader.Train.dataset.image_root": data,
                "DataLoader.Train.dataset.cls_label_path": f"{data}/train_list.txt",
                "DataLoader.Train.sampler.batch_size": bsz,
                "DataLoader.Train.loader.num_workers": o["reader_thread"],
            }
            args = ["-c", config]
            for key, value in overrides.items():
                args += ["-o", f"{key}={value}"]
            return args
        return [
            "--model_type=bert",
            f"--model_name_or_path={o['model_name_or_path']}",
            f"--input_dir={o['data_dir']}",
            f"--output_dir={ctx.run_dir / f'paddlenlp_output_node{ctx.node_rank}'}",
            f"--max_predictions_per_seq={o['max_predictions_per_seq']}",
            f"--batch_size={bsz}",
            "--learning_rate=1e-4",
            "--weight_decay=0.01",
            "--warmup_steps=0",
            f"--max_steps={ctx.steps}",
            "--logging_steps=1",
            "--save_steps=1000000",
            "--device=gpu",
            f"--use_amp={str(amp).lower()}",  # paddlenlp strtobool
            *(["--amp_level=O1"] if amp else []),
        ]

    def script_args(self, ctx: TaskContext) -> list[str]:
        o, cell = ctx.options, ctx.cell
        bsz = self.batch_size(cell, o)
        if self.release_name(o) == "current":
            return self.current_args(ctx, bsz)
        amp = cell.precision == "amp"
        if cell.model == "resnet50":
            args = [
                f"--data_dir={o['data_dir']}",
                f"--total_images={o['total_images']}",
                "--class_dim=1000",
                "--validate=False",
                f"--batch_size={bsz * ctx.gpus_per_node}",
                "--image_shape",
                "3",
                "224",
                "224",
                "--print_step=1",
                "--save_step=1000000",
                "--lr_strategy=piecewise_decay",
                "--momentum_rate=0.875",
                f"--max_iter={ctx.steps}",
                "--model=ResNet50",
                f"--model_save_dir={ctx.run_dir / f'paddle_output_node{ctx.node_rank}'}",
                "--l2_decay=0.000030518",
                "--warm_up_epochs=1",
                "--use_mixup=False",
                "--use_label_smoothing=True",
                "--label_smoothing_epsilon=0.1",
                f"--reader_thread={o['reader_thread']}",
                f"--use_dali={flag_bool(o['dali'])}",
            ]
            if amp:
                args += [
                    "--use_fp16=True",
                    "--scale_loss=128.0",
                    "--use_dynamic_loss_scaling=True",
                    "--data_format=NHWC",
                ]
            return args
        folder = self.model_dir("bert_base", o)
        devices = ctx.nodes * ctx.gpus_per_node
        return [
            f"--is_distributed={'true' if devices > 1 else 'false'}",
            "--use_cuda=true",
            "--use_fast_executor=true",
            "--weight_sharing=true",
            f"--batch_size={bsz * int(o['seq_len'])}",
            f"--data_dir={o['data_dir']}",
            f"--validation_set_dir={o['data_dir']}",
            f"--bert_config_path={o['bert_config'] or folder + '/data/demo_config/bert_config.json'}",
            f"--vocab_path={o['vocab'] or folder + '/data/demo_config/vocab.txt'}",
            "--generate_neg_sample=true",
            "--save_steps=1000000",
            "--learning_rate=1e-4",
            "--weight_decay=0.01",
            f"--warmup_steps={ctx.steps}",
            f"--num_train_steps={ctx.steps}",
            f"--max_seq_len={o['seq_len']}",
            "--skip_steps=1",
            "--validation_steps=1000000",
            f"--use_fp16={'true' if amp else 'false'}",
            "--verbose=true",
            f"--checkpoints={ctx.run_dir / f'paddle_checkpoints_node{ctx.node_rank}'}",
        ]


class MindSpore(UpstreamAdapter):
    """MindSpore model_zoo r1.1 ResNet-50 and BERT-base on GPU, `mpirun` from node 0.

    DLPerf patched ResNet's train.py to take --batch_size, --train_steps, --data_sink_steps and
    --dtype; use such a checkout. With data_sink_steps=1 each sink "epoch" is one step.
    XLA maps to MindSpore's graph-kernel fusion (BERT's --enable_graph_kernel). Release current
    (mindspore-ai/models): ResNet-50's GPU benchmark script and BERT's run_pretrain.py, whose
    graph-kernel fusion is always on and whose BERT-base computes in float16 (AMP with XLA only).
    """

    name: ClassVar[str] = "mindspore"
    display_name: ClassVar[str] = "MindSpore"
    version: ClassVar[str] = "MindSpore 1.1.0; model_zoo r1.1"
    launch: ClassVar[str] = "mpirun"
    models: ClassVar[dict[str, ModelSource]] = {
        "resnet50": ModelSource("mindspore/mindspore", "model_zoo/official/cv/resnet", "r1.1"),
        "bert_base": ModelSource("mindspore/mindspore", "model_zoo/official/nlp/bert", "r1.1"),
    }
    entry: ClassVar[dict[str, str]] = {"resnet50": "train.py", "bert_base": "run_pretrain.py"}
    parsers: ClassVar[dict[str, str]] = {
        "resnet50": "parse_mindspore",
        "bert_base": "parse_mindspore",
    }
    environment: ClassVar[str] = "mindspore/mindspore-gpu:1.1.0"
    features: ClassVar[tuple[str, ...]] = (
        "MPI/NCCL",
        "AMP (O2)",
        "graph kernel fusion as XLA (BERT)",
    )
    source_root: ClassVar[str] = "/workspace/mindspore"
    xla_models: ClassVar[frozenset[str]] = frozenset({"bert_base"})
    options: ClassVar[dict[str, Any]] = upstream_options(
        mpi=True,
        max_batch_size={
            "resnet50": {"fp32": 128, "amp": 256},
            "bert_base": {"fp32": 32, "amp": 64},
        },
    )

    releases: ClassVar[dict[str, Release]] = {
        # The models repo's own GPU ResNet-50 benchmark (official/cv/ResNet/gpu_resnet_benchmark.py
        # with config/resnet_benchmark_GPU.yaml, mpirun as scripts/run_gpu_resnet_benchmark.sh):
        # train.py sinks a whole epoch per callback on GPU and has no step limit, the benchmark
        # logs every sink of print_per_steps. It has no step limit either: stopped once the window
        # is logged. ImageFolderDataset of JPEGs only (no synthetic input).
        # BERT: official/nlp/Bert/run_pretrain.py with pretrain_config.yaml, under mpirun as
        # scripts/run_distributed_pretrain_for_gpu.sh runs it; --train_steps caps the sinks. Its
        # BERT-base computes in float16 (the yaml's base_net_cfg.compute_type, not a flag) and it
        # turns graph kernel fusion on for every GPU run: AMP with XLA only (see check_case).
        "current": Release(
            version=f"MindSpore 2.x (GPU build); mindspore-ai/models {MS_MODELS_CURRENT[:7]}",
            environment="MindSpore 2.x GPU build (CUDA 11.x; not pinned, no Hopper build verified)",
            models={
                "resnet50": ModelSource(
                    "mindspore-ai/models", "official/cv/ResNet", MS_MODELS_CURRENT
                ),
                "bert_base": ModelSource(
                    "mindspore-ai/models", "official/nlp/Bert", MS_MODELS_CURRENT
                ),
            },
            entry={"resnet50": "gpu_resnet_benchmark.py", "bert_base": "run_pretrain.py"},
            parsers={
                "resnet50": "parse_mindspore_benchmark",
                "bert_base": "parse_mindspore_bert_current",
            },
            source_root="/workspace/models",
            unverified="not run: no GPU here; flags and log lines read from the files named in "
            "docs/upstream-releases.md",
        ),
    }

    def check_case(self, case: dict[str, Any]) -> None:
        """Release current's BERT runs as run_pretrain.py fixes it: float16 compute (the yaml's
        base_net_cfg.compute_type, which no flag reaches) and graph kernel fusion, which
        _set_graph_kernel_context turns on for every GPU run (DLPerf maps XLA to it)."""
        super().check_case(case)
        if case["model"] != "bert_base":
            return
        for precision in case.get("precision", ["fp32"]):
            options = {
                **case.get("options", {}),
                **case.get("precision_options", {}).get(precision, {}),
            }
            if self.release_name(options) != "current":
                continue
            if precision != "amp":
                raise ConfigError(
                    f".precision: {self.name} release current runs bert_base in amp only, not "
                    f"{precision} (run_pretrain.py computes in the yaml's float16; no flag sets it)"
                )
            if not all(case.get("xla", [False])):
                raise ConfigError(
                    f".xla: {self.name} release current runs bert_base with XLA on only: "
                    "run_pretrain.py turns graph kernel fusion on for every GPU run"
                )

    def skip_reason(self, cell: Cell, options: dict[str, Any]) -> str | None:
        if self.release_name(options) == "current" and not options.get("data_dir"):
            if cell.model == "bert_base":
                return (
                    "MindSpore's current BERT pretraining reads TFRecord shards only: set option "
                    "data_dir to their folder (file names containing `tfrecord`)"
                )
            return (
                "MindSpore's current GPU ResNet-50 benchmark reads an ImageFolder of JPEGs only: "
                "set option data_dir to ImageNet's train folder"
            )
        return super().skip_reason(cell, options)

    def command(self, ctx: TaskContext) -> list[str]:
        argv = super().command(ctx)
        current = self.release_name(ctx.options) == "current"
        if not current or ctx.cell.model != "resnet50" or ctx.node_rank > 0:
            return argv  # scripts with a step limit stop themselves; other nodes idle (mpirun)
        return stop_after_prefix(MS_BENCH_STOP, ctx.steps, self.progress_lines(ctx)) + argv

    def current_rn50_args(self, ctx: TaskContext, bsz: int, dtype: str) -> list[str]:
        """Release current: gpu_resnet_benchmark.py; config keys of resnet_benchmark_GPU.yaml are
        flags (src/model_utils/config.py; booleans through ast.literal_eval). One sink per step,
        as DLPerf v1.0's data_sink_steps=1; the batch is per device."""
        distributed = ctx.nodes * ctx.gpus_per_node > 1
        return [
            f"--config_path={self.model_dir('resnet50', ctx.options)}/config/resnet_benchmark_GPU.yaml",
            f"--data_path={ctx.options['data_dir']}",
            "--device_target=GPU",
            f"--run_distribute={distributed}",
            f"--batch_size={bsz}",
            f"--dtype={dtype}",
            "--mode_name=GRAPH",
            "--print_per_steps=1",
            "--save_ckpt=False",
            f"--output_dir={ctx.run_dir / f'mindspore_output_node{ctx.node_rank}'}",
        ]

    def current_bert_args(self, ctx: TaskContext, bsz: int) -> list[str]:
        """Release current: run_pretrain.py; keys of pretrain_config.yaml are flags (string
        switches "true"/"false"), as scripts/run_distributed_pretrain_for_gpu.sh passes them.
        The batch is `base_batch_size`: for bert_network base, src/model_utils/config.py
        overwrites `batch_size` with it. One step per sink, as DLPerf v1.0 ran MindSpore.
        AdamWeightDecay as DLPerf v1.0's patched script (and the README's GPU figures) used: on GPU
        with loss scale it takes the script's AdamWeightDecayForBert path. TFRecords, as DLPerf
        v1.0's data (`--dataset_format=mindrecord` in extra_args for MindRecord files)."""
        o = ctx.options
        distributed = ctx.nodes * ctx.gpus_per_node > 1
        return [
            f"--config_path={self.model_dir('bert_base', o)}/pretrain_config.yaml",
            "--device_target=GPU",
            f"--distribute={'true' if distributed else 'false'}",
            "--bert_network=base",
            f"--base_batch_size={bsz}",
            "--optimizer=AdamWeightDecay",
            "--enable_lossscale=true",
            "--enable_save_ckpt=false",
            "--enable_data_sink=true",
            "--data_sink_steps=1",
            f"--train_steps={ctx.steps}",
            f"--data_dir={o['data_dir']}",
            "--dataset_format=tfrecord",
        ]

    def script_args(self, ctx: TaskContext) -> list[str]:
        o, cell = ctx.options, ctx.cell
        bsz = self.batch_size(cell, o)
        dtype = "fp16" if cell.precision == "amp" else "fp32"
        distributed = ctx.nodes * ctx.gpus_per_node > 1
        if cell.model == "resnet50" and self.release_name(o) == "current":
            return self.current_rn50_args(ctx, bsz, dtype)
        if self.release_name(o) == "current":
            return self.current_bert_args(ctx, bsz)
        if cell.model == "resnet50":
            return [
                "--net=resnet50",
                "--dataset=imagenet2012",
                f"--run_distribute={flag_bool(distributed)}",
                "--device_target=GPU",
                "--data_sink_steps=1",
                f"--train_steps={ctx.steps}",
                f"--dataset_path={o['data_dir']}",
                f"--batch_size={bsz}",
                f"--dtype={dtype}",
                f"--device_num={ctx.gpus_per_node}",
            ]
        return [
            "--device_target=GPU",
            f"--distribute={'true' if distributed else 'false'}",
            "--epoch_size=1",
            "--enable_save_ckpt=false",
            f"--enable_lossscale={'true' if cell.precision == 'amp' else 'false'}",
            "--enable_data_sink=true",
            "--data_sink_steps=1",
            f"--train_steps={ctx.steps}",
            f"--data_dir={o['data_dir']}",
            f"--enable_graph_kernel={'true' if cell.xla else 'false'}",
            f"--batch_size={bsz}",
            f"--dtype={dtype}",
            "--schema_dir=",
        ]
