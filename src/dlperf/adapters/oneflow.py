"""OneFlow's own benchmark scripts: OneFlow-Benchmark CNNs and BERT, Wide & Deep, and OneFlow-GPT.

OneFlow (lazy mode, v0.2-v0.4) spans nodes itself: every node runs the same script with the node
list (`--node_ips`), one process per node driving all of its GPUs.

Release `current` (option `release`, see dlperf.adapters.upstream), one process per GPU through
`oneflow.distributed.launch` and OneFlow's eager/graph API: `oneflow_wdl` runs the Wide & Deep of
Oneflow-Inc/models, `oneflow` its Vision/classification/image/resnet50 (no BERT: the models repo's
NLP/BERT calls `to_consistent`, which OneFlow removed in 2022), `oneflow_gpt` LiBai's GPT-2 (LiBai
succeeded OneFlow-GPT). docs/upstream-releases.md says what was read and what is not verified.
"""

from __future__ import annotations

from typing import Any, ClassVar

from dlperf.adapters.base import ModelSource, TaskContext
from dlperf.adapters.hosts import node_hosts
from dlperf.adapters.upstream import Release, UpstreamAdapter, upstream_options
from dlperf.flops import FlopsFormula, megatron_formula
from dlperf.matrix import Cell
from dlperf.parse.upstream import (
    Parser,
    parse_libai,
    parse_megatron,
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
LIBAI = "Oneflow-Inc/libai"
# LiBai v0.3.0 (2024-01-15), its newest release tag; main (9dcbe3b, October 2024) changed none of
# the files read (docs/upstream-releases.md), and its docs name OneFlow 0.9.0 as the stable OneFlow.
LIBAI_CURRENT = "1185ad9ca3fec9977ca1c2501b5d4c42c1b86ff3"


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
    variants: ClassVar[dict[str, dict[str, tuple[str, ...]]]] = {"bert_base": {"noclip": ()}}
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


class OneFlowGPT(UpstreamAdapter):
    """OneFlow-GPT (OneFlow-Benchmark LanguageModeling/GPT, DLPerf's GPT special case).

    Runs as `python -m oneflow_gpt.training` from the GPT folder. Its log is handed to the
    Megatron-LM parser; OneFlow-GPT prints its metrics in its own layout (DLPerf ran it with
    `--metric-print-format table`), so whether that parser reads it is unverified: the adapter
    asks for the line format (`normal`, option metric_print_format) as the closest to Megatron's.
    """

    name: ClassVar[str] = "oneflow_gpt"
    display_name: ClassVar[str] = "OneFlow-GPT"
    version: ClassVar[str] = "OneFlow 0.4.0; OneFlow-Benchmark LanguageModeling/GPT"
    models: ClassVar[dict[str, ModelSource]] = {
        "gpt": ModelSource(ONEFLOW_BENCHMARK, "LanguageModeling/GPT")
    }
    entry: ClassVar[dict[str, str]] = {"gpt": "oneflow_gpt/training.py"}
    parsers: ClassVar[dict[str, Parser]] = {"gpt": parse_megatron}
    environment: ClassVar[str] = "envs/oneflow_gpt.yaml"
    features: ClassVar[tuple[str, ...]] = (
        "tensor/pipeline/data parallel",
        "activation checkpointing",
        "AMP",
    )
    source_root: ClassVar[str] = "/workspace/OneFlow-Benchmark"
    log_interval: ClassVar[int] = 10
    seq_len: ClassVar[int] = 2048
    options: ClassVar[dict[str, Any]] = upstream_options(
        max_batch_size={"gpt": {"fp32": 4, "amp": 8}},
        tensor_parallel=1,
        pipeline_parallel=1,
        global_batch_size=0,  # 0: micro batch x data-parallel size (no gradient accumulation)
        num_layers=16,
        hidden_size=1536,
        num_attention_heads=16,
        seq_len=2048,
        vocab_size=50257,
        checkpoint_activations=True,
        metric_print_format="normal",
    )

    releases: ClassVar[dict[str, Release]] = {
        # LiBai (Oneflow-Inc/libai), OneFlow-GPT's successor: tools/train_net.py with
        # configs/gpt2_pretrain.py and LazyConfig overrides (`key=value`) for DLPerf's GPT; rank 0
        # logs libai/utils/events.py CommonMetricPrinter's `iteration: i/n  consumed_samples: c
        # ... time: t s/iter ...` every log_period iterations. No new options: the model and
        # parallel options are DLPerf v1.0's (vocab_size and metric_print_format go unused).
        "current": Release(
            version=f"OneFlow 0.9.0 (cu118); LiBai v0.3.0 ({LIBAI_CURRENT[:7]}) GPT-2",
            environment="envs/libai_current.yaml",
            models={"gpt": ModelSource(LIBAI, "", LIBAI_CURRENT)},
            entry={"gpt": "tools/train_net.py"},
            parsers={"gpt": parse_libai},
            launch="oneflow",
            source_root="/workspace/libai",
            unverified="not run: no GPU here; overrides and log line read from tools/train_net.py, "
            "tools/train.sh, configs/gpt2_pretrain.py, configs/common/*, libai/engine/*.py and "
            "libai/utils/events.py at LIBAI_CURRENT; list-index overrides "
            "(dataloader.train.dataset.0...) not run",
        ),
    }

    def flops_formula(self, cell: Cell, options: dict[str, Any]) -> FlopsFormula | None:
        return megatron_formula(options)

    def program(self, ctx: TaskContext) -> list[str]:
        return [str(ctx.options["python"]), "-m", "oneflow_gpt.training"]

    def workload_env(self, ctx: TaskContext) -> dict[str, str]:
        if self.release_name(ctx.options) == "current":
            # tools/train.sh exports it before the launcher
            return {"ONEFLOW_FUSE_OPTIMIZER_UPDATE_CAST": "true", **super().workload_env(ctx)}
        return {"PYTHONPATH": self.model_dir("gpt", ctx.options), **super().workload_env(ctx)}

    def script_args(self, ctx: TaskContext) -> list[str]:
        if self.release_name(ctx.options) == "current":
            return self.libai_args(ctx, self.batch_size(ctx.cell, ctx.options))
        return gpt_args(ctx, self.batch_size(ctx.cell, ctx.options), oneflow=True)

    def libai_args(self, ctx: TaskContext, micro: int) -> list[str]:
        """Release current: `--config-file configs/gpt2_pretrain.py` and LazyConfig overrides
        (libai/config/lazy.py apply_overrides, Hydra's `key=value` grammar), later ones winning,
        so extra_args may override any. gpt2_pretrain.py sets some values from others when it is
        loaded (the datasets' sequence length, pipeline_num_layers): those are overridden too.
        The config's tokenizer files (./data_test/gpt_data/, relative to the checkout, where
        tools/train.sh runs) are made absolute; data_dir is the indexed dataset's prefix, for the
        train split and the test set alike. No evaluation (the config's evaluator would also run
        after the last iteration); LiBai saves model_final after it, in the run folder."""
        o = ctx.options
        root = self.root(o).rstrip("/")
        layers, hidden, seq = int(o["num_layers"]), int(o["hidden_size"]), int(o["seq_len"])
        world = ctx.nodes * ctx.gpus_per_node
        tp, pp = int(o["tensor_parallel"]), int(o["pipeline_parallel"])
        global_batch = int(o["global_batch_size"]) or micro * max(1, world // (tp * pp))
        data = o["data_dir"]
        return [
            "--config-file",
            f"{root}/configs/gpt2_pretrain.py",
            f"model.cfg.hidden_layers={layers}",
            f"model.cfg.hidden_size={hidden}",
            f"model.cfg.ffn_hidden_size={4 * hidden}",
            f"model.cfg.num_attention_heads={o['num_attention_heads']}",
            f"model.cfg.max_seq_length={seq}",
            f"train.dist.tensor_parallel_size={tp}",
            f"train.dist.pipeline_parallel_size={pp}",
            f"train.dist.pipeline_num_layers={layers}",
            f"train.train_micro_batch_size={micro}",
            f"train.global_batch_size={global_batch}",
            f"train.train_iter={ctx.steps}",
            f"train.log_period={self.log_interval}",
            f"train.amp.enabled={ctx.cell.precision == 'amp'}",
            f"train.activation_checkpoint.enabled={bool(o['checkpoint_activations'])}",
            "train.evaluation.enabled=False",
            f"train.output_dir={ctx.run_dir / f'libai_output_node{ctx.node_rank}'}",
            f"tokenization.tokenizer.vocab_file={root}/data_test/gpt_data/gpt2-vocab.json",
            f"tokenization.tokenizer.merges_file={root}/data_test/gpt_data/gpt2-merges.txt",
            f"dataloader.train.dataset.0.data_prefix={data}",
            f"dataloader.train.dataset.0.indexed_dataset.data_prefix={data}",
            f"dataloader.train.dataset.0.max_seq_length={seq}",
            f"dataloader.test.0.dataset.data_prefix={data}",
            f"dataloader.test.0.dataset.indexed_dataset.data_prefix={data}",
            f"dataloader.test.0.dataset.max_seq_length={seq}",
        ]


def gpt_args(ctx: TaskContext, micro: int, oneflow: bool) -> list[str]:
    """The GPT flags Megatron-LM and OneFlow-GPT share (DLPerf's GPT special case)."""
    o = ctx.options
    world = ctx.nodes * ctx.gpus_per_node
    data_parallel = max(1, world // (int(o["tensor_parallel"]) * int(o["pipeline_parallel"])))
    global_batch = int(o["global_batch_size"]) or micro * data_parallel
    args = [
        f"--num-layers={o['num_layers']}",
        f"--hidden-size={o['hidden_size']}",
        f"--num-attention-heads={o['num_attention_heads']}",
        f"--micro-batch-size={micro}",
        f"--global-batch-size={global_batch}",
        f"--tensor-model-parallel-size={o['tensor_parallel']}",
        f"--pipeline-model-parallel-size={o['pipeline_parallel']}",
        f"--seq-length={o['seq_len']}",
        f"--train-iters={ctx.steps}",
        "--lr-decay-iters=320000",
        "--lr-decay-style=cosine",
        "--min-lr=1.0e-5",
        "--lr-warmup-fraction=0.01",
        "--weight-decay=1e-2",
        "--clip-grad=1.0",
        "--split=949,50,1",
        "--log-interval=10",
    ]
    if o["checkpoint_activations"]:
        args.append("--checkpoint-activations")
    if ctx.cell.precision == "amp":
        args.append("--fp16")
    if oneflow:
        args += [
            f"--num-gpus-per-node={ctx.gpus_per_node}",
            f"--num-nodes={ctx.nodes}",
            f"--dataset={o['data_dir']}",
            f"--vocab-size={o['vocab_size']}",
            "--learning-rate=0.00015",
            "--optimizer=adamw",
            "--save-interval=1000000",
            f"--metric-print-format={o['metric_print_format']}",
        ]
        if ctx.nodes > 1:
            args.append(f"--node-ips={','.join(node_hosts(ctx))}")
    return args
