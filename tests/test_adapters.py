"""Adapters of the upstream benchmark sources: commands, option checks, planning and parsing.

For every registered upstream adapter and model, the command of a 1n1g and a 2n8g cell is built
and read back: the batch size in the source's own unit, the AMP and XLA flags, the number of
steps, and the layout (nodes, GPUs, node rank, master address or host list).
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest

from dlperf.adapters import REGISTRY, TaskContext, get_adapter
from dlperf.adapters.base import Launcher
from dlperf.adapters.builtin import BuiltinWorkload
from dlperf.adapters.hosts import expand_hostlist
from dlperf.adapters.upstream import UpstreamAdapter
from dlperf.config import validate
from dlperf.errors import ConfigError
from dlperf.i18n import english
from dlperf.launch.measured import measure_digest, measure_of
from dlperf.matrix import Cell, CellSpec, Layout
from dlperf.measure.stats import Window, run_throughput
from dlperf.vocabulary import MODELS

FIXTURES = Path(__file__).parent / "fixtures" / "logs"
UPSTREAM = {name: cls for name, cls in REGISTRY.items() if issubclass(cls, UpstreamAdapter)}
HOSTS = ["gpu01", "gpu02"]
PORT = 29517

Pairs = Callable[[int, "TaskContext"], list[tuple[str, object]]]


@dataclass(frozen=True)
class Spec:
    """What a source's command must say, in the source's own units."""

    batch: Pairs  # (bsz per device, ctx) -> flags and values
    steps: Callable[[TaskContext], list[tuple[str, object]]]
    amp: list[tuple[str, object]] | None  # None: the source runs fp32 only
    layout: str
    xla: list[tuple[str, object]] | None = None  # None: no XLA


def world(ctx: TaskContext) -> int:
    return ctx.nodes * ctx.gpus_per_node


BSZ = 64
SPECS: dict[tuple[str, str], Spec] = {
    ("oneflow", "resnet50"): Spec(
        lambda b, c: [("--batch_size_per_device", b)],
        lambda c: [("--num_examples", BSZ * world(c) * c.steps)],
        [("--use_fp16", None)],
        "oneflow",
    ),
    ("oneflow", "bert_base"): Spec(
        lambda b, c: [("--batch_size_per_device", b)],
        lambda c: [("--iter_num", c.steps)],
        [("--use_fp16", None)],
        "oneflow",
    ),
    ("ngc_pytorch", "resnet50"): Spec(
        lambda b, c: [("-b", b)], lambda c: [("--prof", c.steps)], [("--amp", None)], "torch"
    ),
    ("ngc_pytorch", "bert_base"): Spec(
        lambda b, c: [("--train_batch_size", b)],
        lambda c: [("--max_steps", c.steps)],
        [("--fp16", None)],
        "torch",
    ),
    ("ngc_tensorflow", "resnet50"): Spec(
        lambda b, c: [("--batch_size", b)],
        lambda c: [("--num_iter", c.steps)],
        [("--use_tf_amp", None)],
        "horovodrun",
        [("--use_xla", None)],
    ),
    ("ngc_tensorflow", "bert_base"): Spec(
        lambda b, c: [("--train_batch_size", b)],
        lambda c: [("--num_train_steps", c.steps)],
        [("--use_fp16", None)],
        "horovodrun",
        [("--use_xla", None)],
    ),
    ("ngc_mxnet", "resnet50"): Spec(
        lambda b, c: [("--batch-size", b * world(c))],
        lambda c: [("--benchmark-iters", c.steps)],
        [("--dtype", "float16")],
        "horovodrun",
    ),
    ("tensorflow2", "resnet50"): Spec(
        lambda b, c: [
            ("train_dataset.batch_size", b),
            ("train_dataset.use_per_replica_batch_size", True),
        ],
        lambda c: [("train.steps", c.steps)],
        [("train_dataset.dtype", "float16")],
        "tf2_resnet",
        [("runtime.enable_xla", True)],
    ),
    ("tensorflow2", "bert_base"): Spec(
        lambda b, c: [("--train_batch_size", b * world(c))],
        lambda c: [("--num_steps_per_epoch", c.steps)],
        [("--dtype", "fp16")],
        "tf2_bert",
        [("--enable_xla", "true")],
    ),
    ("pytorch_examples", "resnet50"): Spec(
        lambda b, c: [("-b", b * c.gpus_per_node)],
        lambda c: [("--step", c.steps)],
        None,
        "pytorch_examples",
    ),
    ("mxnet_gluoncv", "resnet50"): Spec(
        lambda b, c: [("--batch-size", b)],
        lambda c: [("--step", c.steps)],
        [("--dtype", "float16")],
        "mpirun",
    ),
    ("mxnet_gluonnlp", "bert_base"): Spec(
        lambda b, c: [("--total_batch_size", b * world(c))],
        lambda c: [("--num_steps", c.steps)],
        [("--dtype", "float16")],
        "horovodrun",
    ),
    ("paddle", "resnet50"): Spec(
        lambda b, c: [("--batch_size", b * c.gpus_per_node)],
        lambda c: [("--max_iter", c.steps)],
        [
            ("--use_fp16", "True"),
            ("--fuse_elewise_add_act_ops", "True"),
            ("--fuse_bn_act_ops", "True"),
            ("FLAGS_cudnn_batchnorm_spatial_persistent", 1),
            ("FLAGS_cudnn_exhaustive_search", 1),
            ("FLAGS_conv_workspace_size_limit", 4000),
        ],
        "paddle",
    ),
    ("paddle", "bert_base"): Spec(
        lambda b, c: [("--batch_size", b * 128)],
        lambda c: [("--num_train_steps", c.steps)],
        [("--use_fp16", "true"), ("--init_loss_scaling", "128.0")],
        "paddle_bert",
    ),
    ("mindspore", "resnet50"): Spec(
        lambda b, c: [("--batch_size", b)],
        lambda c: [("--train_steps", c.steps), ("--data_sink_steps", 10)],
        [("--dtype", "fp16")],
        "mpirun",
    ),
    ("mindspore", "bert_base"): Spec(
        lambda b, c: [("--batch_size", b)],
        lambda c: [("--train_steps", c.steps), ("--data_sink_steps", 10)],
        [("--dtype", "fp16")],
        "mpirun",
        [("--enable_graph_kernel", "true")],
    ),
    ("hugectr", "wide_deep"): Spec(
        lambda b, c: [("solver.batchsize", b * world(c))],
        lambda c: [("solver.max_iter", c.steps)],
        [("solver.mixed_precision", 1024)],
        "mpirun_per_node",
    ),
    ("oneflow_wdl", "wide_deep"): Spec(
        lambda b, c: [("--batch_size", b * world(c))],
        lambda c: [("--max_iter", c.steps)],
        None,
        "oneflow",
    ),
    ("megatron", "gpt"): Spec(
        lambda b, c: [("--micro-batch-size", b), ("--global-batch-size", b * world(c))],
        lambda c: [("--train-iters", c.steps)],
        [("--fp16", None)],
        "torch",
    ),
    ("oneflow_gpt", "gpt"): Spec(
        lambda b, c: [("--micro-batch-size", b), ("--global-batch-size", b * world(c))],
        lambda c: [("--train-iters", c.steps)],
        [("--fp16", None)],
        "oneflow_gpt",
    ),
    ("oneflow_face", "insightface"): Spec(
        lambda b, c: [("--train_batch_size", b * world(c))],
        lambda c: [("--train_iter", c.steps), ("--train_unit", "batch")],
        [("--use_fp16", "True")],
        "oneflow_face",
    ),
    ("insightface", "insightface"): Spec(  # default.py's config, set by the run's runner
        lambda b, c: [("config.batch_size", b)],
        lambda c: [("config.max_update", c.steps), ("config.frequent", 1)],
        [("config.fp16", True)],
        "horovodrun",
    ),
}


def all_models() -> list[tuple[str, str]]:
    return [(name, model) for name, cls in UPSTREAM.items() for model in cls.models]


def test_every_upstream_adapter_and_model_has_a_spec():
    assert sorted(all_models()) == sorted(SPECS)


def test_registry_keys_are_the_schema_frameworks():
    from dlperf.schemacheck import schema

    frameworks = set(schema()["$defs"]["case"]["properties"]["framework"]["enum"])
    assert set(REGISTRY) == frameworks
    builtin = {name for name, cls in REGISTRY.items() if issubclass(cls, BuiltinWorkload)}
    assert {"pytorch", "jax", "paddlepaddle", "mxnet"} <= builtin
    assert set(UPSTREAM) == frameworks - builtin  # every adapter is one or the other


def test_a_built_in_workloads_requirements_are_its_environment_stated_once():
    """Issue 16: an adapter with requirements of its own states them once; its environment is
    them. The one without (PyTorch, in dlperf's environment) names its environment."""
    builtin = {n: c for n, c in REGISTRY.items() if issubclass(c, BuiltinWorkload)}
    own = {n: c for n, c in builtin.items() if c.requirements}
    assert {"jax", "paddlepaddle", "mxnet", "mindspore_builtin", "tensorflow"} <= set(own)
    assert all(c.environment == c.requirements for c in own.values())
    assert builtin["pytorch"].requirements is None
    assert builtin["pytorch"].environment == "envs/pytorch.yaml"
    with pytest.raises(TypeError, match="state requirements only"):
        type(
            "Twice", (BuiltinWorkload,), {"requirements": "envs/x.txt", "environment": "envs/x.txt"}
        )


# ---------------------------------------------------------------------------------- commands


def context(
    adapter: UpstreamAdapter,
    model: str,
    layout: str,
    node_rank: int,
    precision: str,
    xla: bool,
    run_dir: Path,
    options: dict | None = None,
    bsz: int | str = BSZ,
) -> TaskContext:
    lay = Layout.parse(layout)
    variant = adapter.only_variant.get(model, "default")
    cell = Cell(adapter.name, model, precision, xla, bsz, lay, variant)
    master = HOSTS[0] if lay.nodes > 1 else "127.0.0.1"
    return TaskContext(
        cell=cell,
        options=adapter.resolved_options(options or {}),
        steps=adapter.steps_for(20, 100),
        device="cuda",
        rank=node_rank,
        node_rank=node_rank,
        nodes=lay.nodes,
        gpus_per_node=lay.gpus_per_node,
        master_addr=master,
        master_port=PORT,
        run_dir=run_dir,
    )


def base_options(name: str, tmp_path: Path) -> dict:
    options: dict = {"data_dir": "/data/set"}
    if name == "hugectr":
        template = tmp_path / "wdl.json"
        template.write_text(json.dumps({"solver": {"lr_policy": "fixed"}, "layers": []}))
        options["config_template"] = str(template)
    if name == "tensorflow2":
        options["bert_config"] = "/data/bert_config.json"
    return options


def flatten(prefix: str, value: object) -> list[str]:
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in flatten(f"{prefix}{k}.", v)]
    return [f"{prefix[:-1]}={json.dumps(value) if not isinstance(value, str) else value}"]


