"""Adapter `tensorflow2`, release `current`, for real: tensorflow/models' orbit trainers
(official/vision/train.py ResNet-50, official/nlp/train.py BERT pretraining) as the package
registry ships them (envs/tf_models.txt), on a CPU at toy size, through the workflow and the
adapter's own command, on TFRecords made here (dlperf.upstream_data.tf_models).

The fast tests check what a real run taught the adapter (a CPU run's strategy, the learning rate
for the run's batch, steps_per_loop) and the data makers; the integration tests run both trainers
once (about a minute each on two cores) and check the figure against the log lines by hand.
"""

from __future__ import annotations

import json
import re
import struct
import subprocess
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest
import yaml
from workflow_helpers import ROOT, environment_python, snakemake

from dlperf.adapters import get_adapter
from dlperf.adapters.base import TaskContext
from dlperf.adapters.releases import Ran
from dlperf.errors import ConfigError
from dlperf.launch.measured import measure_of
from dlperf.launch.record import RunRecord
from dlperf.matrix import Cell, CellSpec, Layout
from dlperf.upstream_data.tf_models import (
    BertSpec,
    ImageNetSpec,
    make_bert_pretraining,
    make_imagenet,
)
from dlperf.upstream_data.tfrecord import crc32c, example, masked_crc32c

CURRENT = {"release": "current"}
WINDOW = {"warmup": 5, "measure": 5}
BERT_SPEC = BertSpec(
    examples=16, files=2, seq_length=32, max_predictions_per_seq=5, vocab_size=1024
)
IMAGE_SPEC = ImageNetSpec(examples=16, files=2, image_size=64, classes=10)
# ResNet-50 itself at 64x64 pixels, its last stage 2x2 (at 32x32 it is 1x1, and batch norm over
# the 2 values of a batch of 2 sent the loss from 7.8 to 563 in 4 steps); BERT at 2 layers of 64
TINY_RESNET = {"task": {"model": {"input_size": [64, 64, 3]}}}
TINY_BERT = {
    "task": {
        "model": {
            "encoder": {
                "bert": {
                    "vocab_size": BERT_SPEC.vocab_size,
                    "hidden_size": 64,
                    "num_layers": 2,
                    "num_attention_heads": 2,
                    "intermediate_size": 128,
                    "max_position_embeddings": 64,
                }
            },
            "cls_heads": [{"inner_dim": 64, "num_classes": 2, "name": "next_sentence"}],
        }
    }
}
ABSL_STEP = re.compile(
    r"^I(\d{4} \d\d:\d\d:\d\d\.\d{6}) +\d+ controller\.py:\d+\] train \| step:\s*(\d+) \| steps/sec"
)


def ctx_for(model: str, options: dict, device: str, run_dir: Path, steps: int = 15) -> TaskContext:
    adapter = get_adapter("tensorflow2")
    return TaskContext(
        cell=Cell("tensorflow2", model, "fp32", False, 2, Layout(1, 1)),
        options=adapter.resolved_options(options),
        steps=steps,
        device=device,
        rank=0,
        node_rank=0,
        nodes=1,
        gpus_per_node=1,
        master_addr="127.0.0.1",
        master_port=29500,
        run_dir=run_dir,
    )


def override_of(command: list[str]) -> dict:
    arg = next(a for a in command if a.startswith("--params_override="))
    return json.loads(arg.split("=", 1)[1])


# ----------------------------------------------------------------------------- what a run taught


def test_on_a_cpu_the_strategy_mirrors_over_the_cpu_without_nccl(tmp_path: Path):
    """distribute_utils.get_distribution_strategy('mirrored', num_gpus=1) names GPU:0; on a CPU
    the real run logged `MirroredStrategy with devices (.../device:GPU:0,)`. num_gpus 0 gives
    CPU:0, and NCCL has nothing to reduce there."""
    adapter = get_adapter("tensorflow2")
    options = CURRENT | {"data_dir": "/d"}
    runtime = override_of(adapter.command(ctx_for("resnet50", options, "cpu", tmp_path)))["runtime"]
    assert runtime == {"num_gpus": 0, "enable_xla": False, "distribution_strategy": "mirrored"}
    gpu = override_of(adapter.command(ctx_for("resnet50", options, "cuda", tmp_path)))["runtime"]
    assert gpu["num_gpus"] == 1 and gpu["all_reduce_alg"] == "nccl"


