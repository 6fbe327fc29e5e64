"""Option `release` of the upstream adapters: DLPerf v1.0's pins stay the default, byte for byte;
another release changes the command, launcher, container and parser, and what a run measures.

The argument names asserted for release `current` were read from NVIDIA/DeepLearningExamples at
729963dd47e7c8bd462ad10bfac7a7b0b604e6dd: PyTorch/Classification/ConvNets/main.py (+ configs.yml,
image_classification/models/resnet.py), PyTorch/LanguageModeling/BERT/run_pretraining.py (+
scripts/run_pretraining.sh) and TensorFlow/Classification/ConvNets/utils/cmdline_helper.py (+
resnet50v1.5/training/training_perf.sh). Those of `oneflow_wdl` release `current` were read from
Oneflow-Inc/models at fc7cbf8da9b2ee21fa0e9613dd0668c3b45dad4d (RecommenderSystems/wide_and_deep:
train.py, config.py, utils/logger.py, models/data.py; Vision/classification/image/resnet50:
train.py, config.py, graph.py, models/data.py, utils/logger.py, examples/train_graph_distributed_fp32.sh
and _fp16.sh) and OneFlow v0.9.0's python/oneflow/distributed/launch.py. Those of `oneflow_gpt`
release `current` from Oneflow-Inc/libai v0.3.0 (1185ad9ca3fec9977ca1c2501b5d4c42c1b86ff3):
tools/train_net.py, tools/train.sh, configs/gpt2_pretrain.py, configs/common/train.py,
configs/common/models/gpt.py, configs/common/data/gpt_dataset.py, libai/config/lazy.py,
libai/engine/default.py, libai/engine/hooks.py, libai/engine/trainer.py, libai/utils/events.py
and libai/utils/logger.py. Those of `megatron` release `current` from NVIDIA/Megatron-LM
core_v0.19.0 (5be9626709af2722333bf54797c954c09edeada3): megatron/training/arguments.py,
megatron/training/config/training_config.py, megatron/core/transformer/transformer_config.py,
megatron/core/model_parallel_config.py and examples/gpt3/train_gpt3_175b_distributed.sh. Those
of `mindspore` release `current` from mindspore-ai/models at
eab643f51336dbf7d711f02d27e6516e5affee59: official/cv/ResNet/gpu_resnet_benchmark.py,
config/resnet_benchmark_GPU.yaml, src/model_utils/config.py and
scripts/run_gpu_resnet_benchmark.sh; for BERT official/nlp/Bert/run_pretrain.py,
pretrain_config.yaml, src/model_utils/config.py, src/dataset.py and
scripts/run_distributed_pretrain_for_gpu.sh. `ngc_tensorflow` BERT at DLE 729963d:
TensorFlow/LanguageModeling/BERT/run_pretraining.py and scripts/run_pretraining_adam.sh. Those of `paddle` release `current` from
PaddlePaddle/PaddleClas release/2.5.2
(c1325704cfcd050259ad752a899b0c425e2a7b00: tools/train.py, ppcls/utils/config.py,
ppcls/engine/engine.py, ppcls/configs/ImageNet/ResNet/ResNet50.yaml and ResNet50_amp_O1.yaml),
PaddlePaddle/PaddleNLP c502c9213fc22a210b139ec669a369ee22d0bf45 (slm/model_zoo/bert/run_pretrain.py)
and Paddle's python/paddle/distributed/launch/context/args_envs.py. Those of `tensorflow2`
release `current` BERT from tensorflow/models (official/nlp/train.py,
official/nlp/configs/pretraining_experiments.py, official/nlp/data/pretrain_dataloader.py,
official/nlp/tasks/masked_lm.py, official/nlp/configs/encoders.py,
official/modeling/optimization/configs/learning_rate_config.py, as stored at 00b830c7 or
00d83f37). Those of `pytorch_examples` release `current` from pytorch/examples at
77f55b912142e11fcfdf5b530231fb9c52f181e8: imagenet/main.py, README.md and requirements.txt.
Those of `hugectr` release `current` from NVIDIA-Merlin/HugeCTR v24.06.00
(a89cf40460b3e73d77a8d84264a001c253730576): samples/wdl/wdl_8gpu.py and README.md,
samples/dcn/README.md, HugeCTR/include/pybind/solver_wrapper.hpp and model_wrapper.hpp,
HugeCTR/src/pybind/model.cpp, HugeCTR/core23/logger.cpp. Those of `ngc_mxnet` release `current`
from DLE 729963d: MxNet/Classification/RN50v1.5/fit.py, models.py, data.py, runner,
log_utils.py and requirements.txt, with NVIDIA/dllogger v0.1.0's dllogger/logger.py.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_adapters import check_layout, context, fixture_cell, has, run_folder

from dlperf.adapters import REGISTRY, get_adapter, without_dali
from dlperf.adapters.releases import DEFAULT_RELEASE
from dlperf.adapters.upstream import UpstreamAdapter
from dlperf.errors import ConfigError
from dlperf.launch.measured import measure_digest, measure_of
from dlperf.matrix import Cell, CellSpec, Layout
from dlperf.measure.runs import read_run
from dlperf.measure.stats import Window, run_throughput
from dlperf.parse.records import ParseError
from dlperf.paths import RunPaths

FIXTURES = Path(__file__).parent / "fixtures" / "logs"
UPSTREAM = {name: cls for name, cls in REGISTRY.items() if issubclass(cls, UpstreamAdapter)}
CURRENT = {"release": "current"}
TF_MODELS_COMMIT = "00b830c7ca641413f37e5147cf059c89f79b0e8e"


def case(framework: str, model: str, **options: object) -> dict:
    return {
        "framework": framework,
        "model": model,
        "precision": ["fp32", "amp"],
        "xla": [False],
        "batch_size": [64],
        "layouts": ["1n1g"],
        "options": dict(options),
    }


# ----------------------------------------------------------------------------- the default


@pytest.mark.parametrize("name", sorted(UPSTREAM))
def test_default_release_is_dlperf_v1_and_left_out_of_the_measure(name: str):
    """Every upstream adapter takes `release`; its default (or naming it) measures the same
    options as before releases existed, so DLPerf v1.0 cells measure and stay fresh as they were;
    a run is still launched with it."""
    adapter = get_adapter(name)
    assert adapter.options["release"] == DEFAULT_RELEASE
    cell = Cell(name, "resnet50", "fp32", False, 8, Layout(1, 1))
    assert "release" not in adapter.measured_options(cell, {})
    assert adapter.measured_options(cell, {"release": DEFAULT_RELEASE}) == adapter.measured_options(
        cell, {}
    )
    assert adapter.resolved_options({})["release"] == DEFAULT_RELEASE
    assert adapter.release(adapter.resolved_options({})) is None


@pytest.mark.parametrize("name", sorted(UPSTREAM))
def test_default_release_command_is_unchanged_when_named(name: str, tmp_path: Path):
    adapter = get_adapter(name)
    model = next(iter(adapter.models))
    options: dict = {"data_dir": "/data/set", "bert_config": "/data/bert_config.json"}
    if "config_template" in adapter.options:
        template = tmp_path / "wdl.json"
        template.write_text('{"solver": {}, "layers": []}')
        options["config_template"] = str(template)
    options = {k: v for k, v in options.items() if k in adapter.options}
    plain = adapter.command(context(adapter, model, "1n1g", 0, "fp32", False, tmp_path, options))
    named = adapter.command(
        context(
            adapter, model, "1n1g", 0, "fp32", False, tmp_path, options | {"release": "dlperf_v1"}
        )
    )
    assert plain == named


def test_unknown_release_is_a_config_error_naming_the_choices():
    with pytest.raises(ConfigError, match=r"^\.options\.release: .*dlperf_v1"):
        get_adapter("mxnet_gluoncv").check_case(
            case("mxnet_gluoncv", "resnet50", release="current")
        )
    with pytest.raises(ConfigError, match=r"'dlperf_v1', 'current'"):
        get_adapter("ngc_pytorch").check_case(case("ngc_pytorch", "resnet50", release="2025"))


def test_a_release_without_the_model_is_a_config_error():
    with pytest.raises(ConfigError, match=r"release current has no bert_base benchmark"):
        get_adapter("oneflow").check_case(case("oneflow", "bert_base", **CURRENT))
    get_adapter("tensorflow2").check_case(case("tensorflow2", "bert_base", **CURRENT))
    get_adapter("ngc_tensorflow").check_case(case("ngc_tensorflow", "bert_base", **CURRENT))


def test_a_non_default_release_is_part_of_what_a_run_measures():
    """What a run measures (dlperf.launch.measured.measure_of, the run rule's param) holds the
    resolved options: `release` is among them for another release (a rerun when it changes),
    and the cell id does not carry it."""
    adapter = get_adapter("ngc_pytorch")
    assert adapter.resolved_options(CURRENT)["release"] == "current"
    assert adapter.resolved_options(CURRENT) != adapter.resolved_options({})
    cell = Cell("ngc_pytorch", "resnet50", "amp", False, 256, Layout(1, 8))
    assert cell.id == "ngc_pytorch.resnet50.amp.noxla.b256.1n8g"
    config = {"window": {"warmup": 20, "measure": 100}, "device": "cuda"}
    current = measure_of(CellSpec(cell, CURRENT), config)
    assert current["options"]["release"] == "current"
    assert measure_digest(current) != measure_digest(measure_of(CellSpec(cell, {}), config))


# ----------------------------------------------------------------------------- NGC PyTorch


def test_ngc_pytorch_current_release_facts():
    adapter = get_adapter("ngc_pytorch")
    options = adapter.resolved_options(CURRENT)
    assert adapter.environment_of(options) == "nvcr.io/nvidia/pytorch:24.03-py3"
    assert adapter.environment_of(adapter.resolved_options({})) == adapter.environment
    assert adapter.launch_of(options) == "torchrun"
    assert adapter.source_of("resnet50", options).tag == "729963dd47e7c8bd462ad10bfac7a7b0b604e6dd"
    assert adapter.parser_of("bert_base", options).__name__ == "parse_dle_pytorch_bert_current"
    assert adapter.parser_of("resnet50", options).__name__ == "parse_dle_pytorch_rn50"


@pytest.mark.parametrize("layout", ["1n1g", "2n8g"])
def test_ngc_pytorch_current_resnet50_command(layout: str, tmp_path: Path):
    adapter = get_adapter("ngc_pytorch")
    for node in range(Layout.parse(layout).nodes):
        ctx = context(adapter, "resnet50", layout, node, "amp", False, tmp_path, dict(CURRENT))
        cmd = adapter.command(ctx)
        assert "torch.distributed.run" in cmd and "torch.distributed.launch" not in cmd
        check_layout(
            "torch", [a.replace("distributed.run", "distributed.launch") for a in cmd], ctx
        )
        assert cmd[cmd.index("torch.distributed.run") + 6].endswith(
            "/PyTorch/Classification/ConvNets/main.py"
        )
        for flag, value in [
            ("--data-backend", "synthetic"),  # no longer `syntetic`
            ("--batch-size", 64),
            ("--prof", ctx.steps),
            ("--print-freq", 1),
            ("--momentum", 0.875),
            ("--weight-decay", "3.0517578125e-05"),
            ("--static-loss-scale", 128),  # configs.yml AMP; --dynamic-loss-scale is gone
            ("--memory-format", "nhwc"),
            ("--raport-file", f"raport_node{node}.json"),
        ]:
            assert has(cmd, flag, value), (flag, value, cmd)
        assert has(cmd, "--amp") and has(cmd, "--training-only") and has(cmd, "--no-checkpoints")
        assert not {"--dynamic-loss-scale", "-c", "--mom", "syntetic"} & set(cmd)
    fp32 = adapter.command(
        context(adapter, "resnet50", "1n1g", 0, "fp32", False, tmp_path, dict(CURRENT))
    )
    assert not {"--amp", "--static-loss-scale", "--memory-format"} & set(fp32)
    with_data = adapter.command(
        context(
            adapter, "resnet50", "1n1g", 0, "fp32", False, tmp_path, CURRENT | {"data_dir": "/in"}
        )
    )
    assert has(with_data, "--data-backend", "dali-cpu") and with_data[-1] == "/in"


def test_ngc_pytorch_without_dali_runs_main_py_through_the_wrapper(tmp_path: Path):
    adapter = get_adapter("ngc_pytorch")
    options = CURRENT | {"without_dali": True}
    cmd = adapter.command(context(adapter, "resnet50", "1n1g", 0, "amp", False, tmp_path, options))
    wrapper = cmd.index(without_dali.__file__)
    assert cmd[wrapper + 1].endswith("/PyTorch/Classification/ConvNets/main.py")
    assert cmd[wrapper + 2] == "--data-backend"  # main.py's own arguments follow it unchanged
    plain = adapter.command(
        context(adapter, "resnet50", "1n1g", 0, "amp", False, tmp_path, CURRENT)
    )
    assert [a for a in cmd if a != without_dali.__file__] == plain


# What ConvNets' image_classification/dataloaders.py does at DLE 729963d (the H100 run of
# 2026-11-27 stopped at the class statement with NameError): a guarded import, then the subclass
DLE_DATALOADERS_PATTERN = """
import sys
try:
    from nvidia.dali.plugin.pytorch import DALIClassificationIterator
    from nvidia.dali.pipeline import Pipeline
    import nvidia.dali.ops as ops
    import nvidia.dali.types as types
except ImportError:
    print("Please install DALI")

class HybridTrainPipe(Pipeline):
    pass

print("trained with", sys.argv[1:], "from", sys.path[0])
try:
    HybridTrainPipe()
except ImportError as err:
    print("pipeline:", err)
"""


def test_without_dali_lets_convnets_main_py_start_without_dali(tmp_path: Path):
    script = tmp_path / "convnets" / "main.py"
    script.parent.mkdir()
    script.write_text(DLE_DATALOADERS_PATTERN)
    bare = subprocess.run(
        [sys.executable, str(script), "--data-backend", "synthetic"], capture_output=True, text=True
    )
    assert "NameError: name 'Pipeline' is not defined" in bare.stderr  # the failure it fixes
    run = subprocess.run(
        [sys.executable, without_dali.__file__, str(script), "--data-backend", "synthetic"],
        capture_output=True,
        text=True,
        check=True,
    )
    lines = run.stdout.splitlines()
    assert lines[0] == f"trained with ['--data-backend', 'synthetic'] from {script.parent}"
    assert (
        lines[1]
        == "pipeline: NVIDIA DALI is not installed: choose --data-backend synthetic or pytorch"
    )


def test_ngc_pytorch_current_bert_command(tmp_path: Path):
    adapter = get_adapter("ngc_pytorch")
    options = CURRENT | {"data_dir": "/data/phase1/parquet"}
    ctx = context(adapter, "bert_base", "1n8g", 0, "amp", False, tmp_path, options)
    cmd = adapter.command(ctx)
    folder = "/workspace/DeepLearningExamples/PyTorch/LanguageModeling/BERT"
    assert f"{folder}/run_pretraining.py" in cmd and "torch.distributed.run" in cmd
    for flag, value in [
        ("--input_dir", "/data/phase1/parquet"),
        ("--config_file", f"{folder}/bert_configs/base.json"),
        ("--vocab_file", f"{folder}/vocab/vocab"),  # required by the current script
        ("--train_batch_size", 64),
        ("--max_seq_length", 128),
        ("--max_predictions_per_seq", 20),
        ("--max_steps", ctx.steps),
        ("--num_workers", 8),
    ]:
        assert has(cmd, flag, value), (flag, value, cmd)
    for flag in ("--do_train", "--skip_checkpoint", "--disable_progress_bar", "--fp16"):
        assert flag in cmd
    assert not any(a.startswith("--bert_model") for a in cmd)  # gone from the current script


def test_ngc_pytorch_current_parses_through_the_adapter(tmp_path: Path):
    adapter = get_adapter("ngc_pytorch")
    for model, fixture, expected in [
        (
            "resnet50",
            FIXTURES / "dle_pytorch_rn50_current" / "1n1g_rn50_b256_amp_1.log",
            20 * 256 / (10 * 0.086 + 10 * 0.084),
        ),
        (
            "bert_base",
            FIXTURES / "dle_pytorch_bert_current" / "1n8g_bert_b96_amp_1.log",
            20 * 96 * 8 / (5 * 0.125 + 15 * 0.115),
        ),
    ]:
        cell = fixture_cell(adapter, model, fixture)
        (tmp_path / model).mkdir()
        logs = run_folder(fixture, cell, tmp_path / model)
        result = adapter.parse(logs, cell, adapter.resolved_options(CURRENT))
        tp = run_throughput(result, Window(5, 20))
        assert tp.throughput_samples_per_s == pytest.approx(expected, rel=1e-6), model


# ----------------------------------------------------------------------------- NGC TensorFlow


def test_ngc_tensorflow_current_release_is_the_last_tf1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("SLURM_JOB_NODELIST", "gpu[01-02]")
    adapter = get_adapter("ngc_tensorflow")
    options = adapter.resolved_options(CURRENT)
    assert adapter.environment_of(options) == "nvcr.io/nvidia/tensorflow:23.03-tf1-py3"
    assert adapter.launch_of(options) == "horovodrun"
    ctx = context(adapter, "resnet50", "2n8g", 0, "amp", True, tmp_path, dict(CURRENT))
    cmd = adapter.command(ctx)
    check_layout("horovodrun", cmd, ctx)
    for flag, value in [
        ("--mode", "training_benchmark"),
        ("--iter_unit", "batch"),
        ("--num_iter", ctx.steps),
        ("--batch_size", 64),
        ("--warmup_steps", 0),
        ("--display_every", 1),
        ("--static_loss_scale", 128),
    ]:
        assert has(cmd, flag, value), (flag, value, cmd)
    assert {"--amp", "--xla", "--cosine_lr"} <= set(cmd)
    assert not {"--use_tf_amp", "--use_xla", "--use_cosine_lr", "--mode=train"} & set(cmd)
    with_dali = adapter.command(
        context(
            adapter,
            "resnet50",
            "1n1g",
            0,
            "fp32",
            False,
            tmp_path,
            CURRENT | {"data_dir": "/d/tfrecords", "dali": True},
        )
    )
    assert "--dali" in with_dali and has(with_dali, "--data_idx_dir", "/d/dali_idx")
    assert "--use_dali" not in with_dali


def test_ngc_tensorflow_current_bert_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """TensorFlow/LanguageModeling/BERT/run_pretraining.py at 729963d: `--amp` and `--use_xla`
    default to True, so both are said either way (scripts/run_pretraining_adam.sh's --amp/--noamp,
    --use_xla/--nouse_xla); `--use_fp16` is gone; one line per step; dllogger's JSON in the run."""
    monkeypatch.setenv("SLURM_JOB_NODELIST", "gpu[01-02]")
    adapter = get_adapter("ngc_tensorflow")
    options = CURRENT | {"data_dir": "/data/tfrecord/training"}
    ctx = context(adapter, "bert_base", "2n8g", 0, "amp", True, tmp_path, options)
    cmd = adapter.command(ctx)
    check_layout("horovodrun", cmd, ctx)
    folder = "/workspace/DeepLearningExamples/TensorFlow/LanguageModeling/BERT"
    script = f"{folder}/run_pretraining.py"
    assert cmd[cmd.index(script) + 1 :] == [
        "--input_files_dir=/data/tfrecord/training",
        "--eval_files_dir=/data/tfrecord/training",
        f"--output_dir={tmp_path / 'tf_bert_output'}",
        f"--dllog_path={tmp_path / 'tf_bert_dllog.json'}",
        f"--bert_config_file={folder}/data/bert_config.json",
        "--do_train=True",
        "--do_eval=False",
        "--train_batch_size=64",
        "--eval_batch_size=32",
        "--max_seq_length=128",
        "--max_predictions_per_seq=20",
        f"--num_train_steps={ctx.steps}",
        "--num_warmup_steps=10000",
        "--num_accumulation_steps=1",
        "--save_checkpoints_steps=1000000",
        "--display_loss_steps=1",
        "--learning_rate=1e-4",
        "--optimizer_type=adam",
        "--horovod",
        "--allreduce_post_accumulation=False",
        "--amp",
        "--use_xla",
    ]
    plain = adapter.command(
        context(adapter, "bert_base", "1n1g", 0, "fp32", False, tmp_path, options)
    )
    assert plain[-2:] == ["--noamp", "--nouse_xla"]
    assert "--use_fp16" not in plain
    v1 = adapter.command(
        context(adapter, "bert_base", "1n1g", 0, "amp", False, tmp_path, {"data_dir": "/d"})
    )
    assert "--use_fp16" in v1 and not {"--amp", "--noamp", "--nouse_xla"} & set(v1)
    assert adapter.parser_of("bert_base", adapter.resolved_options(CURRENT)).__name__ == (
        "parse_dle_tf1_bert_current"
    )


def test_ngc_tensorflow_current_bert_parses_through_the_adapter(tmp_path: Path):
    adapter = get_adapter("ngc_tensorflow")
    fixture = FIXTURES / "dle_tf1_bert_current" / "1n8g_bert_b64_amp_1.log"
    cell = fixture_cell(adapter, "bert_base", fixture)
    result = adapter.parse(
        run_folder(fixture, cell, tmp_path), cell, adapter.resolved_options(CURRENT)
    )
    tp = run_throughput(result, Window(5, 20))
    # lines 6..25, one iteration each (the first four repeat `Iteration: 1`): 10 * 0.25 + 10 * 0.27
    assert tp.throughput_samples_per_s == pytest.approx(20 * 64 * 8 / 5.2, rel=1e-6)
    assert (tp.window_first_step, tp.window_last_step) == (6, 25)


def test_ngc_tensorflow_current_parses_through_the_adapter(tmp_path: Path):
    adapter = get_adapter("ngc_tensorflow")
    fixture = FIXTURES / "dle_tf1_rn50_benchmark" / "1n8g_rn50_b256_amp_1.log"
    cell = fixture_cell(adapter, "resnet50", fixture)
    result = adapter.parse(
        run_folder(fixture, cell, tmp_path), cell, adapter.resolved_options(CURRENT)
    )
    tp = run_throughput(result, Window(5, 20))
    assert tp.throughput_samples_per_s == pytest.approx(
        20 * 256 * 8 / (10 * 0.090 + 10 * 0.088), rel=1e-6
    )


def test_the_manifest_names_the_release_that_ran():
    from dlperf.launch.outcome import adapter_summary as _adapter_summary

    adapter = get_adapter("ngc_pytorch")
    default = _adapter_summary("ngc_pytorch", adapter.resolved_options({}))
    assert default == {"name": "ngc_pytorch", "version": adapter.version, "launcher": "per_node"}
    current = _adapter_summary("ngc_pytorch", adapter.resolved_options(CURRENT))
    assert current["release"] == "current" and "NGC 24.03" in current["version"]
    # the image the release names is no claim of the run's: it may have run without it
    assert "environment" not in current
    assert "release" not in _adapter_summary("pytorch", {})


# ----------------------------------------------------------------------------- TensorFlow models


def test_tensorflow2_current_resnet50_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """official/vision/train.py's flags (--experiment, --mode, --model_dir, --params_override) and
    the config fields of official/core/config_definitions.py; the batch is global."""
    import json

    monkeypatch.setenv("SLURM_JOB_NODELIST", "gpu[01-02]")
    adapter = get_adapter("tensorflow2")
    options = CURRENT | {"data_dir": "/data/imagenet/tfrecords"}
    ctx = context(adapter, "resnet50", "2n8g", 1, "amp", False, tmp_path, options)
    cmd = adapter.command(ctx)
    assert any(a.endswith("/official/vision/train.py") for a in cmd)
    assert "--experiment=resnet_imagenet" in cmd and "--mode=train" in cmd
    override = json.loads(
        next(a for a in cmd if a.startswith("--params_override=")).split("=", 1)[1]
    )
    assert override["task"]["train_data"]["global_batch_size"] == 64 * 16
    assert override["task"]["train_data"]["input_path"] == "/data/imagenet/tfrecords/train*"
    assert override["runtime"]["enable_xla"] is False  # resnet_imagenet turns it on by default
    assert override["runtime"]["mixed_precision_dtype"] == "float16"
    assert override["runtime"]["distribution_strategy"] == "multi_worker_mirrored"
    assert override["trainer"]["train_steps"] == ctx.steps
    assert override["trainer"]["steps_per_loop"] == 100
    tf_config = json.loads(next(a for a in cmd if a.startswith("TF_CONFIG=")).split("=", 1)[1])
    assert tf_config == {
        "cluster": {"worker": ["gpu01:29517", "gpu02:29517"]},
        "task": {"index": 1, "type": "worker"},
    }
    single = adapter.command(
        context(adapter, "resnet50", "1n1g", 0, "fp32", True, tmp_path, options)
    )
    assert not any(a.startswith("TF_CONFIG=") for a in single)


def test_tensorflow2_current_needs_tfrecords_and_no_bert_config():
    """Both experiments read TFRecords only; BERT-base is bert/pretraining's default encoder, so
    release current needs no bert_config (DLPerf v1.0's run_pretraining.py still does)."""
    adapter = get_adapter("tensorflow2")
    for model in ("resnet50", "bert_base"):
        cell = Cell("tensorflow2", model, "fp32", False, 64, Layout(1, 1))
        assert "TFRecords" in adapter.skip_reason(cell, adapter.resolved_options(CURRENT))
        with_data = adapter.resolved_options(CURRENT | {"data_dir": "/d"})
        assert adapter.skip_reason(cell, with_data) is None
        adapter.check_case(case("tensorflow2", model, **CURRENT))
    bert = Cell("tensorflow2", "bert_base", "fp32", False, 64, Layout(1, 1))
    assert "bert_config" in adapter.skip_reason(bert, adapter.resolved_options({"data_dir": "/d"}))
    options = adapter.resolved_options(CURRENT)
    assert adapter.parser_of("bert_base", options).__name__ == "parse_tf2_orbit"
    assert adapter.release(options).models["bert_base"].tag == TF_MODELS_COMMIT
    assert adapter.parser_of("bert_base", adapter.resolved_options({})).__name__ == "parse_tf2_bert"


def test_tensorflow2_current_bert_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """official/nlp/train.py --experiment=bert/pretraining (pretraining_experiments.py), the
    fields of BertPretrainDataConfig (pretrain_dataloader.py) and TrainerConfig; the batch is
    global; XLA set either way (the experiment turns it on)."""
    import json

    monkeypatch.setenv("SLURM_JOB_NODELIST", "gpu[01-02]")
    adapter = get_adapter("tensorflow2")
    options = CURRENT | {"data_dir": "/data/bert/tfrecords"}
    ctx = context(adapter, "bert_base", "2n8g", 0, "amp", True, tmp_path, options)
    cmd = adapter.command(ctx)
    train = cmd.index("/workspace/tf-models/official/nlp/train.py")
    assert cmd[train + 1 : train + 4] == [
        "--experiment=bert/pretraining",
        "--mode=train",
        f"--model_dir={tmp_path / 'tf2_model_node0'}",
    ]
    override = json.loads(cmd[train + 4].split("=", 1)[1])
    assert len(cmd) == train + 5
    assert override["task"] == {
        "train_data": {
            "input_path": "/data/bert/tfrecords/*",
            "global_batch_size": 64 * 16,
            "seq_length": 128,
            "max_predictions_per_seq": 20,
        }
    }
    assert override["runtime"] == {
        "num_gpus": 8,
        "enable_xla": True,
        "distribution_strategy": "multi_worker_mirrored",
        "all_reduce_alg": "nccl",
        "mixed_precision_dtype": "float16",
        "loss_scale": "dynamic",
    }
    trainer = override["trainer"]
    assert trainer["train_steps"] == ctx.steps and trainer["steps_per_loop"] == 100
    assert trainer["summary_interval"] == 100
    assert trainer["checkpoint_interval"] == 0 and trainer["validation_interval"] > ctx.steps
    assert trainer["optimizer_config"] == {
        "learning_rate": {"polynomial": {"decay_steps": 1000000}},
        "warmup": {"polynomial": {"warmup_steps": 10000}},
    }
    tf_config = json.loads(next(a for a in cmd if a.startswith("TF_CONFIG=")).split("=", 1)[1])
    assert tf_config["task"] == {"index": 0, "type": "worker"}
    assert not any(a.startswith("--bert_config_file") for a in cmd)
    single = adapter.command(
        context(adapter, "bert_base", "1n1g", 0, "fp32", False, tmp_path, options)
    )
    override = json.loads(next(a for a in single if a.startswith("--params_override="))[18:])
    assert override["runtime"]["enable_xla"] is False
    assert override["runtime"]["distribution_strategy"] == "mirrored"
    assert "mixed_precision_dtype" not in override["runtime"]
    assert override["task"]["train_data"]["global_batch_size"] == 64
    assert not any(a.startswith("TF_CONFIG=") for a in single)


def test_tensorflow2_current_parses_through_the_adapter(tmp_path: Path):
    adapter = get_adapter("tensorflow2")
    fixture = FIXTURES / "tf2_orbit" / "1n8g_rn50_b256_amp_1.log"
    cell = fixture_cell(adapter, "resnet50", fixture)
    result = adapter.parse(
        run_folder(fixture, cell, tmp_path), cell, adapter.resolved_options(CURRENT)
    )
    tp = run_throughput(result, Window(100, 300))
    assert tp.throughput_samples_per_s == pytest.approx(300 * 2048 / (8.80 + 8.70 + 8.75), rel=1e-6)


def test_tensorflow2_current_bert_parses_through_the_adapter(tmp_path: Path):
    """The orbit line of official/nlp/train.py, read by the ResNet-50's parser; sequences."""
    adapter = get_adapter("tensorflow2")
    fixture = FIXTURES / "tf2_orbit_bert" / "1n8g_bert_b64_amp_1.log"
    cell = fixture_cell(adapter, "bert_base", fixture)
    logs = run_folder(fixture, cell, tmp_path)
    result = adapter.parse(logs, cell, adapter.resolved_options(CURRENT))
    tp = run_throughput(result, Window(100, 300))
    assert tp.throughput_samples_per_s == pytest.approx(300 * 512 / (27.50 + 27.00 + 27.30))
    with pytest.raises(ParseError, match="Train Step"):
        adapter.parse(logs, cell, adapter.resolved_options({}))  # DLPerf v1.0's parser


# ----------------------------------------------------------------------------- pytorch/examples


PT_EXAMPLES_COMMIT = "77f55b912142e11fcfdf5b530231fb9c52f181e8"
IMAGENET_MAIN = "/workspace/pytorch-examples/imagenet/main.py"


def test_pytorch_examples_current_release_facts():
    """pytorch/examples main (77f55b9), imagenet/main.py; NGC PyTorch 25.12; the same parser."""
    adapter = get_adapter("pytorch_examples")
    options = adapter.resolved_options(CURRENT)
    release = adapter.release(options)
    assert release.models["resnet50"].tag == PT_EXAMPLES_COMMIT
    assert release.environment == "nvcr.io/nvidia/pytorch:25.12-py3"
    assert adapter.parser_of("resnet50", options).__name__ == "parse_pytorch_examples"
    assert adapter.script("resnet50", options) == IMAGENET_MAIN
    with pytest.raises(ConfigError, match="runs resnet50 in fp32 only"):
        adapter.check_case(case("pytorch_examples", "resnet50", **CURRENT))  # still no AMP
    cell = Cell("pytorch_examples", "resnet50", "fp32", False, 64, Layout(1, 1))
    assert adapter.skip_reason(cell, options) is None  # --dummy
    assert "data_dir" in adapter.skip_reason(cell, adapter.resolved_options({}))


@pytest.mark.parametrize("layout", ["1n1g", "2n8g"])
def test_pytorch_examples_current_command(layout: str, tmp_path: Path):
    """main.py's flags (-a, -b per node, -j, -p, --epochs, --dist-url, --dist-backend,
    --multiprocessing-distributed, --world-size, --rank) and `--dummy` in place of DIR; no step
    limit, so stop_after wraps it, one progress line per GPU of the node."""
    adapter = get_adapter("pytorch_examples")
    ctx = context(adapter, "resnet50", layout, 0, "fp32", False, tmp_path, CURRENT)
    cmd = adapter.command(ctx)
    assert cmd[1:3] == ["-m", "dlperf.adapters.stop_after"]
    assert cmd[cmd.index("--lines") + 1] == str(ctx.gpus_per_node)
    assert cmd[cmd.index("--step") + 1] == str(ctx.steps)
    assert re.search(cmd[cmd.index("--pattern") + 1], "Epoch: [0][   1/5005]\tTime  3.100")
    assert cmd[cmd.index(IMAGENET_MAIN) + 1 :] == [
        "-a",
        "resnet50",
        "-b",
        str(64 * ctx.gpus_per_node),
        "-j",
        "8",
        "-p",
        "1",
        "--epochs",
        "1",
        "--dist-url",
        f"tcp://{ctx.master_addr}:{ctx.master_port}",
        "--dist-backend",
        "nccl",
        "--multiprocessing-distributed",
        "--world-size",
        str(ctx.nodes),
        "--rank",
        "0",
        "--dummy",
    ]
    real = adapter.command(
        context(
            adapter, "resnet50", layout, 0, "fp32", False, tmp_path, CURRENT | {"data_dir": "/i"}
        )
    )
    assert real[-1] == "/i" and "--dummy" not in real
    v1 = adapter.command(
        context(adapter, "resnet50", layout, 0, "fp32", False, tmp_path, {"data_dir": "/i"})
    )
    assert v1 == real  # the same flags; only the checkout (and container) differ


def test_pytorch_examples_current_parses_through_the_adapter(tmp_path: Path):
    adapter = get_adapter("pytorch_examples")
    fixture = FIXTURES / "pytorch_examples_current" / "1n2g_rn50_b128_fp32_1.log"
    cell = fixture_cell(adapter, "resnet50", fixture)
    result = adapter.parse(
        run_folder(fixture, cell, tmp_path), cell, adapter.resolved_options(CURRENT)
    )
    assert [r.step for r in result.records if r.rank == 0][:3] == [1, 2, 3]  # 1-based now
    assert all(r.steps == 1 for r in result.records)
    tp = run_throughput(result, Window(2, 16))
    # batches 3..18 of both ranks; rank 1 is the slower: 16 * 0.121 s
    assert tp.throughput_samples_per_s == pytest.approx(2 * 16 * 128 / (16 * 0.121), rel=1e-9)


# ----------------------------------------------------------------------------- OneFlow W&D


WDL_SCRIPT = "/workspace/models/RecommenderSystems/wide_and_deep/train.py"


def test_oneflow_wdl_current_release_facts():
    """Oneflow-Inc/models at fc7cbf8 (wide_and_deep last changed 87d4561), OneFlow 0.9.0 cu118."""
    adapter = get_adapter("oneflow_wdl")
    options = adapter.resolved_options(CURRENT)
    assert adapter.environment_of(options) == "envs/oneflow_current.yaml"
    assert (Path(__file__).parents[1] / "envs" / "oneflow_current.yaml").is_file()
    assert adapter.environment_of(adapter.resolved_options({})) == "envs/oneflow.yaml"
    assert adapter.launch_of(options) == "oneflow"
    assert adapter.launch_of(adapter.resolved_options({})) == "native"
    source = adapter.source_of("wide_deep", options)
    assert (source.repo, source.path, source.tag) == (
        "Oneflow-Inc/models",
        "RecommenderSystems/wide_and_deep",
        "fc7cbf8da9b2ee21fa0e9613dd0668c3b45dad4d",
    )
    assert adapter.parser_of("wide_deep", options).__name__ == "parse_oneflow_wdl_current"
    assert (
        adapter.parser_of("wide_deep", adapter.resolved_options({})).__name__ == "parse_oneflow_wdl"
    )
    assert "OneFlow 0.9.0" in adapter.version_of(options)


@pytest.mark.parametrize("layout", ["1n1g", "2n8g"])
def test_oneflow_wdl_current_command(layout: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """oneflow.distributed.launch (torch.distributed.launch's flags: OneFlow v0.9.0
    python/oneflow/distributed/launch.py) runs train.py once per GPU; train.py's flags are
    config.py's; `--batch_size` is the global batch (config.py divides it by the world size)."""
    monkeypatch.setenv("SLURM_JOB_NODELIST", "gpu[01-02]")
    adapter = get_adapter("oneflow_wdl")
    lay = Layout.parse(layout)
    options = CURRENT | {"data_dir": "/data/wdl_ofrecord"}
    for node in range(lay.nodes):
        ctx = context(adapter, "wide_deep", layout, node, "fp32", False, tmp_path, options)
        cmd = adapter.command(ctx)
        start = cmd.index("oneflow.distributed.launch")
        assert cmd[start - 2 : start] == ["python3", "-m"]
        assert cmd[start + 1 : start + 7] == [
            f"--nproc_per_node={lay.gpus_per_node}",
            f"--nnodes={lay.nodes}",
            f"--node_rank={node}",
            f"--master_addr={ctx.master_addr}",
            f"--master_port={ctx.master_port}",
            WDL_SCRIPT,
        ]
        args = cmd[start + 7 :]
        assert args == [
            f"--batch_size={64 * lay.devices}",
            f"--max_iter={ctx.steps}",
            "--loss_print_every_n_iter=1",
            "--eval_interval=0",
            "--execution_mode=graph",
            "--wide_vocab_size=2322444",
            "--deep_vocab_size=2322444",
            "--hidden_units_num=7",
            "--deep_embedding_vec_size=32",
            "--dataset_format=ofrecord",
            "--data_dir=/data/wdl_ofrecord",
            "--data_part_num=256",
            "--data_part_name_suffix_length=5",
            f"--model_save_dir={tmp_path / f'wdl_checkpoints_node{node}'}",
        ]
        # the lazy-mode layout flags are gone: config.py's argparse would reject them
        assert not any(
            a.startswith(("--num_nodes", "--gpu_num_per_node", "--node_ips")) for a in cmd
        )
    extra = CURRENT | {"data_dir": "/d", "extra_args": ["--execution_mode=eager"]}
    cmd = adapter.command(context(adapter, "wide_deep", "1n1g", 0, "fp32", False, tmp_path, extra))
    assert cmd[-1] == "--execution_mode=eager"  # argparse keeps the last: extra_args win


def test_oneflow_wdl_current_needs_data_and_has_no_other_model():
    """Its `--dataset_format=synthetic` draws the ids once from [0, 256) (models/data.py), unlike
    Criteo: like DLPerf v1.0's W&D, a cell without data_dir is skipped with a reason."""
    adapter = get_adapter("oneflow_wdl")
    cell = Cell("oneflow_wdl", "wide_deep", "fp32", False, 2048, Layout(1, 8))
    assert "data_dir" in adapter.skip_reason(cell, adapter.resolved_options(CURRENT))
    assert adapter.skip_reason(cell, adapter.resolved_options(CURRENT | {"data_dir": "/d"})) is None
    adapter.check_case(case("oneflow_wdl", "wide_deep", **CURRENT) | {"precision": ["fp32"]})
    with pytest.raises(ConfigError, match=r"runs wide_deep in fp32 only"):
        adapter.check_case(case("oneflow_wdl", "wide_deep", **CURRENT))


WDL_FIXTURE = FIXTURES / "oneflow_wdl_current" / "1n8g_wdl_b2048_fp32_1.log"
# iterations 6..25 of 16384 samples (2048 * 8 GPUs): 10 even of 31.25 ms, 10 odd of 32.5 ms
WDL_EXPECTED = 20 * 16384 / (10 * 0.03125 + 10 * 0.0325)


def test_oneflow_wdl_current_parses_through_the_adapter(tmp_path: Path):
    adapter = get_adapter("oneflow_wdl")
    cell = fixture_cell(adapter, "wide_deep", WDL_FIXTURE)
    assert (cell.batch_size, cell.layout.devices) == (2048, 8)
    result = adapter.parse(
        run_folder(WDL_FIXTURE, cell, tmp_path), cell, adapter.resolved_options(CURRENT)
    )
    assert str(result.method) == "step_times" and {r.rank for r in result.records} == {-1}
    tp = run_throughput(result, Window(5, 20))
    assert tp.throughput_samples_per_s == pytest.approx(WDL_EXPECTED, rel=1e-9)
    assert (tp.window_first_step, tp.window_last_step) == (6, 25)
    assert tp.step_time_ms == pytest.approx([31.25, 32.5] * 10)
    # the first line's latency counts from the logger's creation (model and graph built since):
    # a window that takes it in is dominated by it (iterations 1..20: setup, 4 of 36.5 ms, 8 even
    # of 31.25 ms and 7 odd of 32.5 ms)
    with_setup = run_throughput(result, Window(0, 20))
    assert with_setup.throughput_samples_per_s == pytest.approx(
        20 * 16384 / (2.8431875 + 4 * 0.0365 + 8 * 0.03125 + 7 * 0.0325), rel=1e-9
    )


def test_oneflow_wdl_current_reads_only_rank0_progress_lines(tmp_path: Path):
    """Only rank 0 prints (train.py's print_ranks = [0]); an eval line (`iter: i/n, eval_auc: a`)
    and a nan loss are read past; the argument list's global batch must be the run facts'."""
    from dlperf.parse.upstream import RunFacts
    from dlperf.parse.upstream.oneflow import parse_oneflow_wdl_current

    lines = WDL_FIXTURE.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("[rank:0] iter: 10/"))
    lines.insert(at + 1, "[rank:0] iter: 10/27, eval_auc: 0.7306385141234123")
    lines[at] = re.sub(r"loss: \S+,", "loss: nan,", lines[at])
    log = tmp_path / "node0.log"
    log.write_text("\n".join(lines) + "\n")
    result = parse_oneflow_wdl_current([log], RunFacts(2048, 8, 1))
    assert len(result.records) == 27
    tp = run_throughput(result, Window(5, 20))
    assert tp.throughput_samples_per_s == pytest.approx(WDL_EXPECTED, rel=1e-9)
    with pytest.raises(ParseError) as err:
        parse_oneflow_wdl_current([log], RunFacts(4096, 8, 1))
    assert (err.value.path, err.value.line) == (str(log), 5)
    assert "batch_size (global batch) = 16384 but the cell's global" in str(err.value)


# ----------------------------------------------------------------------------- Megatron-LM


def test_megatron_current_release_facts():
    adapter = get_adapter("megatron")
    options = adapter.resolved_options(CURRENT)
    assert adapter.environment_of(options) == "nvcr.io/nvidia/pytorch:26.06-py3"
    assert adapter.launch_of(options) == "torchrun"
    assert adapter.launch_of(adapter.resolved_options({})) == "torch"
    assert adapter.source_of("gpt", options).tag == "5be9626709af2722333bf54797c954c09edeada3"
    assert adapter.parser_of("gpt", options).__name__ == "parse_megatron_current"
    assert adapter.parser_of("gpt", adapter.resolved_options({})).__name__ == "parse_megatron"
    assert "core_v0.19.0" in adapter.version_of(options)


@pytest.mark.parametrize("layout", ["1n1g", "2n8g"])
def test_megatron_current_command(layout: str, tmp_path: Path):
    """pretrain_gpt.py's flags at core_v0.19.0 (megatron/training/arguments.py and the config
    dataclasses it turns into flags); `--checkpoint-activations` now exits the script."""
    adapter = get_adapter("megatron")
    lay = Layout.parse(layout)
    options = CURRENT | {"data_dir": "/data/gpt/owt_text_document"}
    for node in range(lay.nodes):
        ctx = context(adapter, "gpt", layout, node, "amp", False, tmp_path, options)
        cmd = adapter.command(ctx)
        assert cmd[:2] == ["env", "CUDA_DEVICE_MAX_CONNECTIONS=1"]
        assert "torch.distributed.run" in cmd and "torch.distributed.launch" not in cmd
        check_layout(
            "torch", [a.replace("distributed.run", "distributed.launch") for a in cmd], ctx
        )
        assert (
            cmd[cmd.index("torch.distributed.run") + 6] == "/workspace/Megatron-LM/pretrain_gpt.py"
        )
        for flag, value in [
            ("--micro-batch-size", 64),
            ("--global-batch-size", 64 * lay.devices),
            ("--train-iters", ctx.steps),
            ("--log-interval", 10),
            ("--recompute-granularity", "full"),
            ("--recompute-method", "uniform"),
            ("--recompute-num-layers", 1),
            ("--data-path", "/data/gpt/owt_text_document"),
            ("--tokenizer-type", "GPT2BPETokenizer"),
            ("--vocab-file", "/workspace/Megatron-LM/gpt2-vocab.json"),
            ("--merge-file", "/workspace/Megatron-LM/gpt2-merges.txt"),
            ("--max-position-embeddings", 2048),
            ("--seq-length", 2048),
        ]:
            assert has(cmd, flag, value), (flag, value, cmd)
        assert "--fp16" in cmd and "--log-throughput" in cmd
        gone = ("--checkpoint-activations", "--data-impl", "--distributed-backend", "--local_rank")
        assert not any(a.startswith(gone) for a in cmd)
    no_recompute = CURRENT | {"data_dir": "/d", "checkpoint_activations": False}
    cmd = adapter.command(context(adapter, "gpt", "1n1g", 0, "fp32", False, tmp_path, no_recompute))
    assert not any(a.startswith("--recompute") for a in cmd) and "--fp16" not in cmd
    plain = adapter.command(
        context(adapter, "gpt", "1n1g", 0, "amp", False, tmp_path, {"data_dir": "/d"})
    )
    assert "--checkpoint-activations" in plain and "CUDA_DEVICE_MAX_CONNECTIONS=1" not in plain


def test_megatron_current_without_data_runs_on_mock_data(tmp_path: Path):
    """--mock-data and NullTokenizer of vocab_size tokens (no --data-path: Megatron allows one data
    source), no GPT-2 BPE files; no data_dir is no skip at release current only."""
    adapter = get_adapter("megatron")
    cmd = adapter.command(context(adapter, "gpt", "1n1g", 0, "amp", False, tmp_path, CURRENT))
    assert "--mock-data" in cmd and has(cmd, "--tokenizer-type", "NullTokenizer")
    assert has(cmd, "--vocab-size", 50257)
    assert not any(a.startswith(("--data-path", "--vocab-file", "--merge-file")) for a in cmd)
    assert not any(a.startswith("--transformer-impl") for a in cmd)  # the NGC image has TE
    cell = Cell("megatron", "gpt", "amp", False, 8, Layout(1, 1))
    assert adapter.skip_reason(cell, adapter.resolved_options(CURRENT)) is None
    assert "data_dir" in adapter.skip_reason(cell, adapter.resolved_options({}))
    # the new options at their defaults are no part of what a run measures
    assert "vocab_size" not in adapter.measured_options(cell, CURRENT)
    assert adapter.resolved_options(CURRENT)["vocab_size"] == 50257  # launched with it


def test_megatron_current_without_apex_te(tmp_path: Path):
    """The flags a machine without apex and TransformerEngine needs, only when asked for, and only
    at release current."""
    adapter = get_adapter("megatron")
    options = CURRENT | {"without_apex_te": True}
    cmd = adapter.command(context(adapter, "gpt", "1n1g", 0, "amp", False, tmp_path, options))
    assert has(cmd, "--transformer-impl", "local")
    for flag in (
        "--no-gradient-accumulation-fusion",
        "--no-persist-layer-norm",
        "--no-masked-softmax-fusion",
    ):
        assert flag in cmd
    adapter.check_case(case("megatron", "gpt", **options))
    with pytest.raises(ConfigError, match="without_apex_te: only release current"):
        adapter.check_case(case("megatron", "gpt", without_apex_te=True))


@pytest.mark.parametrize(
    ("name", "model", "script"),
    [
        ("pytorch_examples", "resnet50", "pytorch+examples@{}/imagenet/main.py"),
        ("ngc_pytorch", "resnet50", "NVIDIA+DeepLearningExamples@{}/PyTorch/Classification/ConvNets/main.py"),
        ("megatron", "gpt", "NVIDIA+Megatron-LM@{}/pretrain_gpt.py"),
    ],
)  # fmt: skip
def test_sources_dir_is_the_checkout_dlperf_sources_places(
    name: str, model: str, script: str, tmp_path: Path
):
    """With sources_dir and no source_root, the script is in <sources_dir>/<owner>+<name>@<commit>
    (ModelSource.checkout_in, which `dlperf sources` fills); source_root still wins."""
    adapter = get_adapter(name)
    options = CURRENT | {"sources_dir": "/s/"}
    precision = "fp32" if name == "pytorch_examples" else "amp"
    cmd = adapter.command(context(adapter, model, "1n1g", 0, precision, False, tmp_path, options))
    commit = adapter.source_of(model, adapter.resolved_options(options)).tag
    assert "/s/" + script.format(commit) in cmd
    assert adapter.resolved_options(options)["sources_dir"] == "/s/"
    cell = Cell(name, model, precision, False, 8, Layout(1, 1))
    assert "sources_dir" not in adapter.measured_options(cell, CURRENT)  # unset: measured as before
    both = options | {"source_root": "/r"}
    cmd = adapter.command(context(adapter, model, "1n1g", 0, precision, False, tmp_path, both))
    assert not any("/s/" in a for a in cmd)


def test_sources_dir_of_models_in_two_checkouts_needs_the_model():
    adapter = get_adapter("ngc_pytorch")  # DLPerf v1.0: ResNet-50 and BERT at two commits
    options = adapter.resolved_options({"sources_dir": "/s"})
    assert adapter.model_dir("resnet50", options).startswith(
        "/s/NVIDIA+DeepLearningExamples@46ff370"
    )
    with pytest.raises(ConfigError, match="2 checkouts"):
        adapter.root(options)


def test_megatron_current_parses_through_the_adapter(tmp_path: Path):
    adapter = get_adapter("megatron")
    fixture = FIXTURES / "megatron_current" / "1n8g_gpt_b8_fp16_1.log"
    cell = fixture_cell(adapter, "gpt", fixture)
    logs = run_folder(fixture, cell, tmp_path)
    result = adapter.parse(logs, cell, adapter.resolved_options(CURRENT))
    tp = run_throughput(result, Window(20, 80))
    # iterations 21..100: 8 lines of 10 iterations at 1480 1510 1500 1490 1530 1500 1510 1495 ms;
    # micro batch 8 * 8 data-parallel GPUs = the logged global batch 64
    ms = 1480 + 1510 + 1500 + 1490 + 1530 + 1500 + 1510 + 1495
    assert tp.throughput_samples_per_s == pytest.approx(80 * 64 / (10 * ms / 1000), rel=1e-9)
    with pytest.raises(ParseError, match="parser megatron_current reads it"):
        adapter.parse(logs, cell, adapter.resolved_options({}))  # DLPerf v1.0's parser


def test_a_megatron_run_gets_dlperfs_tflops_and_keeps_the_printed_one_beside(tmp_path: Path):
    """Issue 18.4: the runs table states dlperf's own TFLOP/s per GPU (model FLOPs from the run's
    options, 6 N + 12 L s h per token as for every GPT column, its vocabulary padded as Megatron
    pads it) beside the one the log printed (which counts the recomputed forward passes too),
    averaged over the same window; neither replaces the other."""
    adapter = get_adapter("megatron")
    fixture = FIXTURES / "megatron_current" / "1n8g_gpt_b8_fp16_1.log"
    cell = fixture_cell(adapter, "gpt", fixture)
    options = adapter.resolved_options(CURRENT)
    paths = RunPaths(cell.id, 1, tmp_path)
    paths.dir.mkdir(parents=True)
    shutil.copy(fixture, paths.dir / "node0.log")
    manifest = {
        "cell": cell.key(),
        "repeat": 1,
        "status": "ok",
        "status_detail": "",
        "adapter": {"name": "megatron"},
        "measure": {"options": options},
        "backend": "local",
        "tasks": [{"task": 0, "log": "node0.log"}],
    }
    paths.manifest.write_text(json.dumps(manifest))
    row = read_run(paths.manifest, Window(20, 80)).row
    assert row["status"] == "ok", row["status_detail"]
    ms = [1480, 1510, 1500, 1490, 1530, 1500, 1510, 1495]  # iterations 21..100, 10 per line
    throughput = 80 * 64 / (10 * sum(ms) / 1000)
    assert row["throughput_samples_per_s"] == pytest.approx(throughput, rel=1e-9)
    # 72 B s l h^2 (1 + s/6h + V/12lh) = 6 N + 12 L s h per token, B = 1 sequence, V = 50257
    # padded to 50304 (128 x TP 1)
    s, layers, h, v = 2048, 16, 1536, 50304
    per_sample = 72 * s * layers * h * h * (1 + s / (6 * h) + v / (12 * layers * h))
    assert row["flops_per_sample"] == pytest.approx(per_sample, rel=1e-12)
    assert row["flops_method"].startswith("formula: 6 N + 12 L s h per token (model FLOPs)")
    assert row["achieved_tflops"] == pytest.approx(per_sample * throughput / 8 / 1e12, rel=1e-9)
    printed = [121.6, 119.2, 120.0, 120.8, 117.6, 120.0, 119.2, 120.4]  # over the same lines
    weighted = sum(t * m for t, m in zip(printed, ms, strict=True)) / sum(ms)
    assert row["reported_tflops_per_device"] == pytest.approx(weighted, rel=1e-9)


def test_an_upstream_log_far_longer_than_its_window_is_kept_only_as_far_as_the_window(
    tmp_path: Path,
):
    """Issue 20.14: with the window's iterations (as the tables parse), an upstream parser keeps
    a log's rows only as far as the window can reach: the same figure as the whole log's, a
    claimed but unreadable line far past the window never read, and the rows kept do not grow
    with the log."""
    adapter = get_adapter("megatron")
    cell = Cell("megatron", "gpt", "amp", False, 8, Layout(1, 1))
    options = adapter.resolved_options({})
    line = (
        " iteration {i:8d}/ 100000 | consumed samples: {c:12d} | elapsed time per iteration "
        "(ms): {ms:.1f} | learning rate: 1.500E-05 | global batch size:     8 | lm loss: "
        "1.000E+01 | loss scale: 4096.0 |\n"
    )
    kept = {}
    for intervals in (200, 2000):
        log = tmp_path / f"{intervals}" / "node0.log"
        log.parent.mkdir()
        text = "".join(
            line.format(i=10 * k, c=80 * k, ms=1500.0 + k % 7) for k in range(1, intervals + 1)
        )
        log.write_text(text + " iteration 99oops/ 100000 | consumed samples: x |\n")
        with pytest.raises(ParseError, match="99oops"):
            adapter.parse([log], cell, options)  # the whole log: its last line is unreadable
        result = adapter.parse([log], cell, options, keep_iterations=100)
        kept[intervals] = (len(result.records), run_throughput(result, Window(20, 80)))
    assert kept[200][0] == kept[2000][0] == (100 + 2) * 1 + 2  # rows: (iterations + 2) x ranks + 2
    assert kept[2000][1].throughput_samples_per_s == kept[200][1].throughput_samples_per_s
    ms = [1500.0 + k % 7 for k in range(3, 11)]  # iterations 21..100: lines 3..10
    assert kept[200][1].throughput_samples_per_s == pytest.approx(80 * 8 / (10 * sum(ms) / 1000))


# ----------------------------------------------------------------------------- MindSpore


MS_COMMIT = "eab643f51336dbf7d711f02d27e6516e5affee59"
MS_RESNET = "/workspace/models/official/cv/ResNet"


def test_mindspore_current_release_facts():
    """mindspore-ai/models at eab643f: official/cv/ResNet/gpu_resnet_benchmark.py."""
    adapter = get_adapter("mindspore")
    options = adapter.resolved_options(CURRENT)
    assert adapter.release(options).models["resnet50"].tag == MS_COMMIT
    assert adapter.parser_of("resnet50", options).__name__ == "parse_mindspore_benchmark"
    assert adapter.parser_of("resnet50", adapter.resolved_options({})).__name__ == "parse_mindspore"
    assert adapter.parser_of("bert_base", options).__name__ == "parse_mindspore_bert_current"
    assert adapter.release(options).models["bert_base"].path == "official/nlp/Bert"
    cell = Cell("mindspore", "resnet50", "amp", False, 64, Layout(1, 1))
    assert "ImageFolder" in adapter.skip_reason(cell, options)
    assert adapter.skip_reason(cell, adapter.resolved_options(CURRENT | {"data_dir": "/d"})) is None


def test_mindspore_current_resnet50_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The flags are keys of config/resnet_benchmark_GPU.yaml (src/model_utils/config.py makes
    every key a flag, booleans read by ast.literal_eval), as scripts/run_gpu_resnet_benchmark.sh
    passes them under mpirun; the script has no step limit, so stop_after wraps it on node 0."""
    monkeypatch.setenv("SLURM_JOB_NODELIST", "gpu[01-02]")
    adapter = get_adapter("mindspore")
    options = CURRENT | {"data_dir": "/data/imagenet/train"}
    ctx = context(adapter, "resnet50", "2n8g", 0, "amp", False, tmp_path, options)
    cmd = adapter.command(ctx)
    assert cmd[1:3] == ["-m", "dlperf.adapters.stop_after"]
    assert cmd[cmd.index("--pattern") + 1] == r"epoch: \[(?P<step>\d+)/\d+\] step: \["
    assert cmd[cmd.index("--step") + 1] == str(ctx.steps)
    assert cmd[cmd.index("--lines") + 1] == "16"  # every rank prints, node 0's mpirun tags them
    mpirun = cmd.index("mpirun")
    assert cmd[cmd.index("-np") + 1] == "16" and mpirun < cmd.index("-np")
    script = f"{MS_RESNET}/gpu_resnet_benchmark.py"
    assert cmd[cmd.index(script) + 1 :] == [
        f"--config_path={MS_RESNET}/config/resnet_benchmark_GPU.yaml",
        "--data_path=/data/imagenet/train",
        "--device_target=GPU",
        "--run_distribute=True",
        "--batch_size=64",
        "--dtype=fp16",
        "--mode_name=GRAPH",
        "--print_per_steps=1",
        "--save_ckpt=False",
        f"--output_dir={tmp_path / 'mindspore_output_node0'}",
    ]
    other = adapter.command(
        context(adapter, "resnet50", "2n8g", 1, "amp", False, tmp_path, options)
    )
    assert "mpirun" not in other and "dlperf.adapters.stop_after" not in other
    single = adapter.command(
        context(adapter, "resnet50", "1n1g", 0, "fp32", False, tmp_path, options)
    )
    assert "--run_distribute=False" in single and "--dtype=fp32" in single
    assert single[single.index("--lines") + 1] == "1"


def test_mindspore_current_parses_through_the_adapter(tmp_path: Path):
    adapter = get_adapter("mindspore")
    fixture = FIXTURES / "mindspore_benchmark" / "1n2g_rn50_b256_amp_1.log"
    cell = fixture_cell(adapter, "resnet50", fixture)
    result = adapter.parse(
        run_folder(fixture, cell, tmp_path), cell, adapter.resolved_options(CURRENT)
    )
    tp = run_throughput(result, Window(4, 16))
    # sinks 5..20 of one step each: the slower rank 1 takes 16 * 210 ms
    assert tp.throughput_samples_per_s == pytest.approx(2 * 16 * 256 / (16 * 0.210), rel=1e-6)


# ----------------------------------------------------------------------------- PaddlePaddle

CLAS = "/workspace/PaddleClas"
CLAS_SHA = "c1325704cfcd050259ad752a899b0c425e2a7b00"  # release/2.5.2
NLP_SHA = "c502c9213fc22a210b139ec669a369ee22d0bf45"


def test_paddle_current_release_facts():
    adapter = get_adapter("paddle")
    options = adapter.resolved_options(CURRENT | {"data_dir": "/data/set"})
    assert (
        adapter.environment_of(options) == "paddlepaddle/paddle:2.6.1-gpu-cuda12.0-cudnn8.9-trt8.6"
    )
    assert adapter.launch_of(options) == "paddle_collective"
    assert adapter.launch_of(adapter.resolved_options({})) == "paddle"
    assert adapter.source_of("resnet50", options).tag == CLAS_SHA
    assert adapter.source_of("bert_base", options).tag == NLP_SHA
    assert adapter.script("resnet50", options) == f"{CLAS}/tools/train.py"
    assert (
        adapter.script("bert_base", options)
        == "/workspace/PaddleNLP/slm/model_zoo/bert/run_pretrain.py"
    )
    assert adapter.parser_of("resnet50", options).__name__ == "parse_paddleclas"
    assert adapter.parser_of("bert_base", options).__name__ == "parse_paddlenlp_bert"
    assert adapter.parser_of("resnet50", adapter.resolved_options({})).__name__ == "parse_paddle_cv"
    moved = adapter.resolved_options(CURRENT | {"source_root": "/src"})
    assert adapter.script("resnet50", moved) == "/src/PaddleClas/tools/train.py"
    for model in ("resnet50", "bert_base"):
        adapter.check_case(case("paddle", model, **CURRENT))
        cell = Cell("paddle", model, "fp32", False, 64, Layout(1, 1))
        reason = adapter.skip_reason(cell, adapter.resolved_options(CURRENT))
        assert reason and "data_dir" in reason


def overrides(cmd: list[str]) -> dict[str, str]:
    pairs = [b for a, b in zip(cmd, cmd[1:], strict=False) if a == "-o"]
    return dict(p.split("=", 1) for p in pairs)


@pytest.mark.parametrize("layout", ["1n1g", "2n8g"])
def test_paddle_current_resnet50_command(layout: str, tmp_path: Path):
    """PaddleClas tools/train.py -c <config> -o key=value (ppcls/utils/config.py), the keys of
    ResNet50.yaml and of ppcls/engine/engine.py (Global.iter_per_epoch, Global.log_ranks), under
    Paddle 2.x's launcher (--master/--nnodes/--rank/--devices, python/paddle/distributed/launch/
    context/args_envs.py)."""
    adapter = get_adapter("paddle")
    lay = Layout.parse(layout)
    options = CURRENT | {"data_dir": "/data/imagenet/"}
    for node in range(lay.nodes):
        ctx = context(adapter, "resnet50", layout, node, "fp32", False, tmp_path, options)
        cmd = adapter.command(ctx)
        devices = ",".join(str(i) for i in range(lay.gpus_per_node))
        head = ["python3", "-m", "paddle.distributed.launch"]
        if lay.nodes > 1:
            head += [
                f"--master={ctx.master_addr}:{ctx.master_port}",
                "--nnodes=2",
                f"--rank={node}",
            ]
        head += [f"--devices={devices}", f"--log_dir={tmp_path / f'paddle_node{node}'}"]
        assert cmd[: len(head)] == head
        rest = cmd[len(head) :]
        assert rest[:3] == [
            f"{CLAS}/tools/train.py",
            "-c",
            f"{CLAS}/ppcls/configs/ImageNet/ResNet/ResNet50.yaml",
        ]
        assert overrides(rest) == {
            "Global.epochs": "1",
            "Global.iter_per_epoch": str(ctx.steps),
            "Global.print_batch_step": "1",
            "Global.log_ranks": ",".join(str(r) for r in range(lay.devices)),
            "Global.eval_during_train": "False",
            "Global.save_interval": "1000000",
            "Global.output_dir": str(tmp_path / f"paddleclas_output_node{node}"),
            "Global.use_dali": "False",
            "Arch.pretrained": "False",
            "DataLoader.Train.dataset.image_root": "/data/imagenet",
            "DataLoader.Train.dataset.cls_label_path": "/data/imagenet/train_list.txt",
            "DataLoader.Train.sampler.batch_size": "64",
            "DataLoader.Train.loader.num_workers": "8",
        }
        assert len(rest) == 3 + 2 * 13
        assert not any(a.startswith("FLAGS_fraction_of_gpu_memory") for a in cmd)
    amp = adapter.command(context(adapter, "resnet50", "1n1g", 0, "amp", False, tmp_path, options))
    assert amp[amp.index("-c") + 1] == f"{CLAS}/ppcls/configs/ImageNet/ResNet/ResNet50_amp_O1.yaml"


def test_paddle_current_bert_command(tmp_path: Path):
    """slm/model_zoo/bert/run_pretrain.py's argparse flags at PaddleNLP c502c92."""
    adapter = get_adapter("paddle")
    options = CURRENT | {"data_dir": "/data/hdf5"}
    cmd = adapter.command(context(adapter, "bert_base", "1n8g", 0, "amp", False, tmp_path, options))
    assert cmd == [
        "env",
        "PYTHONPATH=/workspace/PaddleNLP",
        "python3",
        "-m",
        "paddle.distributed.launch",
        "--devices=0,1,2,3,4,5,6,7",
        f"--log_dir={tmp_path / 'paddle_node0'}",
        "/workspace/PaddleNLP/slm/model_zoo/bert/run_pretrain.py",
        "--model_type=bert",
        "--model_name_or_path=bert-base-uncased",
        "--input_dir=/data/hdf5",
        f"--output_dir={tmp_path / 'paddlenlp_output_node0'}",
        "--max_predictions_per_seq=20",
        "--batch_size=64",
        "--learning_rate=1e-4",
        "--weight_decay=0.01",
        "--warmup_steps=0",
        f"--max_steps={adapter.steps_for(20, 100)}",
        "--logging_steps=1",
        "--save_steps=1000000",
        "--device=gpu",
        "--use_amp=true",
        "--amp_level=O1",
    ]
    fp32 = adapter.command(
        context(adapter, "bert_base", "1n1g", 0, "fp32", False, tmp_path, options)
    )
    assert "--use_amp=false" in fp32 and not any(a.startswith("--amp_level") for a in fp32)