def tokens(cmd: list[str]) -> list[str]:
    """The command's arguments, with JSON they carry (TF2's params_override, HugeCTR's file) and
    the values a runner sets on an upstream config module (InsightFace's) spread."""
    out = list(cmd)
    for i, arg in enumerate(cmd):
        if arg.startswith("--params_override="):
            out += flatten("", json.loads(arg.split("=", 1)[1]))
        if arg == "--train" and cmd[i + 1].endswith(".json"):
            out += flatten("", json.loads(Path(cmd[i + 1]).read_text()))
        if arg.endswith(".py") and Path(arg).is_file():
            out += [
                f"{k}={json.dumps(v) if not isinstance(v, str) else v}"
                for k, v in runner_values(Path(arg)).items()
            ]
    return out


def runner_values(path: Path) -> dict[str, object]:
    """What a runner written into the run folder sets: `SAMPLE_CONFIG = {...}` (keys as written)
    or `CONFIG = {...}` (default.py's config: keys as `config.<key>`)."""
    values: dict[str, object] = {}
    for line in path.read_text().splitlines():
        if line.startswith("SAMPLE_CONFIG = "):
            values |= ast.literal_eval(line.split(" = ", 1)[1])
        elif line.startswith("CONFIG = "):
            config = ast.literal_eval(line.split(" = ", 1)[1])
            values |= {f"config.{k}": v for k, v in config.items()}
    return values


def has(cmd: list[str], flag: str, value: object = None) -> bool:
    toks = tokens(cmd)
    if value is None:
        return flag in toks
    text = json.dumps(value) if isinstance(value, bool) else str(value)
    if f"{flag}={text}" in toks:
        return True
    return any(a == flag and b == text for a, b in zip(toks, toks[1:], strict=False))


