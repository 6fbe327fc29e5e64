"""DLPerf's InsightFace special case: OneFlow's oneflow_face and deepinsight's MXNet partial FC.

DLPerf (reports/insightface/dlperf_insightface_test_report_v1.md, "Max num_classes") trained
ResNet-100 on face_emore with 64 samples per GPU, FP16, model parallel and partial FC, and
searched the largest number of classes (face identities) each framework trains on 1n1g and 1n8g.
A case sweeps option `num_classes` with the value `max` for that search; any other value is
trained as it is.

Neither script takes the number of classes (or, for MXNet, anything but the dataset, network and
loss) on its command line: DLPerf edited their config modules with `sed` before each run
(OneFlow/Recognition/insightface/scripts/train_insightface.sh: sample_config.py;
MxNet/InsightFace/PartailFC/runner.sh: default.py). Here the task writes a small runner into the
run folder, `<adapter>_<cell>.py`, that imports the upstream config module, sets the same values
on it (SAMPLE_CONFIG / CONFIG in the runner) and runs the upstream script as `__main__` with the
command's arguments. The upstream files are never changed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from dlperf.adapters.base import ModelSource, TaskContext
from dlperf.adapters.hosts import node_hosts
from dlperf.adapters.upstream import UpstreamAdapter, flag_bool, upstream_options
from dlperf.parse.upstream import Parser
from dlperf.parse.upstream.mxnet import parse_insightface_partial_fc
from dlperf.parse.upstream.oneflow import parse_oneflow_face

ONEFLOW_FACE = "Oneflow-Inc/oneflow_face"
# The commit DLPerf's InsightFace report names for OneFlow (its "Frameworks & Models" table),
# 2021-02-07, run with OneFlow 0.3.4.
ONEFLOW_FACE_COMMIT = "1705ae5b4cee6466f7abf75ba891984ec02b8ea3"
INSIGHTFACE = "deepinsight/insightface"
# The commit DLPerf's MXNet scripts check out (MxNet/InsightFace/PartailFC/README.md: `git checkout
# 863a7ea...`, 2020-11-13). The report's framework table links a9beb60 (2021-01-20, "add oneflow
# insightface implementation"), whose recognition/partial_fc/mxnet differs in train_memory.py (it
# sets MXNET_*/HOROVOD_* tuning variables at import), callbacks.py (TensorBoard summaries on rank 0
# only) and default.py (glint360k paths): see config/baselines/README.md.
INSIGHTFACE_COMMIT = "863a7ea9ea0c0355d63c17e3c24e1373ed6bec55"


class OneFlowFace(UpstreamAdapter):
    """Oneflow-Inc/oneflow_face (1705ae5, OneFlow 0.3.4) insightface_train.py: InsightFace in
    OneFlow's lazy mode, one process per node driving its GPUs (`--device_num_per_node`), nodes
    by `--num_nodes` and the node list.

    Flags as DLPerf's train_insightface.sh passes them (`--train_batch_size` is the global batch,
    `--train_unit=batch`, `--use_fp16`, `--model_parallel`, `--partial_fc`, `--sample_ratio`,
    `--use_synthetic_data`); what it set with `sed` in sample_config.py (the dataset's
    `num_classes` and `train_data_part_num`, the node list) the runner sets on the imported
    module, plus the dataset folder (`dataset_dir`, from option data_dir). Two departures, both
    outside the timed iterations: `--do_validation_while_train=False` (no validation sets needed;
    DLPerf's runs built the validation job but never ran it within 150 iterations) and no
    `snapshot_last` after training (sample_config's save_last_snapshot; a 13.5-million-class fc7
    is 27 GB). Without data_dir: `--use_synthetic_data=True`, as DLPerf searched num_classes.

    Log: `train: iter i, loss l, throughput: t` (callback_util.py TrainMetric), parsed by
    parse_oneflow_face; the fixture lines are real ones from oneflow_face's own README at 09d1d8f
    (an R100 run on 8 GPUs), printed by the same TrainMetric as at 1705ae5.
    """

    name: ClassVar[str] = "oneflow_face"
    display_name: ClassVar[str] = "OneFlow (oneflow_face)"
    version: ClassVar[str] = f"OneFlow 0.3.4; oneflow_face {ONEFLOW_FACE_COMMIT[:7]}"
    models: ClassVar[dict[str, ModelSource]] = {
        "insightface": ModelSource(ONEFLOW_FACE, "", ONEFLOW_FACE_COMMIT),
    }
    entry: ClassVar[dict[str, str]] = {"insightface": "insightface_train.py"}
    parsers: ClassVar[dict[str, Parser]] = {"insightface": parse_oneflow_face}
    environment: ClassVar[str] = "envs/oneflow_face.yaml"
    features: ClassVar[tuple[str, ...]] = (
        "model-parallel fc7",
        "partial FC",
        "AMP (--use_fp16)",
        "multi-node by the node list",
    )
    source_root: ClassVar[str] = "/workspace/oneflow_face"
    synthetic_models: ClassVar[frozenset[str]] = frozenset({"insightface"})
    unverified: ClassVar[str] = (
        "not run: no GPU here; flags from insightface_train.py, sample_config.py and "
        "callback_util.py at 1705ae5 and DLPerf's train_insightface.sh; the log line from "
        "oneflow_face's README at 09d1d8f (the same TrainMetric format)"
    )
    options: ClassVar[dict[str, Any]] = upstream_options(
        # DLPerf's largest R100 batch per GPU on face_emore with partial FC (sample ratio 0.1),
        # FP32: 120 (the report's "Partial FC, sample_ratio = 0.1", batch_size = max)
        max_batch_size={"insightface": {"fp32": 120}},
        network="r100",  # sample_config.py network: r100, r100_glint360k, y1
        dataset="emore",  # sample_config.py dataset: emore, glint360k_8GPU
        loss="arcface",  # sample_config.py loss: softmax, nsoftmax, arcface, cosface, combined
        num_classes=0,  # classes (face identities); 0 = the dataset config's (emore: 85744)
        model_parallel=True,  # fc7 split across the GPUs (DLPerf's max num_classes setting)
        partial_fc=True,  # sample the fc7 rows (needs model_parallel)
        sample_ratio=0.1,  # partial FC's share of the class centres per step
        data_part_num=0,  # OFRecord parts in data_dir; 0 = the dataset config's (emore: 16)
    )

    def script_args(self, ctx: TaskContext) -> list[str]:
        o, cell = ctx.options, ctx.cell
        total = self.batch_size(cell, o) * ctx.nodes * ctx.gpus_per_node
        work = ctx.run_dir / f"oneflow_face_node{ctx.node_rank}"
        beyond = ctx.steps + 1000  # no snapshot and no validation within the run
        return [
            f"--network={o['network']}",
            f"--dataset={o['dataset']}",
            f"--loss={o['loss']}",
            f"--num_nodes={ctx.nodes}",
            f"--device_num_per_node={ctx.gpus_per_node}",
            f"--train_batch_size={total}",
            "--train_unit=batch",
            f"--train_iter={ctx.steps}",
            f"--model_parallel={flag_bool(bool(o['model_parallel']))}",
            f"--partial_fc={flag_bool(bool(o['partial_fc']))}",
            f"--sample_ratio={o['sample_ratio']}",
            f"--use_fp16={flag_bool(cell.precision == 'amp')}",
            f"--use_synthetic_data={flag_bool(not o['data_dir'])}",
            "--do_validation_while_train=False",
            "--loss_print_frequency=1",
            f"--iter_num_in_snapshot={beyond}",
            f"--validation_interval={beyond}",
            f"--log_dir={work / 'log'}",
            f"--models_root={work / 'models'}",
        ]

    def sample_config(self, ctx: TaskContext) -> dict[str, Any]:
        """What the runner sets on sample_config before the script reads it: `dataset.<name>.*`
        and `default.*` keys, as DLPerf's sed lines did (and the node list, which
        insightface_train.py's --node_ips cannot take: its str2list reads numbers)."""
        o = ctx.options
        dataset = f"dataset.{o['dataset']}"
        values: dict[str, Any] = {"default.save_last_snapshot": False}
        if int(o["num_classes"]):
            values[f"{dataset}.num_classes"] = int(o["num_classes"])
        if o["data_dir"]:
            values[f"{dataset}.dataset_dir"] = str(o["data_dir"])
        if int(o["data_part_num"]):
            values[f"{dataset}.train_data_part_num"] = int(o["data_part_num"])
        if ctx.nodes > 1:
            values["default.node_ips"] = node_hosts(ctx)
        return values

    def program(self, ctx: TaskContext) -> list[str]:
        return [str(ctx.options["python"]), str(self.write_runner(ctx))]

    def write_runner(self, ctx: TaskContext) -> Path:
        script = self.script(ctx.cell.model, ctx.options)
        path = Path(ctx.run_dir) / f"oneflow_face_{ctx.cell.id}.py"
        path.write_text(
            ONEFLOW_FACE_RUNNER.format(script=script, sample_config=self.sample_config(ctx))
        )
        return path


class InsightFaceMXNet(UpstreamAdapter):
    """deepinsight/insightface (863a7ea) recognition/partial_fc/mxnet train_memory.py: Partial FC
    in MXNet 1.6 with Horovod, one process per GPU, the class centres always split across the
    GPUs (model parallel), `sample_ratio` of them used per step (1.0: the full FC).

    The script takes only `--dataset`, `--network`, `--loss` and `--models-root`; DLPerf's
    runner.sh set the rest in default.py with `sed` (`config.fp16`, `config.batch_size` per GPU,
    `config.max_update`, `config.sample_ratio`), its README `config.frequent = 1` (a line per
    update) and, for the largest num_classes, a dataset entry with `config.num_classes` and
    `config.debug = 1` (synthetic DummyIter input). The runner sets the same `config` values after
    default.generate_config has filled in the dataset's, and no-ops mx.model.save_checkpoint as
    DLPerf commented out the checkpoint saving in callbacks.py (its all-reduce of the parameters at
    max_update - 10 stays, as in DLPerf's runs). Without data_dir: `config.debug = 1`; with it,
    `config.rec` is data_dir/train.rec (the RecordIO of insightface's datasets).

    Launched by horovodrun from node 0 with DLPerf's runner.sh environment
    (MXNET_CPU_WORKER_NTHREADS=3, HOROVOD_CACHE_CAPACITY 0 on one node, 1024 on several, and the
    MXNet tuning variables it passed to mpirun for several nodes); DLPerf used mpirun for several
    nodes, horovodrun on one.

    Log: `rank-id:0:<asctime>-Iter:i Rank:r it/sec Total:t it/sec ...` (callbacks.py
    CallBackLogging, rank 0), parsed by parse_insightface_partial_fc; the fixture lines are real
    ones, an 8-GPU log the partial FC author posted in Oneflow-Inc/DLPerf pull request #106.
    """

    name: ClassVar[str] = "insightface"
    display_name: ClassVar[str] = "MXNet (insightface partial FC)"
    version: ClassVar[str] = (
        f"MXNet 1.6.0, Horovod 0.19.5; insightface {INSIGHTFACE_COMMIT[:7]} partial_fc/mxnet"
    )
    launch: ClassVar[str] = "horovodrun"
    models: ClassVar[dict[str, ModelSource]] = {
        "insightface": ModelSource(INSIGHTFACE, "recognition/partial_fc/mxnet", INSIGHTFACE_COMMIT),
    }
    entry: ClassVar[dict[str, str]] = {"insightface": "train_memory.py"}
    parsers: ClassVar[dict[str, Parser]] = {"insightface": parse_insightface_partial_fc}
    environment: ClassVar[str] = "envs/insightface_mxnet.yaml"
    features: ClassVar[tuple[str, ...]] = ("Horovod", "partial FC", "float16 (config.fp16)")
    source_root: ClassVar[str] = "/workspace/insightface"
    synthetic_models: ClassVar[frozenset[str]] = frozenset({"insightface"})
    unverified: ClassVar[str] = (
        "not run: no GPU here; config keys and flow read from train_memory.py, default.py, "
        "callbacks.py and memory_module.py at 863a7ea and DLPerf's runner.sh; the log line from "
        "the 8-GPU log in Oneflow-Inc/DLPerf pull request #106"
    )
    options: ClassVar[dict[str, Any]] = upstream_options(
        mpi=True,
        # DLPerf's largest R100 batch per GPU on face_emore with partial FC sample ratio 0.1,
        # FP32: 104 (MxNet/InsightFace/PartailFC/README.md, "Batch size = 104(max)")
        max_batch_size={"insightface": {"fp32": 104}},
        network="r100",  # default.py network: r100, r122, r50, rx101, rx50
        dataset="emore",  # default.py dataset: emore, glint360k_8GPU, webface, ...
        loss="arcface",  # default.py loss: arcface, cosface
        num_classes=0,  # classes (face identities); 0 = the dataset config's (emore: 85742)
        sample_ratio=1.0,  # partial FC's share of the class centres (default.py: 1.0)
    )

    def script_args(self, ctx: TaskContext) -> list[str]:
        o = ctx.options
        return [
            f"--dataset={o['dataset']}",
            f"--network={o['network']}",
            f"--loss={o['loss']}",
            f"--models-root={ctx.run_dir / 'insightface_models'}",
        ]

    def config(self, ctx: TaskContext) -> dict[str, Any]:
        """default.py's `config` values the runner sets after generate_config (runner.sh's)."""
        o, cell = ctx.options, ctx.cell
        values: dict[str, Any] = {
            "batch_size": self.batch_size(cell, o),
            "fp16": cell.precision == "amp",
            "max_update": ctx.steps,
            "sample_ratio": float(o["sample_ratio"]),
            "frequent": 1,
        }
        if int(o["num_classes"]):
            values["num_classes"] = int(o["num_classes"])
        if o["data_dir"]:
            values["rec"] = f"{str(o['data_dir']).rstrip('/')}/train.rec"
            values["debug"] = 0
        else:
            values["debug"] = 1
        return values

    def workload_env(self, ctx: TaskContext) -> dict[str, str]:
        env = {
            "MXNET_CPU_WORKER_NTHREADS": "3",
            "HOROVOD_CACHE_CAPACITY": "0" if ctx.nodes == 1 else "1024",
        }
        if ctx.nodes > 1:
            env |= {
                "OMP_NUM_THREADS": "2",
                "MXNET_USE_OPERATOR_TUNING": "1",
                "MXNET_USE_NUM_CORES_OPERATOR_TUNING": "1",
                "MXNET_CUDNN_AUTOTUNE_DEFAULT": "1",
            }
        return {**env, **super().workload_env(ctx)}

    def program(self, ctx: TaskContext) -> list[str]:
        return [str(ctx.options["python"]), str(self.write_runner(ctx))]

    def write_runner(self, ctx: TaskContext) -> Path:
        script = self.script(ctx.cell.model, ctx.options)
        path = Path(ctx.run_dir) / f"insightface_{ctx.cell.id}.py"
        path.write_text(INSIGHTFACE_RUNNER.format(script=script, config=self.config(ctx)))
        return path


# OneFlowFace.write_runner: sample_config.py with this cell's values, then insightface_train.py.
ONEFLOW_FACE_RUNNER = """\
# dlperf: oneflow_face's {script} with this cell's sample_config values (DLPerf set them with sed)
import os
import runpy
import sys

SCRIPT = {script!r}
SAMPLE_CONFIG = {sample_config!r}
sys.path.insert(0, os.path.dirname(os.path.abspath(SCRIPT)))
import sample_config  # noqa: E402

for key, value in SAMPLE_CONFIG.items():
    *path, name = key.split(".")
    target = sample_config
    for part in path:
        target = getattr(target, part) if not isinstance(target, dict) else target[part]
    setattr(target, name, value)
sys.argv = [SCRIPT, *sys.argv[1:]]
runpy.run_path(SCRIPT, run_name="__main__")
"""

# InsightFaceMXNet.write_runner: default.py's config with this cell's values, then train_memory.py.
INSIGHTFACE_RUNNER = """\
# dlperf: insightface's {script} with this cell's default.py values (DLPerf set them with sed)
import os
import runpy
import sys

SCRIPT = {script!r}
CONFIG = {config!r}
sys.path.insert(0, os.path.dirname(os.path.abspath(SCRIPT)))
import default  # noqa: E402
import mxnet as mx  # noqa: E402

_generate_config = default.generate_config


def generate_config(*args, **kwargs):
    _generate_config(*args, **kwargs)
    for key, value in CONFIG.items():
        setattr(default.config, key, value)


default.generate_config = generate_config
mx.model.save_checkpoint = lambda *args, **kwargs: None  # DLPerf commented the saving out
sys.argv = [SCRIPT, *sys.argv[1:]]
runpy.run_path(SCRIPT, run_name="__main__")
"""
