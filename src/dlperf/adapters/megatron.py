"""NVIDIA Megatron-LM's GPT pretraining (DLPerf's GPT special case): 8aa4619 in NGC PyTorch 20.12
as DLPerf v1.0 ran it, and release `current`, Megatron Core's core_v0.19.0.
"""

from __future__ import annotations

from typing import Any, ClassVar

from dlperf.adapters.base import ModelSource, TaskContext
from dlperf.adapters.oneflow_gpt import GPT_OPTIONS, check_parallel_layout, gpt_args
from dlperf.adapters.releases import GPU_RECORD, Evidence, Ran, Release
from dlperf.adapters.upstream import UpstreamAdapter, upstream_options
from dlperf.errors import ConfigError
from dlperf.flops import FlopsFormula, megatron_formula
from dlperf.matrix import Cell
from dlperf.parse.upstream import Parser
from dlperf.parse.upstream.megatron import parse_megatron, parse_megatron_current

# Megatron-LM's release tag core_v0.19.0 (August 2026) and the NGC PyTorch image its CI builds
# from (docker/.ngc_version.dev; its LTS image, docker/.ngc_version.lts, is 25.09).
MEGATRON_CURRENT = "5be9626709af2722333bf54797c954c09edeada3"
NGC_PYTORCH_MEGATRON = "nvcr.io/nvidia/pytorch:26.06-py3"
# What pretrain_gpt.py at core_v0.19.0 needs where neither apex nor TransformerEngine is installed
# (option without_apex_te; the NGC image has both). transformer_impl defaults to
# transformer_engine; gradient_accumulation_fusion (on by default) makes ColumnParallelLinear
# raise without apex's fused_weight_gradient_mlp_cuda; without apex the local spec's LayerNorm is
# torch's (WrappedTorchNorm), which asserts persist_layer_norm off (on by default); the masked
# softmax fusion imports apex's scaled_upper_triang_masked_softmax_cuda for fp16 inputs. The
# optimizers fall back to torch's AdamW by themselves; bias-GELU and bias-dropout fusions are
# torch.jit/torch.compile code.
WITHOUT_APEX_TE = (
    "--transformer-impl=local",
    "--no-gradient-accumulation-fusion",
    "--no-persist-layer-norm",
    "--no-masked-softmax-fusion",
)


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
    parsers: ClassVar[dict[str, Parser]] = {"gpt": parse_megatron}
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
        **GPT_OPTIONS,
        vocab_file="",  # "" = gpt2-vocab.json in the checkout
        merge_file="",  # "" = gpt2-merges.txt in the checkout
        # release current without data_dir: mock data, and NullTokenizer's vocabulary (GPT-2's:
        # Megatron pads it to 50304, as the FLOPs formula does)
        vocab_size=50257,
        # release current: flags for a machine without apex and TransformerEngine (MCore's local
        # layers, torch's LayerNorm and softmax, no fused weight-gradient accumulation)
        without_apex_te=False,
    )
    quiet_options: ClassVar[tuple[str, ...]] = (
        *UpstreamAdapter.quiet_options,
        "vocab_size",
        "without_apex_te",
    )
    releases: ClassVar[dict[str, Release]] = {
        # Megatron Core's pretrain_gpt.py at core_v0.19.0, started by torchrun (as
        # examples/gpt3/train_gpt3_175b_distributed.sh does). `--checkpoint-activations` now stops
        # the script: full recompute of every layer is --recompute-granularity/-method/-num-layers.
        # Its training_log also prints the first iteration (see parse_megatron_current).
        "current": Release(
            version=f"Megatron-LM core_v0.19.0 ({MEGATRON_CURRENT[:7]}, NGC PyTorch 26.06)",
            environment=NGC_PYTORCH_MEGATRON,
            # pretrain_gpt.py and the root files beside it (gpt_builders.py, model_provider.py)
            # import megatron/ only: tests/, docs/ and examples/ are 52 of the tree's 57 MiB
            models={"gpt": ModelSource("NVIDIA/Megatron-LM", "", MEGATRON_CURRENT, ("megatron",))},
            parsers={"gpt": parse_megatron_current},
            launch="torchrun",
            evidence=Evidence(
                Ran.ONCE,
                f"{GPU_RECORD}: GPT-2 small's shapes, mock data, without apex and "
                "TransformerEngine, on an H100 (torch 2.11.0, through gpu-proof, 2026-11-27)",
            ),
        ),
    }

    def check_case(self, case: dict[str, Any]) -> None:
        super().check_case(case)
        check_parallel_layout(self, case)
        given = case.get("options", {})
        blocks = [given, *({**given, **o} for o in case.get("precision_options", {}).values())]
        for options in blocks:
            if options.get("without_apex_te") and self.release_name(options) != "current":
                raise ConfigError(
                    ".options.without_apex_te: only release current runs without apex and "
                    "TransformerEngine (set options.release: current)"
                )

    def skip_reason(self, cell: Cell, options: dict[str, Any]) -> str | None:
        if self.release_name(options) == "current":
            return None  # --mock-data when there is no data_dir
        return super().skip_reason(cell, options)

    def flops_formula(self, cell: Cell, options: dict[str, Any]) -> FlopsFormula | None:
        return megatron_formula(options, cell.precision)

    def workload_env(self, ctx: TaskContext) -> dict[str, str]:
        env = {}
        if self.release_name(ctx.options) == "current":
            env["CUDA_DEVICE_MAX_CONNECTIONS"] = "1"  # as Megatron's own example scripts set it
        return {**env, **super().workload_env(ctx)}

    def script_args(self, ctx: TaskContext) -> list[str]:
        """pretrain_gpt.py's arguments as DLPerf v1.0 passed them. Release current takes them under
        their current names. Gone: --data-impl, --distributed-backend and --checkpoint-activations
        (full recompute per layer instead); new: the tokenizer type the vocab and merge files need,
        and the TFLOP/s on the log line; without data_dir, mock data (MockGPTDataset) and
        NullTokenizer; with without_apex_te, what runs with neither package."""
        o = ctx.options
        current = self.release_name(o) == "current"
        model = gpt_args(ctx, self.batch_size(ctx.cell, o), oneflow=False)
        if current:
            recompute = ["--recompute-granularity=full", "--recompute-method=uniform"]
            recompute.append("--recompute-num-layers=1")
            model = [a for a in model if a != "--checkpoint-activations"]
            model += recompute if o["checkpoint_activations"] else []
        return [
            *model,
            f"--max-position-embeddings={o['seq_len']}",
            *self.data_args(o, current),
            *([] if current else ["--data-impl=mmap", "--distributed-backend=nccl"]),
            *(WITHOUT_APEX_TE if current and o.get("without_apex_te") else []),
            "--lr=0.00015",
            "--save-interval=1000000",
            "--eval-interval=1000000",
            "--eval-iters=1",
            *(["--log-throughput"] if current else []),
        ]

    def data_args(self, o: dict[str, Any], current: bool) -> list[str]:
        """The dataset and its tokenizer; release current without data_dir: `--mock-data` (no
        --data-path: one data source only) and NullTokenizer of `vocab_size` tokens (its end of
        document the last), so no GPT-2 BPE files are needed."""
        if current and not o["data_dir"]:
            vocab = o["vocab_size"]
            return ["--mock-data", "--tokenizer-type=NullTokenizer", f"--vocab-size={vocab}"]
        root = self.root(o, "gpt")
        return [
            f"--data-path={o['data_dir']}",
            *(["--tokenizer-type=GPT2BPETokenizer"] if current else []),
            f"--vocab-file={o['vocab_file'] or root + '/gpt2-vocab.json'}",
            f"--merge-file={o['merge_file'] or root + '/gpt2-merges.txt'}",
        ]