def check_layout(kind: str, cmd: list[str], ctx: TaskContext) -> None:
    n, g, r = ctx.nodes, ctx.gpus_per_node, ctx.node_rank
    hosts = HOSTS[:n] if n > 1 else [ctx.master_addr]
    if kind == "torch":
        assert "torch.distributed.launch" in cmd
        for flag, value in [
            ("--nproc_per_node", g),
            ("--nnodes", n),
            ("--node_rank", r),
            ("--master_addr", ctx.master_addr),
            ("--master_port", ctx.master_port),
        ]:
            assert has(cmd, flag, value), (flag, value, cmd)
    elif kind in ("horovodrun", "mpirun", "mpirun_per_node"):
        slots = 1 if kind == "mpirun_per_node" else g
        assert ("horovodrun" if kind == "horovodrun" else "mpirun") in cmd
        assert has(cmd, "-np", n * slots)
        assert has(cmd, "-H", ",".join(f"{h}:{slots}" for h in hosts))
    elif kind == "paddle":
        assert has(cmd, "--cluster_node_ips", ",".join(hosts))
        assert has(cmd, "--node_ip", hosts[r])
        assert has(cmd, "--selected_gpus", ",".join(str(i) for i in range(g)))
        assert has(cmd, "--started_port", ctx.master_port)
    elif kind == "paddle_bert":  # release/1.8's train.py, once per node, nodes by endpoint
        assert "paddle.distributed.launch" not in cmd
        assert has(cmd, "--is_distributed", "true" if n > 1 else "false")
        endpoints = [f"{h}:{ctx.master_port}" for h in hosts]
        assert (f"worker_endpoints={','.join(endpoints)}" in cmd) is (n > 1), cmd
        assert (f"current_endpoint={endpoints[r]}" in cmd) is (n > 1), cmd
    elif kind == "oneflow":
        assert has(cmd, "--num_nodes", n) and has(cmd, "--gpu_num_per_node", g)
        assert (
            has(cmd, "--node_ips", ",".join(HOSTS))
            if n > 1
            else not any("--node_ips" in a for a in cmd)
        )
    elif kind == "oneflow_gpt":
        assert has(cmd, "--num-nodes", n) and has(cmd, "--num-gpus-per-node", g)
        assert (
            has(cmd, "--node-ips", ",".join(HOSTS))
            if n > 1
            else not any("--node-ips" in a for a in cmd)
        )
    elif kind == "oneflow_face":
        assert has(cmd, "--num_nodes", n) and has(cmd, "--device_num_per_node", g)
        assert not any("--node_ips" in a for a in cmd)  # str2list cannot read addresses
        nodes = runner_values(Path(cmd[1])).get("default.node_ips")
        assert nodes == (HOSTS if n > 1 else None), nodes
    elif kind == "tf2_resnet":
        assert has(cmd, "runtime.num_gpus", g)
        if n > 1:
            assert has(
                cmd, "runtime.worker_hosts", ",".join(f"{h}:{ctx.master_port}" for h in HOSTS)
            )
            assert has(cmd, "runtime.task_index", r)
            assert has(cmd, "runtime.distribution_strategy", "multi_worker_mirrored")
    elif kind == "tf2_bert":
        assert has(cmd, "--num_gpus", g)
        if n > 1:
            assert has(cmd, "--worker_hosts", ",".join(f"{h}:{ctx.master_port}" for h in HOSTS))
            assert has(cmd, "--task_index", r)
    elif kind == "pytorch_examples":
        assert has(cmd, "--world-size", n) and has(cmd, "--rank", r)
        assert has(cmd, "--dist-url", f"tcp://{ctx.master_addr}:{ctx.master_port}")
        assert has(cmd, "--multiprocessing-distributed")
    else:
        raise AssertionError(f"unknown layout kind {kind}")


@pytest.fixture
def slurm_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_JOB_NODELIST", "gpu[01-02]")


@pytest.mark.parametrize("name,model", sorted(SPECS))
@pytest.mark.parametrize("layout,node_rank", [("1n1g", 0), ("2n8g", 0), ("2n8g", 1)])
def test_command_flags(
    name: str, model: str, layout: str, node_rank: int, tmp_path: Path, slurm_nodes: None
):
    adapter = get_adapter(name)
    spec = SPECS[name, model]
    assert adapter.launcher is Launcher.PER_NODE
    options = base_options(name, tmp_path)
    precisions = ["fp32", "amp"] if spec.amp is not None else ["fp32"]
    xlas = [False, True] if spec.xla is not None else [False]
    for precision in precisions:
        for xla in xlas:
            ctx = context(adapter, model, layout, node_rank, precision, xla, tmp_path, options)
            cmd = adapter.command(ctx)
            assert isinstance(cmd, list) and cmd and all(isinstance(a, str) for a in cmd), cmd
            if spec.layout.startswith(("horovodrun", "mpirun")) and node_rank > 0:
                assert "started by node 0" in " ".join(
                    cmd
                )  # node 0 starts this node's ranks over ssh
                continue
            for flag, value in spec.batch(BSZ, ctx) + spec.steps(ctx):
                assert has(cmd, flag, value), (flag, value, cmd)
            for flag, value in spec.amp or []:
                assert has(cmd, flag, value) is (precision == "amp"), (precision, flag, cmd)
            for flag, value in spec.xla or []:
                assert has(cmd, flag, value) is xla, (xla, flag, cmd)
            check_layout(spec.layout, cmd, ctx)


@pytest.mark.parametrize("name", sorted(UPSTREAM))
def test_option_values_stay_single_arguments(name: str, tmp_path: Path):
    """A path with spaces and shell characters reaches the script as one argument, untouched."""
    adapter = get_adapter(name)
    model = next(iter(adapter.models))
    nasty = "/data/my set;echo $HOME`id`"
    options = base_options(name, tmp_path) | {"data_dir": nasty, "extra_args": ["--x=a b"]}
    cmd = adapter.command(context(adapter, model, "1n1g", 0, "fp32", False, tmp_path, options))
    assert cmd[0] not in ("sh", "bash", "/bin/sh", "/bin/bash")
    assert "--x=a b" in cmd
    if name != "hugectr":  # HugeCTR's data paths live in its JSON template
        # (InsightFace's in the runner's values, as a Python literal: tokens() reads them)
        assert any(nasty in a for a in tokens(cmd))


def test_max_batch_size_resolves_per_precision_and_xla(tmp_path: Path):
    tf = get_adapter("ngc_tensorflow")
    options = tf.resolved_options({})
    cells = {
        ("fp32", False): 48,
        ("amp", False): 64,
        ("amp", True): 96,
    }
    for (precision, xla), expected in cells.items():
        cell = Cell("ngc_tensorflow", "bert_base", precision, xla, "max", Layout(1, 1))
        assert tf.batch_size(cell, options) == expected
        cmd = tf.command(context(tf, "bert_base", "1n1g", 0, precision, xla, tmp_path, bsz="max"))
        assert f"--train_batch_size={expected}" in cmd


def test_variant_args_and_only_variant(tmp_path: Path):
    nlp = get_adapter("mxnet_gluonnlp")
    with pytest.raises(ConfigError, match=r"^\.variant: .*noclip"):
        nlp.check_case(case("mxnet_gluonnlp", "bert_base"))
    nlp.check_case(case("mxnet_gluonnlp", "bert_base", variant="noclip"))
    oneflow = get_adapter("oneflow")
    oneflow.check_case(case("oneflow", "bert_base", variant="noclip"))
    with pytest.raises(ConfigError, match=r"^\.variant"):
        oneflow.check_case(case("oneflow", "resnet50", variant="noclip"))


def test_steps_cover_the_window_in_whole_logging_intervals():
    for name, cls in UPSTREAM.items():
        adapter = cls()
        steps = adapter.steps_for(20, 100)
        assert steps >= 122, name
        assert steps >= adapter.log_interval * 2
        # the class's interval is the largest (upstream.log_interval); MindSpore's said 1 of its
        # DLPerf v1.0 release's sinks of 10
        assert adapter.log_interval >= adapter.log_interval_of(adapter.resolved_options({})), name
    assert get_adapter("oneflow").steps_for(20, 100) == 122
    assert get_adapter("ngc_tensorflow").steps_for(20, 100) == 130  # BERT logs every 10 steps
    assert get_adapter("tensorflow2").steps_for(20, 100) == 300  # TimeHistory every 100 steps
    assert get_adapter("megatron").steps_for(100, 100) == 210
    mindspore = get_adapter("mindspore")  # DLPerf's scripts sink (and log) every 10 steps
    assert mindspore.steps_for(20, 100) == 130
    assert mindspore.steps_for(20, 100, {"release": "current"}) == 122


