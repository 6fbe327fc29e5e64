"""DeepLearningExamples' TensorFlow 1.x ResNet-50 v1.5 and BERT in NGC TensorFlow, through
`horovodrun` from node 0 (release `current`: the last TF1 code in the last TF1 container).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from dlperf.adapters.base import ModelSource, TaskContext
from dlperf.adapters.dle import DLE, DLE_CURRENT, DLE_ROOT
from dlperf.adapters.releases import DEFAULT_RELEASE, Release
from dlperf.adapters.upstream import UpstreamAdapter, upstream_options
from dlperf.parse.upstream import Parser
from dlperf.parse.upstream.dllogger import (
    parse_dle_tf1_bert,
    parse_dle_tf1_bert_current,
    parse_dle_tf1_rn50,
    parse_dle_tf1_rn50_benchmark,
)

DLE_TENSORFLOW = "fed7ba99cde958fda12c9e81d12b3d7e738e0590"
# NVIDIA's last TensorFlow 1.x container: "After the current 23.03 release, TF1 will no longer
# release monthly" (NVIDIA/tensorflow release 23.03). CUDA 12.1, so it has Hopper kernels.
NGC_TF1_LAST = "nvcr.io/nvidia/tensorflow:23.03-tf1-py3"
# ConvNets' `--mode=train` hook at DLE_TENSORFLOW (utils/hooks/training_hooks.py
# TrainingLoggingHook, warmup_steps=20, which runtime/runner.py never sets: `--warmup_steps` only
# reaches the benchmark mode's hook) logs no line for its first 20 steps
DLPERF_V1_RN50_UNLOGGED_STEPS = 20


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
    parsers: ClassVar[dict[str, Parser]] = {
        "resnet50": parse_dle_tf1_rn50,
        "bert_base": parse_dle_tf1_bert,
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
                "resnet50": parse_dle_tf1_rn50_benchmark,
                "bert_base": parse_dle_tf1_bert_current,
            },
            unverified="not run: no GPU or container here; DLE never tested these scripts in "
            "23.03 (the scripts' own containers are 20.12-tf1 and 20.06-tf1)",
        ),
    }

    def hidden_steps(self, model: str, options: Mapping[str, Any]) -> int:
        if model == "resnet50" and self.release_name(options) == DEFAULT_RELEASE:
            return DLPERF_V1_RN50_UNLOGGED_STEPS
        return 0

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
        release's main.py; `--warmup_steps=0` so the benchmark mode's hook (release current)
        prints from the first step (DLPerf v1.0's `--mode=train` hook ignores it:
        DLPERF_V1_RN50_UNLOGGED_STEPS)."""
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
