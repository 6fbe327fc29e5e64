"""PaddlePaddle's model zoo: PaddlePaddle/models release/1.8 (PaddleCV ResNet-50, PaddleNLP BERT)
as DLPerf v1.0 ran them, and release `current`: PaddleClas release/2.5.2 and PaddleNLP's BERT.
"""

from __future__ import annotations

from typing import Any, ClassVar

from dlperf.adapters.base import ModelSource, TaskContext
from dlperf.adapters.hosts import node_hosts
from dlperf.adapters.launchers import stop_after_prefix
from dlperf.adapters.releases import Evidence, Ran, Release
from dlperf.adapters.upstream import UpstreamAdapter, flag_bool, upstream_options
from dlperf.matrix import Cell
from dlperf.parse.upstream import Parser
from dlperf.parse.upstream.paddle import (
    parse_paddle_cv,
    parse_paddle_nlp_bert,
    parse_paddleclas,
    parse_paddleclas_v24,
    parse_paddlenlp_bert,
)

# PaddleClas release/2.5.2 (2024-09-04) and PaddleNLP as read (slm/model_zoo/bert/run_pretrain.py).
PADDLECLAS_CURRENT = "c1325704cfcd050259ad752a899b0c425e2a7b00"
PADDLENLP_CURRENT = "c502c9213fc22a210b139ec669a369ee22d0bf45"
# PaddleClas tag v2.4.0 (2022-07-07), whose ppcls the paddleclas 2.4.2 wheel carries unchanged.
PADDLECLAS_V24 = "3a28ee29003621ecdb9fd4bb8633a681fb1f8ddf"
# release/1.8 PaddleCV's scripts/train/ResNet50_fp16.sh (and DLPerf's AMP runs) export these
RESNET50_FP16_FLAGS = {
    "FLAGS_conv_workspace_size_limit": "4000",  # MB
    "FLAGS_cudnn_exhaustive_search": "1",
    "FLAGS_cudnn_batchnorm_spatial_persistent": "1",
}
PACKAGE = "package"  # the release of PaddleClas' trainer as the paddleclas wheel ships it
# v2.4's log line (0-based iteration), for stopping it: it has no iteration limit of its own
CLAS24_STOP = r"\[Train\]\[Epoch \d+/\d+\]\[Iter: (?P<step>\d+)/"