@pytest.mark.parametrize(
    ("model", "source", "window", "expected"),
    [
        # iterations 6..15 by batch_cost: rank 0 2.0 s, rank 1 2.2 s (the slowest), batch 64
        ("resnet50", "paddleclas/1n2g_rn50_b64_fp32_1", Window(5, 10), 2 * 10 * 64 / 2.2),
        # steps 11..25 by the logger's stamps: rank 1 15 * 0.520 s, batch 32
        ("bert_base", "paddlenlp_bert/1n2g_bert_b32_fp32_1", Window(10, 15), 2 * 15 * 32 / 7.8),
    ],
)
def test_paddle_current_parses_workerlogs_through_the_adapter(
    model: str, source: str, window: Window, expected: float, tmp_path: Path
):
    adapter = get_adapter("paddle")
    fixture = FIXTURES / source
    cell = fixture_cell(adapter, model, fixture)
    logs = run_folder(fixture, cell, tmp_path)
    result = adapter.parse(logs, cell, adapter.resolved_options(CURRENT))
    assert {Path(r.path).name for r in result.records} == {"workerlog.0", "workerlog.1"}
    tp = run_throughput(result, window)
    # rel 1e-6: millisecond stamps as epoch seconds in a double
    assert tp.throughput_samples_per_s == pytest.approx(expected, rel=1e-6)
    with pytest.raises(ParseError):
        adapter.parse(logs, cell, adapter.resolved_options({}))  # DLPerf v1.0's parsers