def test_resnet50_learning_rate_is_scaled_to_the_global_batch(tmp_path: Path):
    """resnet_imagenet's stepwise rates are 0.1 x 4096 / 256 ... for its batch of 4096. At
    batch 2 (64x64, CPU) the unscaled rates made the loss spike (mean 38.4 over steps 1-100, 8.1
    over 101-200; scaled: 7.7, then 4.2); at 32x32 the run stopped at the trainer's loss bound
    (`The loss value is 2839095803904.0, which is larger than the bound 1000000.0`). Scaled like
    the experiment's own rule: 0.1 x batch / 256."""
    adapter = get_adapter("tensorflow2")
    cmd = adapter.command(ctx_for("resnet50", CURRENT | {"data_dir": "/d"}, "cpu", tmp_path))
    values = override_of(cmd)["trainer"]["optimizer_config"]["learning_rate"]["stepwise"]["values"]
    assert values == pytest.approx(
        [0.1 * 2 / 256, 0.01 * 2 / 256, 0.001 * 2 / 256, 0.0001 * 2 / 256]
    )
    bert = override_of(
        adapter.command(ctx_for("bert_base", CURRENT | {"data_dir": "/d"}, "cpu", tmp_path))
    )
    assert "stepwise" not in bert["trainer"]["optimizer_config"]["learning_rate"]


@pytest.mark.parametrize("model", ["resnet50", "bert_base"])
def test_no_checkpoint_is_saved_inside_the_window(tmp_path: Path, model: str):
    """tf.train.CheckpointManager saves its first checkpoint whatever its interval (it has no
    last step to count from): with a large interval the real run saved ckpt-5 after the first
    loop, 0.49 s of the 2.44 s that the next loop, the window, took (ResNet-50, CPU). orbit's
    Controller saves none when the interval is 0 (`if ...checkpoint_interval:`)."""
    adapter = get_adapter("tensorflow2")
    cmd = adapter.command(ctx_for(model, CURRENT | {"data_dir": "/d"}, "cpu", tmp_path))
    assert override_of(cmd)["trainer"]["checkpoint_interval"] == 0


def test_steps_per_loop_sets_the_log_interval_and_the_steps_of_release_current(tmp_path: Path):
    """Orbit logs once per loop of steps_per_loop steps: the run needs whole loops for the window
    plus one, so the steps follow the option (100 by default, as on GPUs)."""
    adapter = get_adapter("tensorflow2")
    fast = adapter.resolved_options(CURRENT | {"steps_per_loop": 5, "data_dir": "/d"})
    assert adapter.steps_for(5, 5, fast) == 15
    assert adapter.steps_for(5, 5, adapter.resolved_options(CURRENT)) == 200
    assert adapter.steps_for(5, 5) == 200  # DLPerf v1.0's
    trainer = override_of(adapter.command(ctx_for("bert_base", fast, "cpu", tmp_path)))["trainer"]
    assert (trainer["steps_per_loop"], trainer["summary_interval"], trainer["train_steps"]) == (
        5,
        5,
        15,
    )
    cell = Cell("tensorflow2", "bert_base", "fp32", False, 2, Layout(1, 1))
    spec = CellSpec(cell, {"release": "current", "steps_per_loop": 5, "data_dir": "/d"})
    assert measure_of(spec, {"window": WINDOW, "device": "cpu"})["steps"] == 15


