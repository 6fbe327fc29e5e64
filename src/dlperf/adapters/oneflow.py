"""OneFlow's own benchmark scripts: OneFlow-Benchmark CNNs and BERT, and Wide & Deep (OneFlow-GPT:
dlperf.adapters.oneflow_gpt).

OneFlow (lazy mode, v0.2-v0.4) spans nodes itself: every node runs the same script with the node
list (`--node_ips`), one process per node driving all of its GPUs.

Release `current` (option `release`, see dlperf.adapters.upstream), one process per GPU through
`oneflow.distributed.launch` and OneFlow's eager/graph API: `oneflow_wdl` runs the Wide & Deep of
Oneflow-Inc/models, `oneflow` its Vision/classification/image/resnet50 (no BERT: the models repo's
NLP/BERT calls `to_consistent`, which OneFlow removed in 2022). docs/upstream-releases.md says what
was read and what is not verified.
"""

from __future__ import annotations

from typing import Any, ClassVar

from dlperf.adapters.base import ModelSource, TaskContext
from dlperf.adapters.hosts import node_hosts
from dlperf.adapters.releases import Release
from dlperf.adapters.upstream import UpstreamAdapter, upstream_options
from dlperf.parse.upstream import Parser
from dlperf.parse.upstream.oneflow import (
    parse_oneflow_bert,
    parse_oneflow_cnn,
    parse_oneflow_cnn_current,
    parse_oneflow_wdl,
    parse_oneflow_wdl_current,
)

ONEFLOW_BENCHMARK = "Oneflow-Inc/OneFlow-Benchmark"
ONEFLOW_MODELS = "Oneflow-Inc/models"
# Oneflow-Inc/models main as read (November 2022); RecommenderSystems/wide_and_deep last changed at
# 87d4561 (March 2022), Vision/classification/image/resnet50 at d87a829 (February 2022).
MODELS_CURRENT = "fc7cbf8da9b2ee21fa0e9613dd0668c3b45dad4d"
# ResNet-50 in FP16 as OneFlow-Benchmark v0.2.0's own Classification/cnns/benchmark.sh runs it and
# DLPerf v1.0's AMP figures ran it (DLPerf 2f47046 OneFlow/scripts/rn50_train.sh, "oneflow 0.2
# perf"): NHWC with the input padded to 4 channels, fused BN ops, NCCL fusion, GPU decoding.
# `--channel_last` needs its value: given bare, its argparse const is False (cnns/config.py).
RN50_AMP_FLAGS = (
    "--channel_last=True",
    "--pad_output",
    "--fuse_bn_relu=True",
    "--fuse_bn_add_relu=True",
    "--nccl_fusion_threshold_mb=16",
    "--nccl_fusion_max_ops=24",
    "--gpu_image_decoder=True",
)
RN50_AMP_ENV = {"NCCL_LAUNCH_MODE": "PARALLEL"}  # exported by both scripts