MS_BERT = "/workspace/models/official/nlp/Bert"


def test_mindspore_current_bert_runs_amp_with_graph_kernel_fusion_only():
    """run_pretrain.py computes in pretrain_config.yaml's base_net_cfg.compute_type (float16; a
    nested key, so no flag) and turns graph kernel fusion on for every GPU run (DLPerf's XLA)."""
    adapter = get_adapter("mindspore")
    bert = case("mindspore", "bert_base", **CURRENT)
    with pytest.raises(ConfigError, match=r"^\.precision: .*amp only, not fp32"):
        adapter.check_case(bert)
    with pytest.raises(ConfigError, match=r"^\.xla: .*graph kernel fusion"):
        adapter.check_case(bert | {"precision": ["amp"]})
    adapter.check_case(bert | {"precision": ["amp"], "xla": [True]})
    adapter.check_case(case("mindspore", "bert_base"))  # DLPerf v1.0: fp32 and amp, XLA off
    per_precision = case("mindspore", "bert_base") | {
        "precision_options": {"amp": dict(CURRENT)},
        "xla": [True],
    }
    adapter.check_case(per_precision)  # only amp runs release current
    cell = Cell("mindspore", "bert_base", "amp", True, 64, Layout(1, 1))
    assert "TFRecord" in adapter.skip_reason(cell, adapter.resolved_options(CURRENT))


