"""tensorflow/models (the TensorFlow Model Garden): r2.3.0's ResNet-50 and BERT pretraining as
DLPerf v1.0 ran them, and release `current`'s orbit trainers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

from dlperf.adapters.base import ModelSource, TaskContext
from dlperf.adapters.hosts import node_hosts
from dlperf.adapters.releases import Evidence, Ran, Release
from dlperf.adapters.upstream import UpstreamAdapter, upstream_options
from dlperf.errors import ConfigError
from dlperf.matrix import Cell
from dlperf.parse.upstream import Parser
from dlperf.parse.upstream.tensorflow import parse_tf2_bert, parse_tf2_orbit, parse_tf2_rn50

# tensorflow/models master as read (orbit/controller.py, official/core/config_definitions.py,
# official/vision/train.py, official/vision/configs/image_classification.py), 2023-2024.
TF_MODELS_CURRENT = "00b830c7ca641413f37e5147cf059c89f79b0e8e"


class TensorFlow2(UpstreamAdapter):
    """tensorflow/models r2.3.0: vision/image_classification ResNet-50 and nlp/bert pretraining.

    Multi-node through MultiWorkerMirroredStrategy: every node runs the script once with all its
    GPUs, the worker list and its own index. ResNet-50 logs every 100 steps (TimeHistory).
    Release `current`: both through the Model Garden's orbit trainers (official/vision/train.py,
    official/nlp/train.py), logging every steps_per_loop steps (option, 100); on a CPU it runs
    from the packages of envs/tf_models.txt (tests/test_tf_models_upstream.py).
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
    parsers: ClassVar[dict[str, Parser]] = {
        "resnet50": parse_tf2_rn50,
        "bert_base": parse_tf2_bert,
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
        # release current: orbit's trainer.steps_per_loop (= summary_interval), iterations per
        # `train | step:` line; fewer than 100 where steps are slow (a CPU at toy size)
        steps_per_loop=100,
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
            environment=(
                "envs/tf_models.txt (TensorFlow 2.21.0, tf-models-nightly 2.21.0.dev20260217; "
                "CPU wheels) or a checkout at source_root"
            ),
            models={
                "resnet50": ModelSource("tensorflow/models", "official/vision", TF_MODELS_CURRENT),
                "bert_base": ModelSource("tensorflow/models", "official/nlp", TF_MODELS_CURRENT),
            },
            entry={"resnet50": "train.py", "bert_base": "train.py"},
            parsers={"resnet50": parse_tf2_orbit, "bert_base": parse_tf2_orbit},
            evidence=Evidence(
                Ran.CI,
                "tests/test_tf_models_upstream.py, on a CPU (TensorFlow 2.21.0, tf-models-nightly "
                "2.21.0.dev20260217); never on a GPU, multi-node, with XLA or AMP",
            ),
        ),
    }
    # resnet_imagenet's stepwise learning rates for its batch of 4096 are 0.1 x 4096 / 256 ...;
    # the override scales them to the run's global batch, as the experiment's own rule does
    RN50_LR_PER_256: ClassVar[tuple[float, ...]] = (0.1, 0.01, 0.001, 0.0001)

    def check_case(self, case: dict[str, Any]) -> None:
        super().check_case(case)
        for precision_options in [{}, *case.get("precision_options", {}).values()]:
            options = {**case.get("options", {}), **precision_options}
            if "steps_per_loop" in options and self.release_name(options) != "current":
                raise ConfigError(
                    ".options.steps_per_loop: only release current's orbit trainers take it "
                    "(DLPerf v1.0's scripts log every 100 steps)"
                )

    def measured_options(self, cell: Cell, options: dict[str, Any]) -> dict[str, Any]:
        """steps_per_loop only where release current runs (DLPerf v1.0's cells measure, and are
        fresh, as before the option existed)."""
        measured = super().measured_options(cell, options)
        if self.release_name(measured) != "current":
            measured.pop("steps_per_loop", None)
        return measured

    def log_interval_of(self, options: Mapping[str, Any]) -> int:
        if self.release_name(options) == "current":
            return int(options.get("steps_per_loop", self.log_interval))
        return self.log_interval

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
        cpu = ctx.device == "cpu"
        runtime: dict[str, Any] = {
            # distribute_utils: mirrored over num_gpus GPUs, over CPU:0 with 0 (given 1 on a
            # CPU, MirroredStrategy names a GPU:0 that does not exist and places ops softly)
            "num_gpus": 0 if cpu else ctx.gpus_per_node,
            "enable_xla": cell.xla,
            "distribution_strategy": "multi_worker_mirrored" if ctx.nodes > 1 else "mirrored",
        }
        if not cpu:
            runtime["all_reduce_alg"] = "nccl"
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
        interval = self.log_interval_of(o)
        trainer: dict[str, Any] = {
            "train_steps": ctx.steps,
            "steps_per_loop": interval,
            "summary_interval": interval,
            # 0, not a large interval: tf.train.CheckpointManager saves the first checkpoint
            # whatever its interval, after the first loop, inside the next loop's time (0.49 s
            # of a 2.44 s window on a CPU); orbit's Controller saves none when it is 0
            "checkpoint_interval": 0,
            "validation_interval": never,
        }
        if cell.model == "bert_base":
            # bert/pretraining leaves the polynomial decay and warm-up lengths None
            # (learning_rate_config.py); these are configs/experiments/wiki_books_pretrain.yaml's
            trainer["optimizer_config"] = {
                "learning_rate": {"polynomial": {"decay_steps": 1000000}},
                "warmup": {"polynomial": {"warmup_steps": 10000}},
            }
        else:
            # resnet_imagenet's rates are for its batch of 4096: unscaled, a small batch's loss
            # spikes (batch 2, 64x64, CPU: mean 38.4 over steps 1-100, scaled 7.7; at 32x32 the
            # run stopped at the trainer's loss bound: `The loss value is 2839095803904.0`)
            values = [lr * global_batch / 256 for lr in self.RN50_LR_PER_256]
            trainer["optimizer_config"] = {"learning_rate": {"stepwise": {"values": values}}}
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
            runtime: dict[str, Any] = {
                "num_gpus": ctx.gpus_per_node,
                "enable_xla": cell.xla,
                # DLPerf's yamls: True on one node (TensorFlow/resnet50v1.5/scripts/gpu.yaml,
                # gpu_fp16.yaml), False on several (multi_node_gpu*.yaml, two_node_gpu*.yaml);
                # classifier_trainer.initialize() then sets TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT
                "batchnorm_spatial_persistent": ctx.nodes == 1,
            }
            if cell.precision == "amp":
                runtime["loss_scale"] = "dynamic"
            if ctx.nodes > 1:
                runtime |= {
                    "distribution_strategy": "multi_worker_mirrored",
                    "worker_hosts": self.workers(ctx),
                    "task_index": ctx.node_rank,
                    "all_reduce_alg": "nccl",
                }
            builder = "records" if o["data_dir"] else "synthetic"
            override = {
                "runtime": runtime,
                "train_dataset": {
                    "batch_size": bsz,
                    "use_per_replica_batch_size": True,
                    "dtype": "float16" if cell.precision == "amp" else "float32",
                    "builder": builder,
                },
                # train_and_eval builds the validation set too (and evaluates it after the
                # epoch, outside the window, as DLPerf's runs did)
                "validation_dataset": {"builder": builder},
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
            return [
                # classifier_trainer.py's run() knows train_and_eval and export_only (any other
                # mode is a ValueError), and its main() requires --data_dir ("" for synthetic)
                "--mode=train_and_eval",
                "--model_type=resnet",
                "--dataset=imagenet",
                f"--model_dir={ctx.run_dir / f'tf2_model_node{ctx.node_rank}'}",
                f"--data_dir={o['data_dir']}",
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