class OneFlowBenchmark(UpstreamAdapter):
    """OneFlow-Benchmark v0.2.0 (DLPerf v1.0): Classification/cnns ResNet-50 and LanguageModeling/BERT.

    Variant `noclip` (BERT): OneFlow-Benchmark has no flag for it; DLPerf removed
    `clip_conf` (clip_by_global_norm) from the script, so a `noclip` case points option `script`
    at such a patched copy.
    """

    name: ClassVar[str] = "oneflow"
    display_name: ClassVar[str] = "OneFlow"
    version: ClassVar[str] = "OneFlow 0.2.0; OneFlow-Benchmark v0.2.0"
    models: ClassVar[dict[str, ModelSource]] = {
        "resnet50": ModelSource(ONEFLOW_BENCHMARK, "Classification/cnns", "v0.2.0"),
        "bert_base": ModelSource(ONEFLOW_BENCHMARK, "LanguageModeling/BERT", "v0.2.0"),
    }
    entry: ClassVar[dict[str, str]] = {
        "resnet50": "of_cnn_train_val.py",
        "bert_base": "run_pretraining.py",
    }
    parsers: ClassVar[dict[str, Parser]] = {
        "resnet50": parse_oneflow_cnn,
        "bert_base": parse_oneflow_bert,
    }
    environment: ClassVar[str] = "envs/oneflow.yaml"
    features: ClassVar[tuple[str, ...]] = (
        "AMP (--use_fp16)",
        "multi-node by --node_ips (no Horovod, no DALI)",
    )
    source_root: ClassVar[str] = "/workspace/OneFlow-Benchmark"
    synthetic_models: ClassVar[frozenset[str]] = frozenset({"resnet50"})
    variants: ClassVar[dict[str, tuple[str, ...]]] = {"bert_base": ("noclip",)}
    options: ClassVar[dict[str, Any]] = upstream_options(
        max_batch_size={
            "resnet50": {"fp32": 128, "amp": 256},
            "bert_base": {"fp32": 96, "amp": 160},
        },
        data_part_num=32,  # OFRecord part files in data_dir
        seq_len=128,
        max_predictions_per_seq=20,
    )
    releases: ClassVar[dict[str, Release]] = {
        # Oneflow-Inc/models Vision/classification/image/resnet50/train.py (flags: config.py): one
        # process per GPU, every rank printing its own progress line (utils/logger.py)
        # `[rank:r] [train], epoch: e/E, iter: i/n, loss: l, top1: a, throughput: t | <time>`.
        # No BERT: NLP/BERT/run_pretraining.py spans GPUs only with --use_consistent, which calls
        # Module.to_consistent: OneFlow 0.8.0 and 0.9.0 raise "has been removed" (docs/upstream-
        # releases.md).
        "current": Release(
            version=f"OneFlow 0.9.0 (cu118); Oneflow-Inc/models {MODELS_CURRENT[:7]} resnet50",
            environment="envs/oneflow_current.yaml",
            models={
                "resnet50": ModelSource(
                    ONEFLOW_MODELS, "Vision/classification/image/resnet50", MODELS_CURRENT
                )
            },
            entry={"resnet50": "train.py"},
            parsers={"resnet50": parse_oneflow_cnn_current},
            launch="oneflow",
            source_root="/workspace/models",
            unverified="not run: no GPU here; flags and log line read from train.py, config.py, "
            "graph.py, models/data.py and utils/logger.py at MODELS_CURRENT; the README says "
            "only one node (8 devices) was tested",
        ),
    }

    def dlperf_v1_rn50_amp(self, ctx: TaskContext) -> bool:
        return (
            self.release_name(ctx.options) != "current"
            and ctx.cell.model == "resnet50"
            and ctx.cell.precision == "amp"
        )

    def workload_env(self, ctx: TaskContext) -> dict[str, str]:
        env = RN50_AMP_ENV if self.dlperf_v1_rn50_amp(ctx) else {}
        return {**env, **super().workload_env(ctx)}

    def script_args(self, ctx: TaskContext) -> list[str]:
        o, cell = ctx.options, ctx.cell
        bsz = self.batch_size(cell, o)
        if self.release_name(o) == "current":
            return self.current_args(ctx, bsz)
        layout = [f"--num_nodes={ctx.nodes}", f"--gpu_num_per_node={ctx.gpus_per_node}"]
        if ctx.nodes > 1:
            layout.append(f"--node_ips={','.join(node_hosts(ctx))}")
        amp = ["--use_fp16"] if cell.precision == "amp" else []
        log_dir = f"--log_dir={ctx.run_dir / f'oneflow_node{ctx.node_rank}'}"
        if cell.model == "resnet50":
            data = (
                [
                    f"--train_data_dir={o['data_dir']}/train",
                    f"--train_data_part_num={o['data_part_num']}",
                ]
                if o["data_dir"]
                else []
            )
            examples = bsz * ctx.nodes * ctx.gpus_per_node * ctx.steps
            return [
                *layout,
                "--model=resnet50",
                f"--batch_size_per_device={bsz}",
                f"--num_examples={examples}",
                "--num_epoch=1",
                "--loss_print_every_n_iter=1",
                *data,
                *amp,
                *(RN50_AMP_FLAGS if self.dlperf_v1_rn50_amp(ctx) else ()),
                log_dir,
            ]
        return [
            *layout,
            f"--batch_size_per_device={bsz}",
            f"--iter_num={ctx.steps}",
            "--loss_print_every_n_iter=1",
            f"--seq_length={o['seq_len']}",
            f"--max_predictions_per_seq={o['max_predictions_per_seq']}",
            "--num_hidden_layers=12",
            "--num_attention_heads=12",
            "--max_position_embeddings=512",
            "--type_vocab_size=2",
            "--vocab_size=30522",
            "--attention_probs_dropout_prob=0.1",
            "--hidden_dropout_prob=0.1",
            "--hidden_size_per_head=64",
            "--learning_rate=1e-4",
            f"--data_dir={o['data_dir']}",
            f"--data_part_num={o['data_part_num']}",
            "--model_save_every_n_iter=1000000",
            f"--model_save_dir={ctx.run_dir / 'oneflow_snapshots'}",
            *amp,
            log_dir,
        ]

    def current_args(self, ctx: TaskContext, bsz: int) -> list[str]:
        """Release current: resnet50/train.py's flags (config.py), as its graph examples
        (examples/train_graph_distributed_fp32.sh, _fp16.sh) pass them. One epoch of `steps`
        batches, no evaluation, a line per iteration; nn.Graph (`--graph`: fp16 needs it) with
        the fused BN ops; AMP adds `--use-fp16 --channel-last` (NHWC, as the fp16 example). The
        layout is the launcher's; `--num-devices-per-node` tells graph.py the node's share
        (`--num-nodes` stays 1: config.py rejects more). No data_dir: `--synthetic-data`."""
        o = ctx.options
        data = (
            [
                f"--ofrecord-path={o['data_dir']}",
                f"--ofrecord-part-num={o['data_part_num']}",
                "--use-gpu-decode",
            ]
            if o["data_dir"]
            else ["--synthetic-data"]
        )
        amp = ["--use-fp16", "--channel-last"] if ctx.cell.precision == "amp" else []
        return [
            f"--train-batch-size={bsz}",
            f"--num-devices-per-node={ctx.gpus_per_node}",
            "--num-epochs=1",
            f"--batches-per-epoch={ctx.steps}",
            "--skip-eval",
            "--print-interval=1",
            "--graph",
            "--fuse-bn-relu",
            "--fuse-bn-add-relu",
            *amp,
            *data,
        ]


