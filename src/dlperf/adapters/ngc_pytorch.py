"""DeepLearningExamples' PyTorch ResNet-50 v1.5 and BERT in NGC PyTorch, through
`torch.distributed.launch` on every node (ResNet-50 with `--use_env`; release `current`: torchrun).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from dlperf.adapters import without_dali
from dlperf.adapters.base import ModelSource, TaskContext
from dlperf.adapters.dle import DLE, DLE_CURRENT, DLE_ROOT
from dlperf.adapters.releases import GPU_RECORD, Evidence, Ran, Release
from dlperf.adapters.upstream import UpstreamAdapter, upstream_options
from dlperf.parse.upstream import Parser
from dlperf.parse.upstream.dllogger import (
    parse_dle_pytorch_bert,
    parse_dle_pytorch_bert_current,
    parse_dle_pytorch_rn50,
)

DLE_PYTORCH_RN50 = "46ff3707e04683e41b79af0f94a74e45f8016786"
DLE_PYTORCH_BERT = "26c26761042c0e352238add07f0074e87ac66023"
NGC_PYTORCH_CURRENT = "nvcr.io/nvidia/pytorch:24.03-py3"


@dataclass(frozen=True)
class ConvNetsFlags:
    """What PyTorch/Classification/ConvNets main.py calls its flags at a release."""

    synthetic: str  # the synthetic data backend
    batch_size: str
    workers: str
    print_freq: str
    momentum: str
    weight_decay: str
    optimizer_batch_size: tuple[str, ...]  # "-1": the batch itself (no gradient accumulation)
    init: tuple[str, ...]  # the weight initialisation (fan-in)
    amp: tuple[str, ...]
    raport_in_workspace: bool  # main.py puts --raport-file in --workspace itself


CONVNETS_FLAGS = {
    # DLPerf v1.0 (DLE 46ff370, NGC 20.03): APEX AMP with dynamic loss scaling
    "dlperf_v1": ConvNetsFlags(
        synthetic="syntetic",  # sic: DLE's spelling
        batch_size="-b",
        workers="-j",
        print_freq="-p",
        momentum="--mom",
        weight_decay="--wd",
        optimizer_batch_size=("--optimizer-batch-size", "-1"),
        init=("-c", "fanin"),
        amp=("--amp", "--dynamic-loss-scale"),
        raport_in_workspace=False,
    ),
    # DLE master: torch.cuda.amp, `synthetic` spelled right, model flags parsed apart (no -c);
    # configs.yml: AMP is `amp: True, static_loss_scale: 128` with memory_format nhwc
    "current": ConvNetsFlags(
        synthetic="synthetic",
        batch_size="--batch-size",
        workers="--workers",
        print_freq="--print-freq",
        momentum="--momentum",
        weight_decay="--weight-decay",
        optimizer_batch_size=(),
        init=(),
        amp=("--amp", "--static-loss-scale", "128", "--memory-format", "nhwc"),
        raport_in_workspace=True,
    ),
}


class NGCPyTorch(UpstreamAdapter):
    """DeepLearningExamples PyTorch ResNet-50 v1.5 (DALI, APEX AMP) and BERT (APEX) in NGC PyTorch 20.03."""

    name: ClassVar[str] = "ngc_pytorch"
    display_name: ClassVar[str] = "NGC PyTorch"
    version: ClassVar[str] = (
        f"PyTorch 1.5.0a0+8f84ded (NGC 20.03); DeepLearningExamples {DLE_PYTORCH_RN50[:7]}/{DLE_PYTORCH_BERT[:7]}"
    )
    launch: ClassVar[str] = "torch"
    # ConvNets' main.py at DLE_PYTORCH_RN50 has no --local_rank argument (parse_args() stops at
    # one) and reads LOCAL_RANK from the environment, as DLE's multiproc.py (DLPerf's launcher)
    # set it; BERT's run_pretraining.py takes the --local_rank argument
    model_launch: ClassVar[dict[str, str]] = {"resnet50": "torch_env"}
    models: ClassVar[dict[str, ModelSource]] = {
        "resnet50": ModelSource(DLE, "PyTorch/Classification/ConvNets", DLE_PYTORCH_RN50),
        "bert_base": ModelSource(DLE, "PyTorch/LanguageModeling/BERT", DLE_PYTORCH_BERT),
    }
    entry: ClassVar[dict[str, str]] = {"resnet50": "main.py", "bert_base": "run_pretraining.py"}
    parsers: ClassVar[dict[str, Parser]] = {
        "resnet50": parse_dle_pytorch_rn50,
        "bert_base": parse_dle_pytorch_bert,
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
        without_dali=False,  # ResNet-50: main.py through adapters/without_dali.py (no DALI there)
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
            parsers={"bert_base": parse_dle_pytorch_bert_current},
            launch="torchrun",
            evidence=Evidence(
                Ran.ONCE,
                f"{GPU_RECORD}: ResNet-50 AMP on an H100 (torch 2.11.0, synthetic data, without "
                "DALI, through gpu-proof, 2026-11-27); BERT never (its LDDL parquet input and a "
                "container were not there): its argument names and log lines read from "
                "run_pretraining.py at DLE_CURRENT",
            ),
        ),
    }

    def script_argv(self, ctx: TaskContext) -> list[str]:
        """ConvNets' main.py needs DALI importable whatever its backend; `without_dali` runs it
        through a wrapper that stands in for DALI's names where DALI is not installed."""
        script = super().script_argv(ctx)
        if ctx.cell.model == "resnet50" and ctx.options["without_dali"]:
            return [str(Path(without_dali.__file__)), *script]
        return script

    def script_args(self, ctx: TaskContext) -> list[str]:
        current = self.release_name(ctx.options) == "current"
        if ctx.cell.model == "resnet50":
            return self.rn50_args(ctx, CONVNETS_FLAGS["current" if current else "dlperf_v1"])
        return self.bert_args(ctx, current)

    def rn50_args(self, ctx: TaskContext, flags: ConvNetsFlags) -> list[str]:
        """ConvNets main.py's arguments with DLPerf's hyper-parameters, in the spelling of the
        release's main.py."""
        o, cell = ctx.options, ctx.cell
        raport = f"raport_node{ctx.node_rank}.json"
        return [
            "--data-backend",
            o["data_backend"] if o["data_dir"] else flags.synthetic,
            "--arch",
            "resnet50",
            flags.batch_size,
            str(self.batch_size(cell, o)),
            flags.workers,
            str(o["workers"]),
            flags.print_freq,
            "1",
            "--epochs",
            "1",
            "--prof",
            str(ctx.steps),
            "--training-only",
            "--no-checkpoints",
            *flags.optimizer_batch_size,
            "--warmup",
            "8",
            *flags.init,
            "--label-smoothing",
            "0.1",
            "--lr-schedule",
            "cosine",
            flags.momentum,
            "0.875",
            flags.weight_decay,
            "3.0517578125e-05",
            "--workspace",
            str(ctx.run_dir),
            "--raport-file",
            raport if flags.raport_in_workspace else str(ctx.run_dir / raport),
            *(flags.amp if cell.precision == "amp" else []),
            str(o["data_dir"] or ctx.run_dir),
        ]

    def bert_args(self, ctx: TaskContext, current: bool) -> list[str]:
        """run_pretraining.py's arguments as DLPerf v1.0 passed them. Release current's script
        (LDDL parquet input) also takes a vocab file, its BERT-base config lies in bert_configs/,
        and it has no --bert_model; a progress bar is turned off, the loader's workers set."""
        o, cell = ctx.options, ctx.cell
        node = ctx.node_rank
        folder = self.model_dir("bert_base", o)
        if current:
            files = [
                f"--config_file={o['bert_config'] or folder + '/bert_configs/base.json'}",
                f"--vocab_file={o['vocab_file'] or folder + '/vocab/vocab'}",
            ]
        else:
            files = [
                f"--config_file={o['bert_config'] or folder + '/bert_config.json'}",
                "--bert_model=bert-base-uncased",
            ]
        loader = ["--disable_progress_bar", f"--num_workers={o['workers']}"]
        return [
            f"--input_dir={o['data_dir']}",
            f"--output_dir={ctx.run_dir / f'checkpoints_node{node}'}",
            *files,
            f"--train_batch_size={self.batch_size(cell, o)}",
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
            *(loader if current else []),
            *(["--fp16"] if cell.precision == "amp" else []),
        ]