def test_mindspore_dlperf_v1_sinks_of_ten_steps(tmp_path: Path):
    """DLPerf's MindSpore scripts ran --data_sink_steps=10: TimeMonitor(10) prints each sink's
    time and its tenth; the window is 10 sinks after 2."""
    adapter = get_adapter("mindspore")
    lines = ["Namespace(batch_size=128, dataset_sink_mode=True, device_num=1)"]
    for sink in range(1, 14):
        ms = 9000.0 if sink == 1 else 2000.0 + (sink % 2) * 100
        lines += [
            f"epoch: {sink} step: 10, loss is 6.9",
            f"epoch time: {ms:.3f} ms, per step time: {ms / 10:.3f} ms",
        ]
    (tmp_path / "node0.log").write_text("\n".join(lines) + "\n")
    cell = Cell("mindspore", "resnet50", "fp32", False, 128, Layout(1, 1))
    result = adapter.parse([tmp_path / "node0.log"], cell, adapter.resolved_options({}))
    assert [r.steps for r in result.records] == [10] * 13
    tp = run_throughput(result, Window(20, 100))
    assert tp.throughput_samples_per_s == pytest.approx(100 * 128 / (20.0 + 5 * 0.1), rel=1e-9)


def test_skip_without_data_where_the_source_has_no_synthetic_input():
    of = get_adapter("oneflow")
    options = of.resolved_options({})
    rn50 = Cell("oneflow", "resnet50", "fp32", False, 128, Layout(1, 1))
    bert = Cell("oneflow", "bert_base", "fp32", False, 32, Layout(1, 1))
    assert of.skip_reason(rn50, options) is None  # OneFlow's cnns have synthetic data
    assert "data_dir" in of.skip_reason(bert, options)
    assert of.skip_reason(bert, of.resolved_options({"data_dir": "/data"})) is None
    hugectr = get_adapter("hugectr")
    wdl = Cell("hugectr", "wide_deep", "fp32", False, 2048, Layout(1, 1))
    assert "config_template" in hugectr.skip_reason(wdl, hugectr.resolved_options({}))


def test_tensorflow2_resnet50_runs_a_mode_classifier_trainer_knows(tmp_path: Path):
    """tensorflow/models r2.3.0 classifier_trainer.py run(): train_and_eval or export_only, any
    other mode a ValueError; DLPerf's scripts ran train_and_eval."""
    tf2 = get_adapter("tensorflow2")
    options = {"data_dir": "/data/tfrecords"}
    cmd = tf2.command(context(tf2, "resnet50", "1n1g", 0, "amp", False, tmp_path, options))
    assert has(cmd, "--mode", "train_and_eval") and not has(cmd, "--mode", "train")
    assert has(cmd, "--data_dir", "/data/tfrecords")
    assert has(cmd, "train_dataset.builder", "records")
    assert has(cmd, "validation_dataset.builder", "records")


def test_synthetic_input_when_no_data_dir(tmp_path: Path):
    dle = get_adapter("ngc_pytorch")
    cmd = dle.command(context(dle, "resnet50", "1n1g", 0, "fp32", False, tmp_path))
    assert has(cmd, "--data-backend", "syntetic")  # sic: DeepLearningExamples' spelling
    tf2 = get_adapter("tensorflow2")
    cmd = tf2.command(context(tf2, "resnet50", "1n1g", 0, "fp32", False, tmp_path))
    assert has(cmd, "train_dataset.builder", "synthetic")
    # r2.3.0 classifier_trainer.py requires --data_dir and builds the validation set as well
    assert has(cmd, "--data_dir", "") and has(cmd, "validation_dataset.builder", "synthetic")
    mx = get_adapter("ngc_mxnet")
    assert has(
        mx.command(context(mx, "resnet50", "1n1g", 0, "fp32", False, tmp_path)),
        "--data-backend",
        "synthetic",
    )


# ----------------------------------------------------------------------------- option checks


def case(framework: str, model: str, **extra: object) -> dict:
    return {
        "framework": framework,
        "model": model,
        "precision": ["fp32"],
        "xla": [False],
        "batch_size": [32],
        "layouts": ["1n1g"],
        "variant": "default",
        "options": {},
        "precision_options": {},
    } | extra


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_unknown_options_are_refused_with_the_key_named(name: str):
    adapter = get_adapter(name)
    model = next(iter(adapter.models))
    with pytest.raises(ConfigError, match=r"^\.options\.no_such_option: unknown option"):
        adapter.check_case(case(name, model, options={"no_such_option": 1}))
    with pytest.raises(ConfigError, match=r"^\.precision_options\.amp\.typo_in_amp"):
        adapter.check_case(case(name, model, precision_options={"amp": {"typo_in_amp": 1}}))


@pytest.mark.parametrize("name", sorted(UPSTREAM))
def test_default_case_of_every_model_is_accepted(name: str):
    adapter = get_adapter(name)
    for model in adapter.models:
        variant = adapter.only_variant.get(model, "default")
        adapter.check_case(case(name, model, variant=variant, batch_size=[32, "max"]))


@pytest.mark.parametrize("name", [n for n, a in REGISTRY.items() if issubclass(a, BuiltinWorkload)])
def test_a_built_in_framework_says_why_it_lacks_a_model(name: str):
    """Issue 17: every model of the vocabulary is run by each built-in workload or has a stated
    reason, which the config error and `dlperf adapters` show."""
    adapter = get_adapter(name)
    for model in MODELS:
        assert (model in adapter.models) != (model in adapter.lacks), (name, model)
        if model in adapter.lacks:
            with pytest.raises(ConfigError, match=re.escape(english(adapter.lacks[model]))):
                adapter.check_case(case(name, model))
    assert set(adapter.lacks) <= set(MODELS)


@pytest.mark.parametrize("name", [n for n, a in REGISTRY.items() if issubclass(a, BuiltinWorkload)])
def test_a_built_in_framework_shards_gpt_or_says_why_not(name: str):
    """Issue 17: GPT with sharding fsdp where the framework has a sharded equivalent; where its
    workload has none, the refusal (and `dlperf adapters`, the report) gives the reason."""
    adapter = get_adapter(name)
    assert set(adapter.fsdp_lacks) <= set(adapter.models) - adapter.sharded_models
    if "gpt" not in adapter.models:
        with pytest.raises(ConfigError, match=r"with ddp only: it shards no model$"):
            adapter.check_case(case(name, "resnet50", options={"sharding": "fsdp"}))
        return
    assert ("gpt" in adapter.sharded_models) != ("gpt" in adapter.fsdp_lacks), name
    fsdp = case(name, "gpt", layouts=["1n2g"], xla=[True], options={"sharding": "fsdp"})
    if "gpt" in adapter.sharded_models:
        adapter.check_case(fsdp)
    else:
        why = english(adapter.fsdp_lacks["gpt"])
        with pytest.raises(
            ConfigError,
            match=rf"^\.options\.sharding: {name} trains gpt with ddp only: {re.escape(why)}$",
        ):
            adapter.check_case(fsdp)


def test_dlperf_adapters_says_what_each_lacks_and_where_each_release_ran():
    out = subprocess.run(
        [sys.executable, "-m", "dlperf", "adapters"], capture_output=True, text=True, check=True
    ).stdout
    mxnet = get_adapter("mxnet")
    assert f"  no gpt: {english(mxnet.lacks['gpt'])}" in out
    paddle = get_adapter("paddlepaddle")
    assert f"  no sharding fsdp for gpt: {english(paddle.fsdp_lacks['gpt'])}" in out
    megatron = get_adapter("megatron")
    for release in ("dlperf_v1", *megatron.releases):
        assert f"  release {release}: {megatron.evidence_of(release)}" in out
    assert "release current: never run here: no GPU or container here; flags read from" in out


