"""gluon-nlp's BERT-base pretraining (scripts/bert) as DLPerf v1.0 ran it with MXNet 1.6.0."""

from __future__ import annotations

from typing import Any, ClassVar

from dlperf.adapters.base import ModelSource, TaskContext
from dlperf.adapters.upstream import UpstreamAdapter, upstream_options
from dlperf.parse.upstream import Parser
from dlperf.parse.upstream.mxnet import parse_gluonnlp_bert


class GluonNLP(UpstreamAdapter):
    """gluon-nlp (7b7bf60) scripts/bert/run_pretraining.py BERT-base, through `horovodrun` from node 0.

    It runs only as variant `noclip`, DLPerf's label for it ("W/O clip": its MxNet/BERT README says
    gluon-nlp's BERT does not clip). The script at 7b7bf60 does clip, though: line 336 calls
    `fp16_trainer.step(1, max_norm=1.0 * num_workers)`, and fp16_utils.FP16Trainer.step scales
    the gradients by their global norm when `max_norm` is set; the label is kept so that its cells
    meet DLPerf's published ones, and `features` says what runs. DLPerf patched the script (no
    eval, stop at num_steps, no `round_to`); use such a checkout. `--total_batch_size` is global.
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
    parsers: ClassVar[dict[str, Parser]] = {"bert_base": parse_gluonnlp_bert}
    environment: ClassVar[str] = "envs/mxnet_gluonnlp.yaml"
    features: ClassVar[tuple[str, ...]] = (
        "Horovod",
        "float16",
        "clips by global norm (max_norm 1.0 x workers), labelled noclip as in DLPerf",
    )
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
            # DLPerf's pretrain.sh: no masked-LM and NSP accuracy each step (the metric updates
            # run beside the step; log_noacc prints the same `[step i] ... latency=` line)
            "--no_compute_acc",
            "--ckpt_interval",
            "1000000",
            "--ckpt_dir",
            str(ctx.run_dir / "gluonnlp_ckpt"),
            "--data",
            f"{o['data_dir']}/*",
        ]