def test_steps_per_loop_is_release_current_only_and_leaves_dlperf_v1_cells_as_they_were():
    adapter = get_adapter("tensorflow2")
    case = {"framework": "tensorflow2", "model": "resnet50", "batch_size": [2], "layouts": ["1n1g"]}
    with pytest.raises(ConfigError, match="steps_per_loop: only release current"):
        adapter.check_case(case | {"options": {"steps_per_loop": 5}})
    adapter.check_case(case | {"options": CURRENT | {"steps_per_loop": 5}})
    cell = Cell("tensorflow2", "resnet50", "fp32", False, 2, Layout(1, 1))
    assert "steps_per_loop" not in adapter.measured_options(cell, {})
    assert adapter.resolved_options(CURRENT)["steps_per_loop"] == 100


def pins(path: Path) -> dict[str, str]:
    lines = [line.split("#")[0].strip() for line in path.read_text().splitlines()]
    return dict(line.split("==", 1) for line in lines if "==" in line)


def test_the_tensorflow_pin_is_the_built_in_columns():
    """envs/tensorflow.txt owns the TensorFlow pin; envs/tf_models.txt repeats it (one
    requirements file per environment), and this keeps the two equal."""
    built_in = pins(ROOT / "envs" / "tensorflow.txt")
    tf_models = pins(ROOT / "envs" / "tf_models.txt")
    assert tf_models["tensorflow-cpu"] == built_in["tensorflow-cpu"]
    line = tf_models["tensorflow-cpu"].rsplit(".", 1)[0]  # 2.21: the releases of its line
    assert tf_models["tf-keras"].startswith(line) and tf_models["tensorflow-text"].startswith(line)
    assert tf_models["tf-models-nightly"].startswith(f"{line}.0.dev")


def test_release_current_says_it_runs_in_ci_on_a_cpu_from_envs_tf_models():
    adapter = get_adapter("tensorflow2")
    evidence = adapter.evidence_of("current")
    assert evidence.ran is Ran.CI and evidence.on.startswith("tests/test_tf_models_upstream.py")
    assert adapter.environment_of(CURRENT).startswith("envs/tf_models.txt")


# ----------------------------------------------------------------------------- the data makers


def test_crc32c_and_the_tfrecord_frame():
    assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    # Example{features{feature{key: "x" value{int64_list{value: [1, -1]}}}}}: the bytes
    # protobuf's SerializeToString(deterministic=True) gives (TensorFlow 2.21's example_pb2)
    record = example({"x": [1, -1]})
    assert record.hex() == "0a160a140a0178120f1a0d0a0b01ffffffffffffffffff01"
    both = example({"b": [b"ab"], "f": [0.5]})
    assert both.hex() == "0a1c0a0b0a016212060a040a0261620a0d0a0166120812060a040000003f"
    assert decode_example(record) == {"x": [1, -1]}
    assert decode_example(example({"b": [b"ab"], "f": [0.5]})) == {"b": [b"ab"], "f": [0.5]}


def read_frames(path: Path) -> list[bytes]:
    data, records, at = path.read_bytes(), [], 0
    while at < len(data):
        (length,) = struct.unpack_from("<Q", data, at)
        assert struct.unpack_from("<I", data, at + 8)[0] == masked_crc32c(data[at : at + 8])
        record = data[at + 12 : at + 12 + length]
        assert struct.unpack_from("<I", data, at + 12 + length)[0] == masked_crc32c(record)
        records.append(record)
        at += 16 + length
    return records


def test_the_data_sets_are_made_the_same_from_the_same_seed(tmp_path: Path):
    files = make_imagenet(tmp_path / "a", IMAGE_SPEC) + make_bert_pretraining(
        tmp_path / "a", BERT_SPEC
    )
    again = make_imagenet(tmp_path / "b", IMAGE_SPEC) + make_bert_pretraining(
        tmp_path / "b", BERT_SPEC
    )
    assert [p.name for p in files] == [
        "train-00000-of-00002",
        "train-00001-of-00002",
        "pretrain-00000-of-00002.tfrecord",
        "pretrain-00001-of-00002.tfrecord",
    ]
    assert [p.read_bytes() for p in files] == [p.read_bytes() for p in again]
    assert sum(len(read_frames(p)) for p in files[:2]) == IMAGE_SPEC.examples
    assert sum(len(read_frames(p)) for p in files[2:]) == BERT_SPEC.examples
    other = make_bert_pretraining(
        tmp_path / "c", BertSpec(seed=1, seq_length=32, max_predictions_per_seq=5)
    )
    assert other[0].read_bytes() != files[2].read_bytes()