def test_what_a_source_cannot_run_is_refused_with_the_key_named():
    with pytest.raises(ConfigError, match=r"^\.xla: oneflow cannot run resnet50 with XLA"):
        get_adapter("oneflow").check_case(case("oneflow", "resnet50", xla=[False, True]))
    with pytest.raises(
        ConfigError, match=r"^\.precision: pytorch_examples runs resnet50 in fp32 only"
    ):
        get_adapter("pytorch_examples").check_case(
            case("pytorch_examples", "resnet50", precision=["fp32", "amp"])
        )
    with pytest.raises(ConfigError, match=r"^\.model: .*has no gpt"):
        get_adapter("paddle").check_case(case("paddle", "gpt"))
    with pytest.raises(
        ConfigError,
        match=r"^\.options\.max_batch_size: ngc_pytorch has no max batch size for bert_base",
    ):
        get_adapter("ngc_pytorch").check_case(
            case(
                "ngc_pytorch",
                "bert_base",
                batch_size=["max"],
                options={"max_batch_size": {"resnet50": 256}},
            )
        )


def test_max_batch_size_per_precision_from_the_case_is_used():
    paddle = get_adapter("paddle")
    options = paddle.resolved_options({"max_batch_size": {"bert_base": {"fp32": 80, "amp": 150}}})
    cell = Cell("paddle", "bert_base", "amp", False, "max", Layout(1, 8))
    assert paddle.batch_size(cell, options) == 150


# --------------------------------------------------------------------------------- launching


def test_expand_slurm_hostlist():
    assert expand_hostlist("gpu[01-03,07],login1") == ["gpu01", "gpu02", "gpu03", "gpu07", "login1"]
    assert expand_hostlist("n[8-10]") == ["n8", "n9", "n10"]
    assert expand_hostlist("rack[1-2]-n[1-2]") == ["rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"]
    assert expand_hostlist("single") == ["single"]


def test_multi_node_without_a_host_list_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv("SLURM_JOB_NODELIST", raising=False)
    monkeypatch.delenv("SLURM_NODELIST", raising=False)
    oneflow = get_adapter("oneflow")
    with pytest.raises(RuntimeError, match="host list"):
        oneflow.command(context(oneflow, "resnet50", "2n8g", 0, "fp32", False, tmp_path))


def test_idle_node_command_runs(tmp_path: Path, slurm_nodes: None):
    tf = get_adapter("ngc_tensorflow")
    cmd = tf.command(context(tf, "resnet50", "2n8g", 1, "fp32", False, tmp_path))
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=60)
    assert "node 1" in out.stdout and "horovodrun" in out.stdout


def test_mpirun_exports_the_workload_environment(tmp_path: Path, slurm_nodes: None):
    mx = get_adapter("mxnet_gluoncv")
    cmd = mx.command(
        context(
            mx,
            "resnet50",
            "2n8g",
            0,
            "amp",
            False,
            tmp_path,
            {"data_dir": "/d", "env": {"NCCL_IB_DISABLE": "1"}, "ssh_port": 2222},
        )
    )
    assert cmd[cmd.index("env") + 1] == "NCCL_IB_DISABLE=1"
    assert has(cmd, "-x", "NCCL_IB_DISABLE")
    assert "-p 2222 -q -o StrictHostKeyChecking=no" in cmd
    assert "--tag-output" in cmd


def test_mpirun_passes_the_sites_rank_variables_on_to_the_other_nodes(
    tmp_path: Path, slurm_nodes: None, monkeypatch: pytest.MonkeyPatch
):
    """Review: site.env (NCCL_SOCKET_IFNAME, NCCL_IB_HCA: every rank's variables) reached the
    task's process on node 0, hence mpirun and node 0's ranks, but mpirun exported only the
    case's own `env` option: its ranks on the other nodes, started over ssh, ran without them
    (NCCL on another interface there, or IB off on half the job)."""
    from dlperf.launch import task
    from dlperf.launch.spec import RunSpec

    mx = get_adapter("mxnet_gluoncv")
    job = SimpleNamespace(job_id="31", hostnames=["gpu01", "gpu02"], node=0, num_nodes=2,
                          global_rank=0, num_tasks=2, local_rank=0)  # fmt: skip
    spec = RunSpec(
        Cell.parse("mxnet_gluoncv.resnet50.amp.noxla.b64.2n8g"), 1, mx.name,
        mx.resolved_options({"data_dir": "/d"}), 120, "cpu", 30.0, "slurm",
        {"gpus_per_node": 0, "devices_per_node": 8}, results_root=str(tmp_path),
        env={"NCCL_SOCKET_IFNAME": "ib0", "NCCL_IB_HCA": "mlx5"},
    )  # fmt: skip
    spec.paths.dir.mkdir(parents=True)
    ran: list[list[str]] = []
    monkeypatch.setattr(task, "run_workload", lambda command, *a, **k: ran.append(command) or {})
    task._launch(spec, mx, job, 0, spec.paths.task_log(0, per_node=True))
    assert has(ran[0], "-x", "NCCL_SOCKET_IFNAME") and has(ran[0], "-x", "NCCL_IB_HCA")
    assert ran[0].count("PATH") == 1


def test_hugectr_config_is_written_from_the_template(tmp_path: Path):
    hugectr = get_adapter("hugectr")
    options = base_options("hugectr", tmp_path)
    ctx = context(hugectr, "wide_deep", "1n8g", 0, "fp32", False, tmp_path, options, bsz=2048)
    cmd = hugectr.command(ctx)
    conf = json.loads(Path(cmd[cmd.index("--train") + 1]).read_text())
    assert conf["solver"]["batchsize"] == 2048 * 8
    assert conf["solver"]["gpu"] == list(range(8))
    assert conf["solver"]["lr_policy"] == "fixed"  # the template's own settings are kept
    assert "mixed_precision" not in conf["solver"]


# ------------------------------------------------------------------------ stopping a script


STOP_PATTERN = r"Epoch: \[\d+\]\[\s*(?P<step>\d+)/"