class Paddle(UpstreamAdapter):
    """PaddlePaddle models release/1.8: PaddleCV image_classification and PaddleNLP BERT.

    PaddleCV: `paddle.distributed.launch` on every node, each worker's log in its own file in the
    run folder. PaddleNLP BERT: train.py once per node over the node's GPUs, the nodes named in
    `worker_endpoints`. PaddleCV's `--batch_size` is a node's (per device x GPUs); PaddleNLP's
    counts tokens (per device x seq_len). Release `current`: PaddleClas release/2.5.2's tools/train.py and
    PaddleNLP's slm/model_zoo/bert/run_pretrain.py under Paddle 2.x's launcher (see `releases`).
    """

    name: ClassVar[str] = "paddle"
    display_name: ClassVar[str] = "PaddlePaddle"
    version: ClassVar[str] = "PaddlePaddle 1.8.3.post107; PaddlePaddle/models release/1.8"
    launch: ClassVar[str] = "paddle"
    # release/1.8's BERT train.py is one process per node driving its node's GPUs, its nodes
    # joined by the `worker_endpoints` / `current_endpoint` variables (README.md, DLPerf's
    # multi_node_train.sh), which paddle.distributed.launch does not set
    model_launch: ClassVar[dict[str, str]] = {"bert_base": "native"}
    models: ClassVar[dict[str, ModelSource]] = {
        "resnet50": ModelSource(
            "PaddlePaddle/models", "PaddleCV/image_classification", "release/1.8"
        ),
        "bert_base": ModelSource(
            "PaddlePaddle/models", "PaddleNLP/pretrain_language_models/BERT", "release/1.8"
        ),
    }
    entry: ClassVar[dict[str, str]] = {"resnet50": "train.py", "bert_base": "train.py"}
    parsers: ClassVar[dict[str, Parser]] = {
        "resnet50": parse_paddle_cv,
        "bert_base": parse_paddle_nlp_bert,
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
            parsers={"resnet50": parse_paddleclas, "bert_base": parse_paddlenlp_bert},
            launch="paddle_collective",
            source_root="/workspace",
            unverified=(
                "not run: no GPU or container here; flags and log lines read from the files named "
                "in docs/upstream-releases.md"
            ),
        ),
        # PaddleClas' trainer as PyPI's paddleclas 2.4.2 ships it (tag v2.4.0's ppcls; no later
        # wheel has the trainer), in envs/paddleclas.txt, its checkout laid out from the package by
        # `python -m dlperf.upstream_data.paddleclas checkout <source_root> <python>`. Release
        # current's command; v2.4 ignores Global.iter_per_epoch and Global.log_ranks, so rank 0
        # alone logs (one-device layouts only) and the run is stopped once it logged the last
        # iteration. Paddle 2.6 runs v2.4's `loss.numpy()[0]` with FLAGS_set_to_1d=1 only.
        PACKAGE: Release(
            version=f"PaddlePaddle 2.6.2; paddleclas 2.4.2 (PaddleClas v2.4.0, {PADDLECLAS_V24[:7]})",
            environment="envs/paddleclas.txt",
            models={"resnet50": ModelSource("PaddlePaddle/PaddleClas", "", PADDLECLAS_V24)},
            entry={"resnet50": "tools/train.py"},
            parsers={"resnet50": parse_paddleclas_v24},
            launch="paddle_collective",
            source_root="/workspace",
            evidence=Evidence(
                Ran.CI,
                "tests/test_paddleclas_upstream.py, on a CPU (Paddle 2.6.2); never on a GPU",
            ),
        ),
    }

    def model_dir(self, model: str, options: dict[str, Any]) -> str:
        """Releases current and package: <source_root>/<repository name>/<folder>."""
        if self.release(options) is None:
            return super().model_dir(model, options)
        source = self.source_of(model, options)
        parts = [self.root(options).rstrip("/"), source.repo.split("/")[1], source.path]
        return "/".join(p for p in parts if p)

    def skip_reason(self, cell: Cell, options: dict[str, Any]) -> str | None:
        name = self.release_name(options)
        if name == PACKAGE and cell.layout.devices > 1:
            return (
                "PaddleClas v2.4 (release package) logs rank 0 only (it has no Global.log_ranks): "
                "run one-device layouts"
            )
        if self.release(options) is not None and not options.get("data_dir"):
            what = (
                "ImageNet laid out for PaddleClas (train_list.txt and the images it names)"
                if cell.model == "resnet50"
                else "the hdf5 pretraining shards (file names containing `train`)"
            )
            return (
                f"PaddlePaddle release {name} reads real data only: set option data_dir to {what}"
            )
        return super().skip_reason(cell, options)

    def workload_env(self, ctx: TaskContext) -> dict[str, str]:
        if self.release(ctx.options) is not None:
            env = {}
            if ctx.cell.model == "bert_base":  # run_pretrain.py imports paddlenlp
                env["PYTHONPATH"] = f"{self.root(ctx.options).rstrip('/')}/PaddleNLP"
            if self.release_name(ctx.options) == PACKAGE:  # v2.4's `loss.numpy()[0]`, a 0-D
                env["FLAGS_set_to_1d"] = "1"  # tensor in Paddle 2.6: this flag makes it 1-D
            return {**env, **super().workload_env(ctx)}
        if ctx.cell.model == "bert_base":
            return {**bert_endpoints(ctx), **super().workload_env(ctx)}
        fraction = "0.8" if ctx.options.get("dali") else "0.98"  # DALI needs room beside Paddle
        env = {"FLAGS_fraction_of_gpu_memory_to_use": fraction}
        if ctx.cell.precision == "amp":
            env |= RESNET50_FP16_FLAGS
        return {**env, **super().workload_env(ctx)}

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
            if ctx.device == "cpu":  # the configs say gpu, which a CPU build refuses
                overrides["Global.device"] = "cpu"
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

    def command(self, ctx: TaskContext) -> list[str]:
        """Release package: stopped once rank 0 (whose output the launcher copies to its own)
        logged the last iteration, 0-based; the others as `UpstreamAdapter.command`."""
        argv = super().command(ctx)
        if self.release_name(ctx.options) != PACKAGE:
            return argv
        return stop_after_prefix(CLAS24_STOP, ctx.steps - 1, 1) + argv

    def script_args(self, ctx: TaskContext) -> list[str]:
        o, cell = ctx.options, ctx.cell
        bsz = self.batch_size(cell, o)
        if self.release(o) is not None:
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
            if amp:  # as scripts/train/ResNet50_fp16.sh and DLPerf's single_node_train.sh
                args += [
                    "--use_fp16=True",
                    "--scale_loss=128.0",
                    "--use_dynamic_loss_scaling=True",
                    "--data_format=NHWC",
                    "--fuse_elewise_add_act_ops=True",
                    "--fuse_bn_act_ops=True",
                ]
            return args
        folder = self.model_dir("bert_base", o)
        return [
            f"--is_distributed={'true' if ctx.nodes > 1 else 'false'}",
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
            # DLPerf's scripts start the dynamic loss scale at 128 (train.py's default, 2^32,
            # overflows and skips the first ~100 updates at the 0.8 decrease per 2 overflows)
            *(["--use_dynamic_loss_scaling=true", "--init_loss_scaling=128.0"] if amp else []),
            "--verbose=true",
            f"--checkpoints={ctx.run_dir / f'paddle_checkpoints_node{ctx.node_rank}'}",
        ]


def bert_endpoints(ctx: TaskContext) -> dict[str, str]:
    """release/1.8 BERT's trainers, one per node (train.py reads them with --is_distributed):
    every node's `host:port` and this node's, as its README and DLPerf's scripts export them."""
    if ctx.nodes == 1:
        return {}
    endpoints = [f"{host}:{ctx.master_port}" for host in node_hosts(ctx)]
    return {
        "worker_endpoints": ",".join(endpoints),
        "current_endpoint": endpoints[ctx.node_rank],
    }