def test_bert_records_are_masked_like_create_pretraining_data(tmp_path: Path):
    """[CLS] A [SEP] B [SEP], padded; masked positions sorted, never [CLS]/[SEP], weight 1 each
    and 0 for the padding; read back without protobuf."""
    (path,) = make_bert_pretraining(
        tmp_path, BertSpec(examples=4, files=1, seq_length=32, max_predictions_per_seq=5)
    )
    for record in read_frames(path):
        features = decode_example(record)
        ids, mask, segments = features["input_ids"], features["input_mask"], features["segment_ids"]
        assert len(ids) == len(mask) == len(segments) == 32
        real = sum(mask)
        assert ids[0] == 101 and ids[real - 1] == 102 and ids.count(102) == 2
        assert ids[real:] == [0] * (32 - real) and segments[real:] == [0] * (32 - real)
        positions = [p for p in features["masked_lm_positions"] if p]
        assert positions == sorted(positions) and 1 <= len(positions) <= 5
        assert all(ids[p] not in (101, 102) for p in positions)
        assert features["next_sentence_labels"][0] in (0, 1)
        assert features["masked_lm_weights"] == [1.0] * len(positions) + [0.0] * (
            5 - len(positions)
        )


def fields(data: bytes) -> list[tuple[int, bytes | int]]:
    """(field number, payload) of a protobuf message: varints and length-delimited fields."""
    out: list[tuple[int, bytes | int]] = []
    at = 0
    while at < len(data):
        key, at = varint(data, at)
        if key & 7 == 0:
            value, at = varint(data, at)
            out.append((key >> 3, value))
        else:
            assert key & 7 == 2, key
            length, at = varint(data, at)
            out.append((key >> 3, data[at : at + length]))
            at += length
    return out