def test_stop_after_stops_the_script_once_the_step_is_logged():
    script = (
        "import time\n"
        "for i in range(100000):\n"
        "    print(f'Epoch: [0][{i:>4}/100000]\\tTime 0.01', flush=True)\n"
        "    time.sleep(0.002)\n"
    )
    cmd = [
        sys.executable,
        "-m",
        "dlperf.adapters.stop_after",
        "--pattern",
        STOP_PATTERN,
        "--step",
        "30",
        "--lines",
        "1",
        "--",
        sys.executable,
        "-c",
        script,
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    steps = [int(m) for m in re.findall(r"Epoch: \[0\]\[\s*(\d+)/", out.stdout)]
    assert steps[:31] == list(range(31)) and max(steps) < 200
    assert "dlperf-stop-after: stopped" in out.stdout


def test_stop_after_keeps_the_exit_status_of_a_script_that_ends_first():
    cmd = [
        sys.executable,
        "-m",
        "dlperf.adapters.stop_after",
        "--pattern",
        STOP_PATTERN,
        "--step",
        "30",
        "--",
        sys.executable,
        "-c",
        "print('Epoch: [0][   1/2]'); raise SystemExit(3)",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert out.returncode == 3 and "Epoch: [0][   1/2]" in out.stdout


def test_stop_after_passes_a_signal_that_ended_the_script_on_as_a_shell_does():
    """Review: a script the kernel killed (SIGKILL, -9) made stop_after sys.exit(-9), which exits
    247: neither a signal nor a shell's 128 + 9, so the task could not tell what ended it."""
    cmd = [
        sys.executable, "-m", "dlperf.adapters.stop_after", "--pattern", STOP_PATTERN,
        "--step", "30", "--", sys.executable, "-c",
        "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
    ]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert out.returncode == 128 + signal.SIGKILL


def test_scripts_without_a_step_limit_are_wrapped(tmp_path: Path):
    pe = get_adapter("pytorch_examples")
    cmd = pe.command(
        context(pe, "resnet50", "1n8g", 0, "fp32", False, tmp_path, {"data_dir": "/d"})
    )
    assert cmd[1:3] == ["-m", "dlperf.adapters.stop_after"]
    assert has(cmd, "--lines", 8)  # every rank of the node prints its own progress line
    assert re.search(pe.stop_pattern, "Epoch: [0][ 121/10009]\tTime  0.362 ( 2.620)")


# ----------------------------------------------------------------------------------- parsing

NAME = re.compile(
    r"^(?:(?P<n>\d+)n(?P<g>\d+)g|n(?P<n2>\d+)g(?P<g2>\d+))_[a-z0-9]+(?:_b(?P<b>\d+))?_(?P<p>fp32|fp16|amp)?"
)


def fixture_cell(adapter: UpstreamAdapter, model: str, fixture: Path) -> Cell:
    m = NAME.match(fixture.name)
    assert m, fixture
    nodes, gpus = int(m["n"] or m["n2"]), int(m["g"] or m["g2"])
    precision = "amp" if m["p"] in ("fp16", "amp") else "fp32"
    bsz = int(m["b"]) if m["b"] else 2048
    return Cell(
        adapter.name,
        model,
        precision,
        False,
        bsz,
        Layout(nodes, gpus),
        adapter.only_variant.get(model, "default"),
    )


def run_folder(fixture: Path, cell: Cell, tmp_path: Path) -> list[Path]:
    """The fixture laid out as a run folder: node<i>.log per node (paddle: workers' own logs)."""
    run = tmp_path / "run"
    run.mkdir()
    if fixture.is_dir():
        workers = sorted(fixture.glob("workerlog.*"))
        if workers:
            (run / "paddle_node0").mkdir()
            for w in workers:
                shutil.copy(w, run / "paddle_node0" / w.name)
        for log in sorted(fixture.glob("node*.log")):
            shutil.copy(log, run / log.name)
    else:
        shutil.copy(fixture, run / "node0.log")
    for i in range(cell.layout.nodes):
        node = run / f"node{i}.log"
        if not node.exists():
            node.write_text(
                f"dlperf: node {i}: its ranks are started by node 0's launcher over ssh\n"
            )
    return [run / f"node{i}.log" for i in range(cell.layout.nodes)]


@pytest.mark.parametrize("name,model", sorted(SPECS))
def test_parse_fixture_logs(name: str, model: str, tmp_path: Path):
    adapter = get_adapter(name)
    source = adapter.parsers[model].__name__.removeprefix("parse_")
    folder = FIXTURES / source
    fixtures = sorted(folder.iterdir()) if folder.is_dir() else []
    if not fixtures:
        pytest.skip(f"no fixture log in tests/fixtures/logs/{source}/ (the parser engineer's)")
    fixture = fixtures[0]
    cell = fixture_cell(adapter, model, fixture)
    logs = run_folder(fixture, cell, tmp_path)
    result = adapter.parse(logs, cell, adapter.resolved_options({}))
    assert result.records, (name, model, fixture)
    assert all(r.samples > 0 for r in result.records)


def test_builtin_pytorch_adapter_command_is_a_list_of_str(tmp_path: Path):
    adapter = get_adapter("pytorch")
    cell = Cell("pytorch", "resnet50", "amp", False, 16, Layout(1, 1))
    ctx = TaskContext(
        cell, adapter.resolved_options({}), 122, "cpu", 0, 0, 1, 1, "127.0.0.1", PORT, tmp_path
    )
    cmd = adapter.command(ctx)
    assert all(isinstance(a, str) for a in cmd)
    assert (
        has(cmd, "--batch-size", 16) and has(cmd, "--precision", "amp") and has(cmd, "--steps", 122)
    )


# ------------------------------------------------------------- InsightFace runners, W&D sweep

FAKE_SAMPLE_CONFIG = """\
class Dict(dict):
    __getattr__ = dict.__getitem__
    __setattr__ = dict.__setitem__

dataset = Dict(emore=Dict(num_classes=85744, dataset_dir="/data/x", train_data_part_num=16))
default = Dict(node_ips=["192.168.1.13"], save_last_snapshot=True)
"""
FAKE_TRAIN = """\
import json, sys
from sample_config import dataset, default
print(json.dumps({"argv": sys.argv[1:], "emore": dataset.emore, "default": default}))
"""
FAKE_DEFAULT = """\
class Dict(dict):
    __getattr__ = dict.__getitem__
    __setattr__ = dict.__setitem__

config = Dict(batch_size=64, fp16=False, frequent=20)

def generate_config(loss, dataset, network):
    config.num_classes = 85742  # what the dataset's branch sets, overridden by the runner
    config.batch_size = 64
    config.max_update = 180000
"""
FAKE_TRAIN_MEMORY = """\
import json, sys
import default
import mxnet as mx
default.generate_config("arcface", "emore", "r100")
saved = mx.model.save_checkpoint("prefix", 0) is None
print(json.dumps({"argv": sys.argv[1:], "config": default.config, "no_save": saved}))
"""
FAKE_MXNET = """\
class model:
    @staticmethod
    def save_checkpoint(*args, **kwargs):
        raise SystemExit("a checkpoint was saved")
"""


def run_runner(cmd: list[str]) -> dict:
    runner = next(a for a in cmd if a.endswith(".py"))
    args = cmd[cmd.index(runner) + 1 :]
    out = subprocess.run(
        [sys.executable, runner, *args], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


def test_oneflow_face_runner_sets_sample_config_and_runs_the_script(
    tmp_path: Path, slurm_nodes: None
):
    """The runner sets what DLPerf's sed set in sample_config.py, then runs the script itself
    with the command's arguments (a stand-in checkout: the module names the real one has)."""
    checkout = tmp_path / "oneflow_face"
    checkout.mkdir()
    (checkout / "sample_config.py").write_text(FAKE_SAMPLE_CONFIG)
    (checkout / "insightface_train.py").write_text(FAKE_TRAIN)
    face = get_adapter("oneflow_face")
    options = {"source_root": str(checkout), "num_classes": 13500000, "data_part_num": 32}
    ctx = context(face, "insightface", "2n8g", 0, "amp", False, tmp_path, options)
    seen = run_runner(face.command(ctx))
    assert seen["emore"] == {
        "num_classes": 13500000,
        "dataset_dir": "/data/x",  # no data_dir: synthetic input, the config's folder unused
        "train_data_part_num": 32,
    }
    assert seen["default"] == {"node_ips": HOSTS, "save_last_snapshot": False}
    argv = seen["argv"]
    assert "--train_batch_size=1024" in argv and "--use_fp16=True" in argv
    assert "--use_synthetic_data=True" in argv and "--model_parallel=True" in argv
    assert "--partial_fc=True" in argv and "--sample_ratio=0.1" in argv
    # one node, data given, the dataset's own number of classes
    data = {"source_root": str(checkout), "data_dir": "/data/emore ofrecord"}
    ctx = context(face, "insightface", "1n1g", 0, "fp32", False, tmp_path, data)
    seen = run_runner(face.command(ctx))
    assert seen["emore"]["num_classes"] == 85744
    assert seen["emore"]["dataset_dir"] == "/data/emore ofrecord"
    assert seen["default"]["node_ips"] == ["192.168.1.13"]
    assert "--use_synthetic_data=False" in seen["argv"]


def test_insightface_mxnet_runner_sets_default_config_after_generate_config(tmp_path: Path):
    checkout = tmp_path / "insightface"
    folder = checkout / "recognition/partial_fc/mxnet"
    (folder / "mxnet").mkdir(parents=True)
    (folder / "default.py").write_text(FAKE_DEFAULT)
    (folder / "train_memory.py").write_text(FAKE_TRAIN_MEMORY)
    (folder / "mxnet" / "__init__.py").write_text(FAKE_MXNET)  # stands in for MXNet
    mx = get_adapter("insightface")
    options = {"source_root": str(checkout), "num_classes": 1800000, "sample_ratio": 0.1}
    ctx = context(mx, "insightface", "1n8g", 0, "amp", False, tmp_path, options)
    cmd = mx.command(ctx)
    assert cmd[0] == "env" and "MXNET_CPU_WORKER_NTHREADS=3" in cmd
    assert "HOROVOD_CACHE_CAPACITY=0" in cmd and has(cmd, "-np", 8)
    seen = run_runner(cmd)
    assert seen["config"] == {
        "batch_size": BSZ,
        "fp16": True,
        "frequent": 1,
        "num_classes": 1800000,
        "max_update": ctx.steps,
        "sample_ratio": 0.1,
        "debug": 1,  # synthetic input (DummyIter), as DLPerf searched num_classes
    }
    assert seen["no_save"] is True  # checkpoints are not written, as DLPerf commented them out
    assert seen["argv"][:3] == ["--dataset=emore", "--network=r100", "--loss=arcface"]
    data = {"source_root": str(checkout), "data_dir": "/data/faces_emore/"}
    seen = run_runner(
        mx.command(context(mx, "insightface", "1n1g", 0, "fp32", False, tmp_path, data))
    )
    assert seen["config"]["num_classes"] == 85742  # the dataset's own
    assert seen["config"]["rec"] == "/data/faces_emore/train.rec"
    assert seen["config"]["debug"] == 0 and seen["config"]["fp16"] is False


@pytest.mark.parametrize("name", ["oneflow_face", "insightface"])
def test_insightface_num_classes_sweeps_and_max(name: str):
    adapter = get_adapter(name)
    adapter.check_case(case(name, "insightface", sweep={"num_classes": [1000000, 2000000]}))
    adapter.check_case(case(name, "insightface", precision=["amp"], sweep={"num_classes": ["max"]}))
    with pytest.raises(ConfigError, match=r"^\.sweep\.num_classes"):
        adapter.check_case(case(name, "insightface", sweep={"num_classes": ["many"]}))


def test_hugectr_vocabulary_and_embedding_width_as_dlperf_set_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """gen_hugectr_conf_json.py's edits: the vocabulary in both embeddings (not divided by the
    GPUs), the deep width in sparse_embedding1 and reshape1 (width x 26 deep slots)."""
    monkeypatch.setenv("SLURM_JOB_NODELIST", "gpu[01-04]")
    layers = [
        {
            "name": "data",
            "sparse": [{"top": "wide_data", "slot_num": 1}, {"top": "deep_data", "slot_num": 26}],
        },
        {
            "name": "sparse_embedding2",
            "sparse_embedding_hparam": {
                "max_vocabulary_size_per_gpu": 290350,
                "embedding_vec_size": 1,
            },
        },
        {
            "name": "sparse_embedding1",
            "sparse_embedding_hparam": {
                "max_vocabulary_size_per_gpu": 828103,
                "embedding_vec_size": 16,
            },
        },
        {"name": "reshape1", "leading_dim": 416},
    ]
    template = tmp_path / "wdl_7x1024.json"
    template.write_text(json.dumps({"solver": {}, "layers": layers}))
    hugectr = get_adapter("hugectr")
    options = {
        "config_template": str(template),
        "vocab_size": 25600000,
        "deep_embedding_vec_size": 32,
    }
    ctx = context(hugectr, "wide_deep", "4n8g", 0, "fp32", False, tmp_path, options, bsz=512)
    cmd = hugectr.command(ctx)
    conf = json.loads(Path(cmd[cmd.index("--train") + 1]).read_text())
    by_name = {layer["name"]: layer for layer in conf["layers"]}
    assert conf["solver"]["batchsize"] == 16384  # 512 per GPU x 32: DLPerf's total 16384
    for name in ("sparse_embedding1", "sparse_embedding2"):
        assert by_name[name]["sparse_embedding_hparam"]["max_vocabulary_size_per_gpu"] == 25600000
    assert by_name["sparse_embedding1"]["sparse_embedding_hparam"]["embedding_vec_size"] == 32
    assert by_name["sparse_embedding2"]["sparse_embedding_hparam"]["embedding_vec_size"] == 1
    assert by_name["reshape1"]["leading_dim"] == 32 * 26
    # 0 (the default) leaves the template alone and stays out of the measure
    cell = Cell("hugectr", "wide_deep", "fp32", False, 16384, Layout(4, 8))
    assert "vocab_size" not in hugectr.measured_options(cell, {})
    plain = context(
        hugectr,
        "wide_deep",
        "1n1g",
        0,
        "fp32",
        False,
        tmp_path,
        {"config_template": str(template)},
        bsz=16384,
    )
    cmd = hugectr.command(plain)
    assert json.loads(Path(cmd[cmd.index("--train") + 1]).read_text())["layers"] == layers
    hugectr.check_case(case("hugectr", "wide_deep", sweep={"vocab_size": [3200000, 6400000]}))
    with pytest.raises(ConfigError, match=r"^\.options\.vocab_size: HugeCTR release current"):
        hugectr.check_case(
            case(
                "hugectr",
                "wide_deep",
                options={"release": "current"},
                sweep={"vocab_size": [3200000]},
            )
        )


@pytest.mark.parametrize(
    ("framework", "model", "options", "tokens"),
    [
        ("pytorch", "gpt", {"seq_len": 2048}, 2048),  # the built-in's option
        ("pytorch", "bert_base", {}, 128),  # its default
        ("pytorch", "resnet50", {}, None),  # not a language model
        ("megatron", "gpt", {}, 2048),  # an upstream source's seq_len option
        ("ngc_pytorch", "bert_base", {}, 128),  # the sequence its scripts train
    ],
)
def test_tokens_per_sample_is_a_language_models_sequence(framework, model, options, tokens):
    adapter = get_adapter(framework)
    cell = Cell(framework, model, "amp", False, 8, Layout(1, 1), "default")
    assert adapter.tokens_per_sample(cell, adapter.resolved_options(options)) == tokens


@pytest.mark.parametrize(
    "options, message",
    [
        ({"extra_args": ["--x", None]}, r"\.options\.extra_args: None is not of type"),
        ({"extra_args": "--x"}, r"\.options\.extra_args: '--x' is not of type 'array'"),
        ({"env": {"1BAD": "x"}}, r"\.options\.env: '1BAD' does not match"),
        ({"env": {"NCCL_DEBUG": ["INFO"]}}, r"\.options\.env: \['INFO'\] is not of type"),
        ({"ssh_port": -1}, r"\.options\.ssh_port: -1 is less than the minimum of 0"),
        ({"ssh_port": "22"}, r"\.options\.ssh_port: '22' is not of type 'integer'"),
        ({"mpi_args": [True]}, r"\.options\.mpi_args: True is not of type"),
        ({"data_dir": 3}, r"\.options\.data_dir: 3 is not of type 'string'"),
    ],
)
def test_an_upstream_sources_shared_options_are_typed_before_anything_runs(options, message):
    """The options every upstream adapter shares are checked by their schemas (upstream.
    COMMON_TYPES), like every other option: arguments are strings or numbers, env names are
    names the shell takes, a port is not negative."""
    case = {
        "framework": "mxnet_gluoncv",
        "model": "resnet50",
        "batch_size": [8],
        "layouts": ["1n1g"],
    }
    adapter = get_adapter("mxnet_gluoncv")
    adapter.check_case(dict(case, options={"extra_args": ["--x", 1], "env": {"A": 2}}))
    with pytest.raises(ConfigError, match=message):
        adapter.check_case(dict(case, options=options))


@pytest.mark.parametrize(
    "framework, option, value, reached, other",
    [
        ("pytorch", "compile_mode", "reduce-overhead", "bert_base.fp32.xla.b2", "bert_base.fp32.noxla.b2"),
        ("pytorch", "cuda_amp_dtype", "bfloat16", "bert_base.amp.noxla.b2", "bert_base.fp32.noxla.b2"),
        ("jax", "amp_on_cpu", "run", "resnet50.amp.xla.b2", "resnet50.fp32.xla.b2"),
    ],
)  # fmt: skip
def test_an_option_reruns_only_the_cells_it_reaches(framework, option, value, reached, other):
    """compile_mode reaches compiled cells, amp_on_cpu amp ones (workloads.options.Option.
    reaches): a case that changes it reruns those alone; the others measure it at its default,
    so cells measured before it was set keep their digest."""
    assert _digest(framework, reached, {option: value}) != _digest(framework, reached, {})
    assert _digest(framework, other, {option: value}) == _digest(framework, other, {})


def _digest(framework: str, group_id: str, options: dict) -> str:
    site = {"environments": {"root": ".dlperf/envs", "python": {}}}
    config = {"window": {"warmup": 1, "measure": 2}, "device": "cpu", "site": site}
    cell = Cell.parse(f"{framework}.{group_id}.1n1g")
    return measure_digest(measure_of(CellSpec(cell, options), config))


@pytest.mark.parametrize(
    "framework, table",
    [("tensorflow", {"resnet50": 9}), ("ngc_pytorch", {"resnet50": {"fp32": 9, "amp": 18}})],
)
@pytest.mark.parametrize("batch", ["bmax", "b128"])
def test_max_batch_size_reruns_no_cell(framework, table, batch):
    """Review: every run trains at a number, a `max` cell's at what its search found
    (RunSpec.trained_cell); max_batch_size only sizes the plan's estimate of a `max` cell not
    yet searched. Yet a change of it redid every `max` cell's search and runs, and with an
    upstream source every cell of it, b128 too (`set it anew for other GPUs`, as
    config/dlperf_v1.yaml says). It is measured at its default (PLAN_ONLY_OPTIONS)."""
    group = f"resnet50.fp32.noxla.{batch}"
    assert _digest(framework, group, {"max_batch_size": table}) == _digest(framework, group, {})


@pytest.mark.parametrize(
    "framework, option, values, lists, unreached",
    [
        ("pytorch", "compile_mode", ["default", "reduce-overhead"], {"xla": [False, True]},
         "pytorch.resnet50.amp.noxla.b8-compile_mode_default.1n1g"),
        ("jax", "amp_on_cpu", ["run"], {"precision": ["amp", "fp32"]},
         "jax.resnet50.fp32.xla.b8-amp_on_cpu_run.1n1g"),
    ],
)  # fmt: skip
def test_a_sweep_over_cells_the_option_does_not_reach_is_an_error(
    framework, option, values, lists, unreached
):
    """Review: compile_mode swept in a case with xla [false, true] made an eager cell per value
    (b8-compile_mode_reduceomoverhead, ...) whose runs all trained eager, at the default: the
    same run measured twice, one of them named by a compile mode it never used."""
    case = {"framework": framework, "model": "resnet50", "batch_size": [8], "layouts": ["1n1g"]}
    reached = {"precision": ["amp"], "xla": [True], "sweep": {option: values}}
    (checked,) = validate({"cases": [case | reached]})["cases"]  # their own case: fine
    with pytest.raises(ConfigError, match=rf"^\.sweep\.{option}: .* and {re.escape(unreached)} is"):
        get_adapter(framework).check_case(checked | lists)


@pytest.mark.parametrize("framework", ["megatron", "oneflow_gpt"])
@pytest.mark.parametrize(
    "extra, message",
    [
        (
            {"layouts": ["1n1g", "1n8g"], "sweep": {"tensor_parallel": [1, 8]}},
            ".layouts: 1n1g has 1 devices, not a multiple of tensor_parallel x "
            "pipeline_parallel = 8 x 1",
        ),
        (
            {"layouts": ["1n8g"], "sweep": {"pipeline_parallel": [1, 3]}},
            ".layouts: 1n8g has 8 devices, not a multiple of tensor_parallel x "
            "pipeline_parallel = 1 x 3",
        ),
        (
            {"layouts": ["1n8g"], "batch_size": [4], "options": {"global_batch_size": 7}},
            ".options.global_batch_size: 7 is not a multiple of micro batch 4 x data parallel 8",
        ),
    ],
)
def test_a_gpt_parallel_layout_that_cannot_split_its_devices_is_refused(framework, extra, message):
    """Review: TP 8 on 1 GPU, PP 3 on 8 and a global batch of 7 were accepted (gpt_args hid it
    with max(1, world // (tp x pp))); Megatron-LM stops at start-up, after the job queued."""
    adapter = get_adapter(framework)
    with pytest.raises(ConfigError, match=re.escape(message)):
        adapter.check_case(case(framework, "gpt", **extra))
    fits = {"layouts": ["1n8g", "2n8g"], "sweep": {"tensor_parallel": [1, 8]}}
    adapter.check_case(case(framework, "gpt", **fits))