class OneFlowWDL(UpstreamAdapter):
    """OneFlow-Benchmark Wide & Deep (DLPerf's W&D special case): latency per iteration.

    `--batch_size` of the script is the global batch (DLPerf's "fixed batch size per device" tests
    pass 16384 x devices); the vocabulary and network width are options.
    """

    name: ClassVar[str] = "oneflow_wdl"
    display_name: ClassVar[str] = "OneFlow W&D"
    version: ClassVar[str] = (
        "OneFlow 0.2.0; OneFlow-Benchmark v0.2.0 ClickThroughRate/WideDeepLearning"
    )
    models: ClassVar[dict[str, ModelSource]] = {
        "wide_deep": ModelSource(ONEFLOW_BENCHMARK, "ClickThroughRate/WideDeepLearning", "v0.2.0"),
    }
    entry: ClassVar[dict[str, str]] = {"wide_deep": "wdl_train_eval.py"}
    parsers: ClassVar[dict[str, Parser]] = {"wide_deep": parse_oneflow_wdl}
    precisions: ClassVar[dict[str, tuple[str, ...]]] = {"wide_deep": ("fp32",)}
    environment: ClassVar[str] = "envs/oneflow.yaml"
    features: ClassVar[tuple[str, ...]] = ("model-parallel embedding", "multi-node by --node_ips")
    source_root: ClassVar[str] = "/workspace/OneFlow-Benchmark"
    options: ClassVar[dict[str, Any]] = upstream_options(
        max_batch_size={"wide_deep": 16384},
        vocab_size=2322444,  # wide and deep vocabulary (DLPerf's default)
        hidden_units_num=7,  # 7 x 1024 fully-connected units
        deep_embedding_vec_size=32,
        data_part_num=256,
    )
    releases: ClassVar[dict[str, Release]] = {
        # Oneflow-Inc/models RecommenderSystems/wide_and_deep/train.py: one process per GPU through
        # oneflow.distributed.launch (ranks from the environment), `--batch_size` still global, the
        # data folder's train/ and val/ OFRecord parts; only rank 0 prints its progress line
        # `[rank:0] iter: i/n, loss: ..., latency(ms): ... | <time>`. No new options: the vocabulary,
        # width and data options are DLPerf v1.0's (so its cells keep their resolved options).
        "current": Release(
            version=f"OneFlow 0.9.0 (cu118); Oneflow-Inc/models {MODELS_CURRENT[:7]} wide_and_deep",
            environment="envs/oneflow_current.yaml",
            models={
                "wide_deep": ModelSource(
                    ONEFLOW_MODELS, "RecommenderSystems/wide_and_deep", MODELS_CURRENT
                )
            },
            entry={"wide_deep": "train.py"},
            parsers={"wide_deep": parse_oneflow_wdl_current},
            launch="oneflow",
            source_root="/workspace/models",
            unverified="not run: no GPU here; flags and log line read from train.py, config.py and "
            "utils/logger.py at MODELS_CURRENT, the launcher from OneFlow v0.9.0",
        ),
    }

    def script_args(self, ctx: TaskContext) -> list[str]:
        o, cell = ctx.options, ctx.cell
        total = self.batch_size(cell, o) * ctx.nodes * ctx.gpus_per_node
        if self.release_name(o) == "current":
            return self.current_args(ctx, total)
        layout = [f"--num_nodes={ctx.nodes}", f"--gpu_num_per_node={ctx.gpus_per_node}"]
        if ctx.nodes > 1:
            layout.append(f"--node_ips={','.join(node_hosts(ctx))}")
        return [
            *layout,
            f"--batch_size={total}",
            f"--max_iter={ctx.steps}",
            "--loss_print_every_n_iter=1",
            f"--eval_interval={ctx.steps + 1000}",
            f"--wide_vocab_size={o['vocab_size']}",
            f"--deep_vocab_size={o['vocab_size']}",
            f"--hidden_units_num={o['hidden_units_num']}",
            f"--deep_embedding_vec_size={o['deep_embedding_vec_size']}",
            f"--data_dir={o['data_dir']}",
            f"--data_part_num={o['data_part_num']}",
        ]

    def current_args(self, ctx: TaskContext, total: int) -> list[str]:
        """Release current: train.py's flags (config.py). The layout is the launcher's; nn.Graph
        (`--execution_mode=graph`, the mode OneFlow benchmarked) unless extra_args say otherwise;
        no evaluation; the OFRecord parts are named part-00000 (suffix length 5)."""
        o = ctx.options
        return [
            f"--batch_size={total}",
            f"--max_iter={ctx.steps}",
            "--loss_print_every_n_iter=1",
            "--eval_interval=0",
            "--execution_mode=graph",
            f"--wide_vocab_size={o['vocab_size']}",
            f"--deep_vocab_size={o['vocab_size']}",
            f"--hidden_units_num={o['hidden_units_num']}",
            f"--deep_embedding_vec_size={o['deep_embedding_vec_size']}",
            "--dataset_format=ofrecord",
            f"--data_dir={o['data_dir']}",
            f"--data_part_num={o['data_part_num']}",
            "--data_part_name_suffix_length=5",
            f"--model_save_dir={ctx.run_dir / f'wdl_checkpoints_node{ctx.node_rank}'}",
        ]