def varint(data: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if not byte & 0x80:
            return value, at


def decode_example(record: bytes) -> dict[str, list]:
    """A serialized tf.train.Example read back without protobuf (feature.proto's layout)."""
    ((_, features),) = fields(record)
    out: dict[str, list] = {}
    for _, entry in fields(features):  # type: ignore[arg-type]
        (_, key), (_, feature) = fields(entry)  # type: ignore[arg-type]
        ((kind, values),) = fields(feature)  # type: ignore[arg-type]
        ((_, packed),) = fields(values)  # type: ignore[arg-type]
        name = key.decode()  # type: ignore[union-attr]
        if kind == 1:
            out[name] = [v for _, v in fields(values)]  # type: ignore[arg-type]
        elif kind == 2:
            out[name] = list(struct.unpack(f"<{len(packed) // 4}f", packed))  # type: ignore[arg-type]
        else:
            ints, at = [], 0
            while at < len(packed):  # type: ignore[arg-type]
                value, at = varint(packed, at)  # type: ignore[arg-type]
                ints.append(value - (1 << 64) if value >= 1 << 63 else value)
            out[name] = ints
    return out


# ----------------------------------------------------------------------------- the real trainers


@pytest.fixture(scope="module")
def done(tmp_path_factory) -> Path:
    """Both trainers through the workflow, once for the module."""
    python = environment_python(ROOT / "envs" / "tf_models.txt")
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    workdir = tmp_path_factory.mktemp("tf_models")
    make_imagenet(workdir / "data" / "imagenet", IMAGE_SPEC)
    make_bert_pretraining(workdir / "data" / "bert", BERT_SPEC)
    cases = []
    for model, data, tiny in (
        ("resnet50", "imagenet", TINY_RESNET),
        ("bert_base", "bert", TINY_BERT),
    ):
        config = workdir / f"tiny_{model}.yaml"
        config.write_text(yaml.safe_dump(tiny))
        options = CURRENT | {
            "python": python,
            "source_root": site,
            "data_dir": str(workdir / "data" / data),
            "steps_per_loop": 5,
            "extra_args": [f"--config_file={config}"],
        }
        if model == "bert_base":
            options |= {
                "seq_len": BERT_SPEC.seq_length,
                "max_predictions_per_seq": BERT_SPEC.max_predictions_per_seq,
            }
        cases.append(
            {
                "framework": "tensorflow2",
                "model": model,
                "batch_size": [2],
                "layouts": ["1n1g"],
                "options": options,
            }
        )
    suite = {
        "name": "tf_models",
        "repeats": 1,
        "window": WINDOW,
        "device": "cpu",
        "time_limit_min": 5,
        "cases": cases,
    }
    (workdir / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
    snakemake(workdir, "--cores", "2", "--config", "suite=suite.yaml", timeout=480)
    return workdir


def absl_seconds(stamp: str) -> float:
    return datetime.strptime(f"2000{stamp}", "%Y%m%d %H:%M:%S.%f").timestamp()


@pytest.mark.integration
@pytest.mark.frameworks
@pytest.mark.parametrize("model", ["resnet50", "bert_base"])
def test_the_orbit_trainer_runs_and_its_figure_is_the_log_lines(done: Path, model: str):
    cell_id = f"tensorflow2.{model}.fp32.noxla.b2.1n1g"
    runs = pd.read_csv(done / "results/tables/runs.tsv", sep="\t").set_index("cell_id")
    run = runs.loc[cell_id]
    assert run.status == "ok", run.status_detail
    # by hand: orbit's absl-stamped `train | step: N` lines, one per loop of 5 steps; the window
    # (warm-up 5, measure 5) is the loop that ends at step 10, timed from the line of step 5
    run_dir = done / "results" / "runs" / cell_id / "r1"
    stamps = {}
    for line in (run_dir / "node0.log").read_text().splitlines():
        m = ABSL_STEP.match(line)
        if m:
            stamps[int(m[2])] = absl_seconds(m[1])
    assert sorted(stamps) == [5, 10, 15]
    samples, seconds = 5 * 2, stamps[10] - stamps[5]
    assert (run.window_first_step, run.window_last_step) == (6, 10)
    assert run.window_samples == samples
    assert run.window_time_s == pytest.approx(seconds, abs=1e-6)
    assert run.throughput_samples_per_s == pytest.approx(samples / seconds, rel=1e-6)

    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["adapter"]["release"] == "current"
    # no claim of the release's environment: what ran is the record's (the venv's python here)
    assert "environment" not in manifest["adapter"]
    ran = RunRecord.read(run_dir / "manifest.json").ran_in
    assert (ran.container, ran.python) == ("", manifest["measure"]["options"]["python"])
    (task,) = manifest["tasks"]
    adapter = get_adapter("tensorflow2")
    options = manifest["measure"]["options"]
    recorded_dir = run_dir.relative_to(done)  # the workflow's paths are relative to its workdir
    ctx = ctx_for(model, options, "cpu", recorded_dir, steps=manifest["measure"]["steps"])
    assert task["command"] == adapter.command(ctx)
    command = task["command"]
    script = {"resnet50": "official/vision/train.py", "bert_base": "official/nlp/train.py"}[model]
    assert command[2:4] == [options["python"], f"{options['source_root']}/{script}"]
    override = override_of(command)
    assert override["trainer"]["train_steps"] == 15 and override["trainer"]["steps_per_loop"] == 5
    assert override["runtime"]["num_gpus"] == 0
    assert override["task"]["train_data"]["global_batch_size"] == 2
    assert command[-1] == f"--config_file={done / f'tiny_{model}.yaml'}"
    assert "saved checkpoint" not in (run_dir / "node0.log").read_text()