def test_mindspore_current_bert_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Keys of official/nlp/Bert/pretrain_config.yaml as flags (src/model_utils/config.py), as
    scripts/run_distributed_pretrain_for_gpu.sh passes them under mpirun; `--train_steps` caps
    the sinks, so no stop_after; the batch is base_batch_size (config.py sets batch_size from it)."""
    monkeypatch.setenv("SLURM_JOB_NODELIST", "gpu[01-02]")
    adapter = get_adapter("mindspore")
    options = CURRENT | {"data_dir": "/data/wiki/tfrecord"}
    ctx = context(adapter, "bert_base", "2n8g", 0, "amp", True, tmp_path, options)
    cmd = adapter.command(ctx)
    assert "dlperf.adapters.stop_after" not in cmd
    check_layout("mpirun", cmd, ctx)
    script = f"{MS_BERT}/run_pretrain.py"
    assert cmd[cmd.index(script) + 1 :] == [
        f"--config_path={MS_BERT}/pretrain_config.yaml",
        "--device_target=GPU",
        "--distribute=true",
        "--bert_network=base",
        "--base_batch_size=64",
        "--optimizer=AdamWeightDecay",
        "--enable_lossscale=true",
        "--enable_save_ckpt=false",
        "--enable_data_sink=true",
        "--data_sink_steps=1",
        f"--train_steps={ctx.steps}",
        "--data_dir=/data/wiki/tfrecord",
        "--dataset_format=tfrecord",
    ]
    single = adapter.command(
        context(adapter, "bert_base", "1n1g", 0, "amp", True, tmp_path, options)
    )
    assert "--distribute=false" in single
    assert not {"--batch_size=64", "--enable_graph_kernel=true", "--dtype=fp16"} & set(single)


def test_mindspore_current_bert_parses_through_the_adapter(tmp_path: Path):
    adapter = get_adapter("mindspore")
    fixture = FIXTURES / "mindspore_bert_current" / "1n2g_bert_b64_amp_1.log"
    cell = fixture_cell(adapter, "bert_base", fixture)
    result = adapter.parse(
        run_folder(fixture, cell, tmp_path), cell, adapter.resolved_options(CURRENT)
    )
    tp = run_throughput(result, Window(4, 16))
    # sinks 5..20 of one step each: the slower rank 1 takes 16 * 102 ms
    assert tp.throughput_samples_per_s == pytest.approx(2 * 16 * 64 / (16 * 0.102), rel=1e-6)


# ----------------------------------------------------------------------------- OneFlow ResNet-50

RN50_SCRIPT = "/workspace/models/Vision/classification/image/resnet50/train.py"


def test_oneflow_current_release_facts():
    """Oneflow-Inc/models at fc7cbf8 (resnet50 last changed d87a829), OneFlow 0.9.0 cu118; no
    BERT: NLP/BERT needs Module.to_consistent across GPUs, which OneFlow 0.8+ removed."""
    adapter = get_adapter("oneflow")
    options = adapter.resolved_options(CURRENT)
    assert adapter.environment_of(options) == "envs/oneflow_current.yaml"
    assert adapter.environment_of(adapter.resolved_options({})) == "envs/oneflow.yaml"
    assert adapter.launch_of(options) == "oneflow"
    assert adapter.launch_of(adapter.resolved_options({})) == "native"
    source = adapter.source_of("resnet50", options)
    assert (source.repo, source.path, source.tag) == (
        "Oneflow-Inc/models",
        "Vision/classification/image/resnet50",
        "fc7cbf8da9b2ee21fa0e9613dd0668c3b45dad4d",
    )
    assert adapter.script("resnet50", options) == RN50_SCRIPT
    assert adapter.parser_of("resnet50", options).__name__ == "parse_oneflow_cnn_current"
    assert (
        adapter.parser_of("resnet50", adapter.resolved_options({})).__name__ == "parse_oneflow_cnn"
    )
    assert "OneFlow 0.9.0" in adapter.version_of(options)
    adapter.check_case(case("oneflow", "resnet50", **CURRENT))
    with pytest.raises(ConfigError, match=r"release current has no bert_base benchmark"):
        adapter.check_case(case("oneflow", "bert_base", **CURRENT))


@pytest.mark.parametrize("layout", ["1n1g", "2n8g"])
def test_oneflow_current_resnet50_command(layout: str, tmp_path: Path):
    """oneflow.distributed.launch runs resnet50/train.py once per GPU with config.py's flags;
    synthetic data without data_dir; AMP as examples/train_graph_distributed_fp16.sh."""
    adapter = get_adapter("oneflow")
    lay = Layout.parse(layout)
    for node in range(lay.nodes):
        ctx = context(adapter, "resnet50", layout, node, "amp", False, tmp_path, dict(CURRENT))
        cmd = adapter.command(ctx)
        start = cmd.index("oneflow.distributed.launch")
        assert cmd[start - 2 : start] == ["python3", "-m"]
        assert cmd[start + 1 : start + 7] == [
            f"--nproc_per_node={lay.gpus_per_node}",
            f"--nnodes={lay.nodes}",
            f"--node_rank={node}",
            f"--master_addr={ctx.master_addr}",
            f"--master_port={ctx.master_port}",
            RN50_SCRIPT,
        ]
        assert cmd[start + 7 :] == [
            "--train-batch-size=64",
            f"--num-devices-per-node={lay.gpus_per_node}",
            "--num-epochs=1",
            f"--batches-per-epoch={ctx.steps}",
            "--skip-eval",
            "--print-interval=1",
            "--graph",
            "--fuse-bn-relu",
            "--fuse-bn-add-relu",
            "--use-fp16",
            "--channel-last",
            "--synthetic-data",
        ]
        # DLPerf v1.0's lazy-mode flags are gone (config.py's argparse would reject them)
        assert not any(
            a.startswith(("--num_nodes", "--gpu_num_per_node", "--node_ips")) for a in cmd
        )
        assert not any(a.startswith("--num-nodes") for a in cmd)  # config.py: >1 is an error
    options = CURRENT | {"data_dir": "/data/imagenet_ofrecord"}
    fp32 = adapter.command(
        context(adapter, "resnet50", "1n8g", 0, "fp32", False, tmp_path, options)
    )
    args = fp32[fp32.index(RN50_SCRIPT) + 1 :]
    assert args[-3:] == [
        "--ofrecord-path=/data/imagenet_ofrecord",
        "--ofrecord-part-num=32",
        "--use-gpu-decode",
    ]
    assert not {"--use-fp16", "--channel-last", "--synthetic-data"} & set(args)
    plain = adapter.command(context(adapter, "resnet50", "1n8g", 0, "fp32", False, tmp_path))
    assert "oneflow.distributed.launch" not in plain and "--model=resnet50" in plain


def test_oneflow_current_resnet50_runs_without_data():
    adapter = get_adapter("oneflow")
    cell = Cell("oneflow", "resnet50", "amp", False, 256, Layout(1, 8))
    assert adapter.skip_reason(cell, adapter.resolved_options(CURRENT)) is None


RN50_FIXTURE = FIXTURES / "oneflow_cnn_current" / "1n2g_rn50_b256_amp_1.log"
# iterations 6..25, b256 per device: rank 0 10 * 0.16 s + 10 * 0.2 s = 3.6 s, rank 1 20 * 0.2 s
# = 4.0 s (the slowest rank's window time)
RN50_EXPECTED = 2 * 20 * 256 / 4.0


def test_oneflow_current_resnet50_parses_through_the_adapter(tmp_path: Path):
    adapter = get_adapter("oneflow")
    cell = fixture_cell(adapter, "resnet50", RN50_FIXTURE)
    assert (cell.batch_size, cell.layout.devices, cell.precision) == (256, 2, "amp")
    result = adapter.parse(
        run_folder(RN50_FIXTURE, cell, tmp_path), cell, adapter.resolved_options(CURRENT)
    )
    assert str(result.method) == "printed_rates" and set(result.by_rank()) == {0, 1}
    tp = run_throughput(result, Window(5, 20))
    assert tp.throughput_samples_per_s == pytest.approx(RN50_EXPECTED, rel=1e-9)
    assert tp.throughput_samples_per_s == pytest.approx(2560.0)
    assert (tp.window_first_step, tp.window_last_step) == (6, 25)
    # the first line's rate (9.85 samples/s: 26 s with the graph's compilation) ruins a window
    # that takes it in: iterations 1..20, rank 0 26.0 + 9 * 0.16 + 10 * 0.2 s, rank 1
    # 256 / 9.8 + 19 * 0.2 s (the slowest)
    with_compile = run_throughput(result, Window(0, 20))
    assert with_compile.throughput_samples_per_s == pytest.approx(
        2 * 20 * 256 / (256 / 9.8 + 19 * 0.2), rel=1e-9
    )


def test_oneflow_current_resnet50_per_rank_batch_from_the_arguments(tmp_path: Path):
    """The argument list's train_batch_size (per device) must be the run facts' (else a
    ParseError at its line); an eval line (`[eval]`, not printed with --skip-eval) is read past."""
    from dlperf.parse.upstream import RunFacts
    from dlperf.parse.upstream.oneflow import parse_oneflow_cnn_current

    lines = RN50_FIXTURE.read_text().splitlines()
    lines.append(
        "[rank:0] [eval], epoch: 0/1, iter: 781/781, loss: 0.00000, top1: 0.00100, "
        "throughput: 2000.00 | 2024-05-06 10:21:01.322"
    )
    log = tmp_path / "node0.log"
    log.write_text("\n".join(lines) + "\n")
    result = parse_oneflow_cnn_current([log], RunFacts(256, 2, 1))
    assert len(result.records) == 54
    tp = run_throughput(result, Window(5, 20))
    assert tp.throughput_samples_per_s == pytest.approx(RN50_EXPECTED, rel=1e-9)
    with pytest.raises(ParseError) as err:
        parse_oneflow_cnn_current([log], RunFacts(128, 2, 1))
    assert (err.value.path, err.value.line) == (str(log), 38)
    assert "train_batch_size = 256 but the cell's batch size per device 128" in str(err.value)


# ----------------------------------------------------------------------------- LiBai GPT-2

LIBAI_SCRIPT = "/workspace/libai/tools/train_net.py"


def test_oneflow_gpt_current_release_facts():
    """LiBai v0.3.0 (1185ad9), OneFlow-GPT's successor, on OneFlow 0.9.0 cu118."""
    adapter = get_adapter("oneflow_gpt")
    options = adapter.resolved_options(CURRENT)
    assert adapter.environment_of(options) == "envs/libai_current.yaml"
    assert (Path(__file__).parents[1] / "envs" / "libai_current.yaml").is_file()
    assert adapter.environment_of(adapter.resolved_options({})) == "envs/oneflow_gpt.yaml"
    assert adapter.launch_of(options) == "oneflow"
    source = adapter.source_of("gpt", options)
    assert (source.repo, source.path, source.tag) == (
        "Oneflow-Inc/libai",
        "",
        "1185ad9ca3fec9977ca1c2501b5d4c42c1b86ff3",
    )
    assert adapter.script("gpt", options) == LIBAI_SCRIPT
    assert adapter.parser_of("gpt", options).__name__ == "parse_libai"
    assert adapter.parser_of("gpt", adapter.resolved_options({})).__name__ == "parse_oneflow_gpt"
    assert "LiBai v0.3.0" in adapter.version_of(options)
    adapter.check_case(case("oneflow_gpt", "gpt", **CURRENT))


