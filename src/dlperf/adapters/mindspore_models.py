"""MindSpore's model zoo: model_zoo r1.1's ResNet-50 and BERT-base as DLPerf v1.0 ran them, and
release `current` (mindspore-ai/models).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from dlperf.adapters.base import ModelSource, TaskContext
from dlperf.adapters.launchers import stop_after_prefix
from dlperf.adapters.releases import Release
from dlperf.adapters.upstream import UpstreamAdapter, flag_bool, upstream_options
from dlperf.defaults import case_setting
from dlperf.errors import ConfigError
from dlperf.matrix import Cell
from dlperf.parse.upstream import Parser
from dlperf.parse.upstream.mindspore import (
    parse_mindspore,
    parse_mindspore_benchmark,
    parse_mindspore_bert_current,
)

# mindspore-ai/models master as stored (2023-07-17); official/cv/ResNet last changed d70060f
# (2023-06-29), its gpu_resnet_benchmark.py 758a1fd (2023-03-01).
MS_MODELS_CURRENT = "eab643f51336dbf7d711f02d27e6516e5affee59"
# DLPerf v1.0's MindSpore scripts sink 10 steps per "epoch" (MindSpore/resnet50v1.5/scripts/
# run_*_train_gpu.sh and MindSpore/bert/scripts/run_*_pretrain_for_gpu.sh: --data_sink_steps=10)
DLPERF_SINK_STEPS = 10
# gpu_resnet_benchmark.py's MyTimeMonitor line: `epoch: [k/K] step: [s/S], loss is ...`, k the sink
MS_BENCH_STOP = r"epoch: \[(?P<step>\d+)/\d+\] step: \["


class MindSpore(UpstreamAdapter):
    """MindSpore model_zoo r1.1 ResNet-50 and BERT-base on GPU, `mpirun` from node 0.

    DLPerf patched ResNet's train.py to take --batch_size, --train_steps, --data_sink_steps and
    --dtype; use such a checkout. Both models sink DLPERF_SINK_STEPS steps per "epoch", as
    DLPerf's scripts did: a progress line per sink.
    XLA maps to MindSpore's graph-kernel fusion (BERT's --enable_graph_kernel). Release current
    (mindspore-ai/models): ResNet-50's GPU benchmark script and BERT's run_pretrain.py, whose
    graph-kernel fusion is always on and whose BERT-base computes in float16 (AMP with XLA only).
    """

    name: ClassVar[str] = "mindspore"
    display_name: ClassVar[str] = "MindSpore"
    version: ClassVar[str] = "MindSpore 1.1.0; model_zoo r1.1"
    launch: ClassVar[str] = "mpirun"
    log_interval: ClassVar[int] = DLPERF_SINK_STEPS  # a line per sink (release current: per step)
    models: ClassVar[dict[str, ModelSource]] = {
        "resnet50": ModelSource("mindspore/mindspore", "model_zoo/official/cv/resnet", "r1.1"),
        "bert_base": ModelSource("mindspore/mindspore", "model_zoo/official/nlp/bert", "r1.1"),
    }
    entry: ClassVar[dict[str, str]] = {"resnet50": "train.py", "bert_base": "run_pretrain.py"}
    parsers: ClassVar[dict[str, Parser]] = {
        "resnet50": parse_mindspore,
        "bert_base": parse_mindspore,
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
                "resnet50": parse_mindspore_benchmark,
                "bert_base": parse_mindspore_bert_current,
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
        for precision in case_setting(case, "precision"):
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
            if not all(case_setting(case, "xla")):
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

    def log_interval_of(self, options: Mapping[str, Any]) -> int:
        """DLPerf v1.0's scripts log once per sink of DLPERF_SINK_STEPS; release current once per
        step (one step per sink)."""
        return 1 if self.release_name(options) == "current" else self.log_interval

    def command(self, ctx: TaskContext) -> list[str]:
        argv = super().command(ctx)
        current = self.release_name(ctx.options) == "current"
        if not current or ctx.cell.model != "resnet50" or ctx.node_rank > 0:
            return argv  # scripts with a step limit stop themselves; other nodes idle (mpirun)
        return stop_after_prefix(MS_BENCH_STOP, ctx.steps, self.progress_lines(ctx)) + argv

    def current_rn50_args(self, ctx: TaskContext, bsz: int, dtype: str) -> list[str]:
        """Release current: gpu_resnet_benchmark.py; config keys of resnet_benchmark_GPU.yaml are
        flags (src/model_utils/config.py; booleans through ast.literal_eval). One step per sink
        (DLPerf v1.0's scripts sank DLPERF_SINK_STEPS); the batch is per device."""
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
        overwrites `batch_size` with it. One step per sink (DLPerf v1.0 sank DLPERF_SINK_STEPS).
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
                f"--data_sink_steps={DLPERF_SINK_STEPS}",
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
            f"--data_sink_steps={DLPERF_SINK_STEPS}",
            f"--train_steps={ctx.steps}",
            f"--data_dir={o['data_dir']}",
            f"--enable_graph_kernel={'true' if cell.xla else 'false'}",
            f"--batch_size={bsz}",
            f"--dtype={dtype}",
            "--schema_dir=",
        ]
