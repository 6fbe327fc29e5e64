"""OneFlow-GPT (OneFlow-Benchmark LanguageModeling/GPT, DLPerf's GPT special case) and release
`current`, LiBai's GPT-2 (LiBai succeeded OneFlow-GPT); the GPT arguments Megatron-LM shares."""

from __future__ import annotations

from typing import Any, ClassVar

from dlperf.adapters.base import ModelSource, TaskContext
from dlperf.adapters.hosts import node_hosts
from dlperf.adapters.oneflow import ONEFLOW_BENCHMARK
from dlperf.adapters.releases import Release
from dlperf.adapters.upstream import UpstreamAdapter, upstream_options
from dlperf.errors import ConfigError
from dlperf.flops import FlopsFormula, megatron_formula
from dlperf.matrix import Cell, expand_case
from dlperf.parse.upstream import Parser
from dlperf.parse.upstream.oneflow import parse_libai
from dlperf.parse.upstream.oneflow_gpt import parse_oneflow_gpt

LIBAI = "Oneflow-Inc/libai"
# LiBai v0.3.0 (2024-01-15), its newest release tag; main (9dcbe3b, October 2024) changed none of
# the files read (docs/upstream-releases.md), and its docs name OneFlow 0.9.0 as the stable OneFlow.
LIBAI_CURRENT = "1185ad9ca3fec9977ca1c2501b5d4c42c1b86ff3"

# The options DLPerf's GPT special case sets for both sources (Megatron-LM, OneFlow-GPT), which
# gpt_args turns into their shared flags: the model's size, its parallel layout, recomputation
GPT_OPTIONS: dict[str, Any] = {
    "max_batch_size": {"gpt": {"fp32": 4, "amp": 8}},
    "tensor_parallel": 1,
    "pipeline_parallel": 1,
    "global_batch_size": 0,  # 0: micro batch x data-parallel size (no gradient accumulation)
    "num_layers": 16,
    "hidden_size": 1536,
    "num_attention_heads": 16,
    "seq_len": 2048,
    "checkpoint_activations": True,
}


class OneFlowGPT(UpstreamAdapter):
    """OneFlow-GPT (OneFlow-Benchmark LanguageModeling/GPT, DLPerf's GPT special case).

    Runs as `python -m oneflow_gpt.training` from the GPT folder. Its metric rows are its own
    (oneflow_gpt/util.py), read by parse_oneflow_gpt; the adapter asks for the table format, as
    DLPerf ran it (option metric_print_format), whose rows DLPerf's own GPT logs show.
    """

    name: ClassVar[str] = "oneflow_gpt"
    display_name: ClassVar[str] = "OneFlow-GPT"
    version: ClassVar[str] = "OneFlow 0.4.0; OneFlow-Benchmark LanguageModeling/GPT"
    models: ClassVar[dict[str, ModelSource]] = {
        "gpt": ModelSource(ONEFLOW_BENCHMARK, "LanguageModeling/GPT")
    }
    unverified: ClassVar[str] = (
        "not run: no GPU here; flags read from oneflow_gpt/config.py (master, for OneFlow 0.4.0's "
        "single_client API; DLPerf's 8da0250 has every one too); the parser reads the metric rows "
        "of DLPerf's own OneFlow-GPT logs"
    )
    entry: ClassVar[dict[str, str]] = {"gpt": "oneflow_gpt/training.py"}
    parsers: ClassVar[dict[str, Parser]] = {"gpt": parse_oneflow_gpt}
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
        **GPT_OPTIONS,
        vocab_size=50257,
        metric_print_format="table",
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

    def check_case(self, case: dict[str, Any]) -> None:
        super().check_case(case)
        check_parallel_layout(self, case)

    def flops_formula(self, cell: Cell, options: dict[str, Any]) -> FlopsFormula | None:
        return megatron_formula(options, cell.precision)

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


def check_parallel_layout(adapter: UpstreamAdapter, case: dict[str, Any]) -> None:
    """Every cell's devices split into tensor x pipeline parallel groups, and its global batch
    (where set) into micro batches per data-parallel rank: else Megatron-LM and OneFlow-GPT stop
    at start-up, after the job queued for its nodes."""
    for spec in expand_case(case):
        o = adapter.resolved_options(spec.options)
        tp, pp, devices = (
            int(o["tensor_parallel"]),
            int(o["pipeline_parallel"]),
            spec.cell.layout.devices,
        )
        if devices % (tp * pp):
            raise ConfigError(
                f".layouts: {spec.cell.layout} has {devices} devices, not a multiple of "
                f"tensor_parallel x pipeline_parallel = {tp} x {pp} (cell {spec.id})"
            )
        micro, global_batch = spec.cell.batch_size, int(o["global_batch_size"])
        if global_batch and micro != "max" and global_batch % (int(micro) * devices // (tp * pp)):
            raise ConfigError(
                f".options.global_batch_size: {global_batch} is not a multiple of micro batch "
                f"{micro} x data parallel {devices // (tp * pp)} (cell {spec.id})"
            )


def gpt_args(ctx: TaskContext, micro: int, oneflow: bool) -> list[str]:
    """The GPT flags Megatron-LM and OneFlow-GPT share (DLPerf's GPT special case)."""
    o = ctx.options
    world = ctx.nodes * ctx.gpus_per_node
    data_parallel = world // (int(o["tensor_parallel"]) * int(o["pipeline_parallel"]))
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