@pytest.mark.parametrize("layout", ["1n1g", "2n8g"])
def test_oneflow_gpt_current_command(layout: str, tmp_path: Path):
    """oneflow.distributed.launch runs tools/train_net.py per GPU (as tools/train.sh, with its
    ONEFLOW_FUSE_OPTIMIZER_UPDATE_CAST=true); DLPerf's GPT as LazyConfig overrides."""
    adapter = get_adapter("oneflow_gpt")
    lay = Layout.parse(layout)
    options = CURRENT | {"data_dir": "/data/gpt/web_text_document", "tensor_parallel": 2}
    for node in range(lay.nodes):
        ctx = context(adapter, "gpt", layout, node, "amp", False, tmp_path, options, bsz=4)
        cmd = adapter.command(ctx)
        assert cmd[:2] == ["env", "ONEFLOW_FUSE_OPTIMIZER_UPDATE_CAST=true"]
        assert not any(a.startswith("PYTHONPATH=") for a in cmd)
        start = cmd.index("oneflow.distributed.launch")
        assert cmd[start + 1 : start + 7] == [
            f"--nproc_per_node={lay.gpus_per_node}",
            f"--nnodes={lay.nodes}",
            f"--node_rank={node}",
            f"--master_addr={ctx.master_addr}",
            f"--master_port={ctx.master_port}",
            LIBAI_SCRIPT,
        ]
        # micro 4, data parallel = devices / tensor parallel 2 (at least 1)
        global_batch = 4 * max(1, lay.devices // 2)
        assert cmd[start + 7 :] == [
            "--config-file",
            "/workspace/libai/configs/gpt2_pretrain.py",
            "model.cfg.hidden_layers=16",
            "model.cfg.hidden_size=1536",
            "model.cfg.ffn_hidden_size=6144",
            "model.cfg.num_attention_heads=16",
            "model.cfg.max_seq_length=2048",
            "train.dist.tensor_parallel_size=2",
            "train.dist.pipeline_parallel_size=1",
            "train.dist.pipeline_num_layers=16",
            "train.train_micro_batch_size=4",
            f"train.global_batch_size={global_batch}",
            f"train.train_iter={ctx.steps}",
            "train.log_period=10",
            "train.amp.enabled=True",
            "train.activation_checkpoint.enabled=True",
            "train.evaluation.enabled=False",
            f"train.output_dir={tmp_path / f'libai_output_node{node}'}",
            "tokenization.tokenizer.vocab_file=/workspace/libai/data_test/gpt_data/gpt2-vocab.json",
            "tokenization.tokenizer.merges_file=/workspace/libai/data_test/gpt_data/gpt2-merges.txt",
            "dataloader.train.dataset.0.data_prefix=/data/gpt/web_text_document",
            "dataloader.train.dataset.0.indexed_dataset.data_prefix=/data/gpt/web_text_document",
            "dataloader.train.dataset.0.max_seq_length=2048",
            "dataloader.test.0.dataset.data_prefix=/data/gpt/web_text_document",
            "dataloader.test.0.dataset.indexed_dataset.data_prefix=/data/gpt/web_text_document",
            "dataloader.test.0.dataset.max_seq_length=2048",
        ]
        # OneFlow-GPT's flags are gone (train_net.py's argparse takes only --config-file and
        # the like before the overrides)
        assert not any(a.startswith(("--num-layers", "--fp16", "--node-ips")) for a in cmd)
    extra = options | {"extra_args": ["tokenization.tokenizer.vocab_file=/v.json"]}
    fp32 = adapter.command(context(adapter, "gpt", "1n1g", 0, "fp32", False, tmp_path, extra))
    assert "train.amp.enabled=False" in fp32  # gpt2_pretrain.py turns AMP on: fp32 says no
    assert fp32[-1] == "tokenization.tokenizer.vocab_file=/v.json"  # the last override wins
    plain = adapter.command(context(adapter, "gpt", "1n1g", 0, "fp32", False, tmp_path))
    assert "oneflow_gpt.training" in plain and "oneflow.distributed.launch" not in plain


LIBAI_FIXTURE = FIXTURES / "libai" / "1n8g_gpt_b8_amp_1.log"
# iterations 21..100 of 64 samples (8 x 8 GPUs): the running means at iterations 20 (1.5000 s)
# and 100 (1.5100 s) over the timed iterations 3.. give 98 * 1.51 - 18 * 1.5 = 120.98 s
LIBAI_EXPECTED = 80 * 64 / (98 * 1.51 - 18 * 1.5)


def test_oneflow_gpt_current_parses_through_the_adapter(tmp_path: Path):
    adapter = get_adapter("oneflow_gpt")
    cell = fixture_cell(adapter, "gpt", LIBAI_FIXTURE)
    assert (cell.batch_size, cell.layout.devices) == (8, 8)
    result = adapter.parse(
        run_folder(LIBAI_FIXTURE, cell, tmp_path), cell, adapter.resolved_options(CURRENT)
    )
    assert str(result.method) == "step_times" and {r.rank for r in result.records} == {-1}
    tp = run_throughput(result, Window(20, 80))
    assert tp.throughput_samples_per_s == pytest.approx(LIBAI_EXPECTED, rel=1e-9)
    assert tp.throughput_samples_per_s == pytest.approx(42.32104480)
    assert (tp.window_first_step, tp.window_last_step) == (21, 100)
    # iterations 91..100: 98 * 1.51 - 88 * 1.508 = 15.276 s
    assert tp.step_time_ms[-1] == pytest.approx(1527.6)
    # the first record: iterations 1..10, of which 3..10 timed (8 * 1.525 s, 8 * 64 samples)
    first = result.records[0]
    assert (first.step, first.steps, first.samples) == (10, 10, 512)
    assert first.duration_s == pytest.approx(12.2)


def test_libai_coloured_prefix_and_untimed_first_lines(tmp_path: Path):
    """termcolor colours the prefix when it thinks stdout is a terminal; with log_period 1 the
    lines of iterations 1 and 2 have no `time` yet and are read past; the printed consumed
    samples give the global batch, whatever the run facts say."""
    from dlperf.parse.upstream import RunFacts
    from dlperf.parse.upstream.oneflow import parse_libai

    def line(k: int, mean: str | None) -> str:
        timed = f"time: {mean} s/iter  data_time: 0.0020 s/iter total_throughput: 1.00 samples/s "
        return (
            f"\x1b[32m[05/06 11:04:07 lb.utils.events]: \x1b[0m eta: 0:00:0{9 - k}  iteration: "
            f"{k}/10  consumed_samples: {32 * (k + 1)}  total_loss: 10.84  "
            f"{timed if mean else ''}lr: 1.50e-04  "
        )

    # running means over iterations 3..k+1: 0.5, 0.5, 0.6 (iteration 5: 3 * 0.6 - 2 * 0.5 = 0.8)
    lines = [line(0, None), line(1, None), line(2, "0.5000"), line(3, "0.5000"), line(4, "0.6000")]
    log = tmp_path / "node0.log"
    log.write_text("\n".join(lines) + "\n")
    result = parse_libai([log], RunFacts(8, 8, 1, 2048))
    assert [(r.step, r.steps, r.samples) for r in result.records] == [
        (3, 3, 32),
        (4, 1, 32),
        (5, 1, 32),
    ]
    assert [r.duration_s for r in result.records] == pytest.approx([0.5, 0.5, 0.8])
    assert run_throughput(result, Window(3, 2)).throughput_samples_per_s == pytest.approx(
        2 * 32 / (0.5 + 0.8)
    )
    notes = " ".join(result.notes)
    assert "consumed_samples advance 32 per iteration but the run facts say 64" in notes
    assert f"{log}:1: read past (iteration 1, not timed)" in notes
    # a line after iteration 2 without `time` is an error
    log.write_text("\n".join([*lines, line(5, None)]) + "\n")
    with pytest.raises(ParseError, match=rf"{re.escape(str(log))}:6: .*no `time"):
        parse_libai([log], RunFacts(8, 8, 1, 2048))


# ----------------------------------------------------------------------------- HugeCTR

HUGECTR_COMMIT = "a89cf40460b3e73d77a8d84264a001c253730576"  # v24.06.00
# A stand-in for samples/wdl/wdl_8gpu.py: the lines of v24.06.00's script that release current
# edits, around functions that print what they were given instead of training.
WDL_STANDIN = """\
import json
import sys


def CreateSolver(**kw):
    return kw


def DataReaderParams(**kw):
    return kw


solver = CreateSolver(
    max_eval_batches=300,
    batchsize_eval=16384,
    batchsize=16384,
    lr=0.001,
    vvgpu=[[0, 1, 2, 3, 4, 5, 6, 7]],
    repeat_dataset=True,
)
reader = DataReaderParams(
    source=["./criteo_data/train/_file_list.txt"],
    eval_source="./criteo_data/val/_file_list.txt",
)


class Model:
    def fit(self, **kw):
        print(json.dumps({"solver": solver, "reader": reader, "fit": kw, "argv": sys.argv}))


model = Model()
model.fit(max_iter=2300, display=200, eval_interval=1000, snapshot=1000000, snapshot_prefix="wdl")
"""


def test_hugectr_current_release_facts():
    adapter = get_adapter("hugectr")
    options = adapter.resolved_options(CURRENT)
    assert adapter.environment_of(options) == "nvcr.io/nvidia/merlin/merlin-hugectr:24.06"
    assert adapter.source_of("wide_deep", options).tag == HUGECTR_COMMIT
    assert adapter.source_of("wide_deep", options).repo == "NVIDIA-Merlin/HugeCTR"
    assert adapter.parser_of("wide_deep", options).__name__ == "parse_hugectr_current"
    assert adapter.parser_of("wide_deep", adapter.resolved_options({})).__name__ == "parse_hugectr"
    assert adapter.launch_of(options) == "mpirun"
    assert adapter.script("wide_deep", options) == "/hugectr/samples/wdl/wdl_8gpu.py"
    cell = Cell("hugectr", "wide_deep", "amp", False, 2048, Layout(1, 8))
    assert "data_dir" in adapter.skip_reason(cell, options)  # no config_template needed
    assert adapter.skip_reason(cell, adapter.resolved_options(CURRENT | {"data_dir": "/d"})) is None
    assert "config_template" in adapter.skip_reason(cell, adapter.resolved_options({}))


def test_hugectr_current_command_runs_the_edited_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """2 nodes x 8 GPUs, amp: node 0's mpirun starts one process per node running the runner,
    which makes the script's batch size global (2 * 8 * 2048), vvgpu one list per node, mixed
    precision with the loss scale, the data under data_dir, and fit the cell's iterations with
    display 1 and no evaluation or snapshots."""
    monkeypatch.setenv("SLURM_JOB_NODELIST", "gpu[01-02]")
    root = tmp_path / "hugectr"
    (root / "samples" / "wdl").mkdir(parents=True)
    (root / "samples" / "wdl" / "wdl_8gpu.py").write_text(WDL_STANDIN)
    adapter = get_adapter("hugectr")
    options = CURRENT | {"source_root": str(root), "data_dir": "/data/criteo_data/"}
    ctx = context(adapter, "wide_deep", "2n8g", 0, "amp", False, tmp_path, options, bsz=2048)
    cmd = adapter.command(ctx)
    assert cmd[0] == "mpirun" and has(cmd, "-np", 2) and has(cmd, "-H", "gpu01:1,gpu02:1")
    runner = tmp_path / "hugectr_hugectr.wide_deep.amp.noxla.b2048.2n8g.py"
    assert cmd[-2:] == ["python3", str(runner)]
    out = subprocess.run(
        [sys.executable, str(runner)], capture_output=True, text=True, check=True
    ).stdout
    seen = json.loads(out)
    assert seen["solver"] == {
        "max_eval_batches": 300,
        "batchsize_eval": 16384,
        "batchsize": 2 * 8 * 2048,
        "lr": 0.001,
        "vvgpu": [list(range(8)), list(range(8))],
        "use_mixed_precision": True,
        "scaler": 1024.0,
        "repeat_dataset": True,
    }
    assert seen["reader"] == {
        "source": ["/data/criteo_data/train/_file_list.txt"],
        "eval_source": "/data/criteo_data/val/_file_list.txt",
    }
    assert seen["fit"] == {
        "max_iter": ctx.steps,
        "display": 1,
        "eval_interval": 0,
        "snapshot": 0,
        "snapshot_prefix": "wdl",
    }
    assert seen["argv"] == [str(root / "samples" / "wdl" / "wdl_8gpu.py")]
    other = adapter.command(
        context(adapter, "wide_deep", "2n8g", 1, "amp", False, tmp_path, options, bsz=2048)
    )
    assert "mpirun" not in other
    # fp32 on one GPU: no mixed precision, vvgpu [[0]]
    ctx = context(adapter, "wide_deep", "1n1g", 0, "fp32", False, tmp_path, options, bsz=4096)
    runner = Path(adapter.command(ctx)[-1])
    seen = json.loads(
        subprocess.run([sys.executable, str(runner)], capture_output=True, text=True).stdout
    )
    assert seen["solver"]["vvgpu"] == [[0]] and seen["solver"]["batchsize"] == 4096
    assert "use_mixed_precision" not in seen["solver"]


def test_hugectr_current_runner_stops_when_the_sample_changed(tmp_path: Path):
    root = tmp_path / "hugectr"
    (root / "samples" / "wdl").mkdir(parents=True)
    (root / "samples" / "wdl" / "wdl_8gpu.py").write_text(
        WDL_STANDIN.replace("display=200", "display=100")
    )
    adapter = get_adapter("hugectr")
    options = CURRENT | {"source_root": str(root), "data_dir": "/d"}
    ctx = context(adapter, "wide_deep", "1n8g", 0, "fp32", False, tmp_path, options)
    runner = adapter.command(ctx)[-1]
    done = subprocess.run([sys.executable, runner], capture_output=True, text=True)
    assert done.returncode == 1 and done.stdout == ""
    assert "has 0 copies of 'model.fit(max_iter=2300, display=200" in done.stderr


def test_hugectr_current_parses_through_the_adapter(tmp_path: Path):
    adapter = get_adapter("hugectr")
    fixture = FIXTURES / "hugectr_current" / "2n8g_wdl_b2048_amp_1.log"
    cell = fixture_cell(adapter, "wide_deep", fixture)
    logs = run_folder(fixture, cell, tmp_path)
    result = adapter.parse(logs, cell, adapter.resolved_options(CURRENT))
    tp = run_throughput(result, Window(4, 16))
    # iterations 5..20: 8 * 0.0102 s + 8 * 0.0098 s, 32768 samples each
    assert tp.throughput_samples_per_s == pytest.approx(16 * 32768 / 0.16, rel=1e-9)
    with pytest.raises(ParseError, match="no HugeCTR `Iter:` lines"):
        adapter.parse(logs, cell, adapter.resolved_options({}))  # DLPerf v1.0's parser


# ----------------------------------------------------------------------------- NGC MXNet

MXNET_FOLDER = "/workspace/DeepLearningExamples/MxNet/Classification/RN50v1.5"


def test_ngc_mxnet_current_release_facts():
    adapter = get_adapter("ngc_mxnet")
    options = adapter.resolved_options(CURRENT)
    assert adapter.environment_of(options) == "nvcr.io/nvidia/mxnet:24.06-py3"
    assert adapter.source_of("resnet50", options).tag == "729963dd47e7c8bd462ad10bfac7a7b0b604e6dd"
    assert adapter.parser_of("resnet50", options).__name__ == "parse_dle_mxnet_rn50_current"
    assert (
        adapter.parser_of("resnet50", adapter.resolved_options({})).__name__
        == "parse_dle_mxnet_rn50"
    )
    assert adapter.launch_of(options) == "horovodrun"
    assert adapter.script("resnet50", options) == f"{MXNET_FOLDER}/train.py"


def test_ngc_mxnet_current_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """DLPerf v1.0's train.py flags (all still in fit.py, models.py, data.py at 729963d), the
    runner's 4-channel input in float16 and its environment, and the dllogger JSON in the run
    folder; horovodrun from node 0 as before."""
    monkeypatch.setenv("SLURM_JOB_NODELIST", "gpu[01-02]")
    adapter = get_adapter("ngc_mxnet")
    ctx = context(adapter, "resnet50", "2n8g", 0, "amp", False, tmp_path, dict(CURRENT))
    cmd = adapter.command(ctx)
    v1 = adapter.command(context(adapter, "resnet50", "2n8g", 0, "amp", False, tmp_path, {}))
    assert "horovodrun" in cmd and has(cmd, "-np", 16)
    script = cmd.index(f"{MXNET_FOLDER}/train.py")
    args = cmd[script + 1 :]
    assert has(args, "--batch-size", 16 * 64) and has(args, "--dtype", "float16")
    assert has(args, "--image-shape", "4,224,224")  # v1: 3,224,224
    assert has(args, "--data-backend", "synthetic") and has(args, "--benchmark-iters", ctx.steps)
    assert has(args, "--disp-batches", 1) and has(args, "--kv-store", "horovod")
    assert args[-2:] == ["--dllogger-log", str(tmp_path / "dle_mxnet_dllogger.json")]
    v1_args = v1[v1.index(f"{MXNET_FOLDER}/train.py") + 1 :]
    assert has(v1_args, "--image-shape", "3,224,224") and "--dllogger-log" not in v1_args
    env = {a.split("=")[0]: a.split("=", 1)[1] for a in cmd[1 : cmd.index("horovodrun")]}
    assert env["MXNET_OPTIMIZER_AGGREGATION_SIZE"] == "60"  # v1: 54
    assert env["MXNET_ENABLE_CUDA_GRAPHS"] == "1" and env["OMP_NUM_THREADS"] == "1"
    assert "HOROVOD_NUM_NCCL_STREAMS" not in env  # DLPerf v1.0's, not the runner's
    assert "MXNET_OPTIMIZER_AGGREGATION_SIZE=54" in v1
    # a case's own env still wins; fp32 keeps 3 channels; data_dir gives DALI's RecordIO
    own = CURRENT | {"env": {"MXNET_OPTIMIZER_AGGREGATION_SIZE": "30"}, "data_dir": "/rec"}
    fp32 = adapter.command(context(adapter, "resnet50", "1n1g", 0, "fp32", False, tmp_path, own))
    assert "MXNET_OPTIMIZER_AGGREGATION_SIZE=30" in fp32 and "MXNET_ASYNC_GPU_ENGINE=1" in fp32
    assert has(fp32, "--image-shape", "3,224,224") and has(fp32, "--data-train", "/rec/train.rec")
    assert has(fp32, "--data-backend", "dali-gpu")


def test_ngc_mxnet_current_parses_through_the_adapter(tmp_path: Path):
    adapter = get_adapter("ngc_mxnet")
    fixture = FIXTURES / "dle_mxnet_rn50_current" / "1n4g_rn50_b256_amp_1.log"
    cell = fixture_cell(adapter, "resnet50", fixture)
    logs = run_folder(fixture, cell, tmp_path)
    tp = run_throughput(adapter.parse(logs, cell, adapter.resolved_options(CURRENT)), Window(4, 16))
    # iterations 5..20: 8 * 0.24 s + 8 * 0.26 s = 4.0 s for 16 * 1024 images
    assert tp.throughput_samples_per_s == pytest.approx(16 * 1024 / 4.0, rel=1e-9)
    with pytest.raises(ParseError, match="no DLE MXNet `Epoch"):
        adapter.parse(logs, cell, adapter.resolved_options({}))  # DLPerf v1.0's parser


def test_a_run_is_launched_with_the_options_its_measure_leaves_quiet():
    """The measure leaves Megatron's new options out at their defaults (cells stay fresh); the run
    spec built from that measure has them back, so a command reads every option it takes."""
    from dlperf.launch.spec import Harness
    from dlperf.launch.submit import build_spec

    cell = Cell("megatron", "gpt", "amp", False, 8, Layout(1, 1))
    measure = measure_of(
        CellSpec(cell, dict(CURRENT)), {"window": {"warmup": 2, "measure": 3}, "device": "cpu"}
    )
    assert {"vocab_size", "without_apex_te", "sources_dir"}.isdisjoint(measure["options"])
    site = {"env": {}, "cpus_per_task": 1}
    harness = Harness("local", site, time_limit_min=1, wait_grace_s=1, local_devices=1)
    spec, _ = build_spec(measure, 1, harness)
    adapter = get_adapter("megatron")
    assert spec.options == adapter.resolved_options(dict(CURRENT))
    assert (spec.options["vocab_size"], spec.options["without_apex_te"]) == (50257, False)
