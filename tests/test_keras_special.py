"""The special cases on the Keras 3 workloads: Wide & Deep and InsightFace (dlperf.workloads.
keras_models) trained by the JAX workload and the TensorFlow workload, each in the environment
the workflow builds for it (as tests/test_jax_workload.py and test_tensorflow_workload.py run
them), at toy sizes for a few steps.

Neither workload counts FLOPs as it trains: both state dlperf.flops' formula. The formula is held
against the Keras model itself here: the products (dot_general, conv_general_dilated) in the
jaxpr of its forward pass and of the JAX workload's whole training step are counted.
"""

from __future__ import annotations

import functools
import json
import math
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from workflow_helpers import framework_python, run_ranks, workload_env

from dlperf import flops, logline
from dlperf.launch.oom import is_oom
from dlperf.parse.builtin import parse_builtin_logs

if TYPE_CHECKING:
    from conftest import WorkloadRuns

# every test starts a framework's process (seconds to tens of seconds each): not the fast lane
pytestmark = [pytest.mark.integration, pytest.mark.frameworks]

MODULES = {"jax": "dlperf.workloads.jax_train", "tensorflow": "dlperf.workloads.tf_train"}
FAST_COMPILE = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"
BACKEND_ENV = {
    "jax": {"KERAS_BACKEND": "jax", "XLA_FLAGS": FAST_COMPILE},
    "tensorflow": {"KERAS_BACKEND": "tensorflow"},
}
QUIET = ["--device", "cpu", "--threads", "1", "--calibrate-s", "0"]

WIDE_DEEP = ["--vocab-size", "1000", "--hidden-units-num", "2", "--hidden-size", "32"]
WIDE_DEEP += ["--deep-embedding-vec-size", "8"]
FACE = ["--image-size", "32", "--num-classes", "101", "--embedding-size", "16"]
# KerasHub's ResNet wants 64 filters in its first stage; the others narrow, one block each
NARROW_RESNET = {
    "stackwise_num_blocks": [1, 1, 1, 1],
    "stackwise_num_filters": [64, 16, 16, 16],
    "input_conv_filters": [16],
}
# ResNet-50's widths with one block per stage: dlperf.flops' formula still describes it
FEW_BLOCKS = {"depths": [1, 1, 1, 1]}


def workload(framework: str, model: str, *flags: str, batch: int = 4, steps: int = 3) -> list[str]:
    return [
        framework_python(framework), "-u", "-m", MODULES[framework], "--model", model,
        "--batch-size", str(batch), "--steps", str(steps), *QUIET, *flags,
    ]  # fmt: skip


def run(framework: str, command: list[str]) -> subprocess.CompletedProcess[str]:
    env = workload_env(**BACKEND_ENV[framework])
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)


def lines(text: str, kind: str) -> list[dict[str, str]]:
    parsed = [logline.parse_line(line) for line in text.splitlines()]
    return [fields for k, fields in filter(None, parsed) if k == kind]


def wide_deep_mlp_macs(vocab: int, width: int, layers: int, hidden: int) -> int:
    del vocab  # the look-ups are gathers: no products whatever the vocabulary
    return (13 + 26 * width) * hidden + (layers - 1) * hidden * hidden + hidden


@pytest.mark.parametrize(
    ("framework", "flags"),
    [("jax", []), ("tensorflow", ["--precision", "amp", "--jit-compile"])],
    ids=["jax-fp32", "tensorflow-amp-xla"],
)
def test_wide_deep_trains_and_states_the_mlp_formula(
    framework: str, flags: list[str], tmp_path: Path
) -> None:
    """Three steps of sigmoid cross entropy near ln 2 at initialisation, the step lines parse, the
    parameters are both tables and the MLP's, and the flops line is the formula, exactly."""
    proc = run(framework, workload(framework, "wide_deep", *WIDE_DEEP, *flags, batch=8))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    log = tmp_path / "rank0.log"
    log.write_text(proc.stdout)
    records = parse_builtin_logs([log]).records
    assert [r.step for r in records] == [1, 2, 3] and {r.samples for r in records} == {8}
    losses = [float(fields["loss"]) for fields in lines(proc.stdout, logline.STEP)]
    assert all(math.isfinite(x) for x in losses) and abs(losses[0] - math.log(2)) < 0.15
    (config,) = lines(proc.stdout, logline.CONFIG)
    sizes = json.loads(config["model_config"])
    assert sizes["vocab_size"] == 1000 and sizes["deep_embedding_vec_size"] == 8
    assert (sizes["dense_fields"], sizes["deep_sparse_fields"], sizes["wide_sparse_fields"]) == (
        13,
        26,
        2,
    )
    mlp = wide_deep_mlp_macs(1000, 8, 2, 32)
    tables = 1000 * (1 + 8)
    biases = 32 + 32 + 1
    assert int(config["params"]) == tables + mlp + biases
    (stated,) = lines(proc.stdout, logline.FLOPS)
    formula = flops.wide_deep_training_flops_per_sample(flops.WideDeepShape.from_config(sizes))
    assert float(stated["per_sample"]) == pytest.approx(formula, rel=1e-6) == 6 * mlp
    assert stated["math"] == ("bf16" if "amp" in flags else "fp32")


@pytest.mark.parametrize(
    ("framework", "flags"),
    [("jax", ["--precision", "amp"]), ("tensorflow", [])],
    ids=["jax-amp", "tensorflow-fp32"],
)
def test_insightface_trains_with_partial_fc(
    framework: str, flags: list[str], tmp_path: Path
) -> None:
    """A narrow ResNet backbone and ArcFace over 101 classes, half of them sampled per step:
    finite losses, the step lines parse, the classifier stated as both split it (on one rank:
    all 101 rows); a backbone of other widths than ResNet-50's
    has no formula, so no flops line (MFU n/a)."""
    command = workload(framework, "insightface", *FACE, "--sample-rate", "0.5", *flags)
    proc = run(framework, [*command, "--model-config", json.dumps(NARROW_RESNET)])
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    log = tmp_path / "rank0.log"
    log.write_text(proc.stdout)
    assert [r.step for r in parse_builtin_logs([log]).records] == [1, 2, 3]
    losses = [float(fields["loss"]) for fields in lines(proc.stdout, logline.STEP)]
    assert all(math.isfinite(x) and x > 0 for x in losses)
    (config,) = lines(proc.stdout, logline.CONFIG)
    described = json.loads(config["model_config"])
    assert described["sampled_classes"] == 50
    assert described["classifier"] == "split"
    assert described["classifier_rows_per_rank"] == 101
    assert described["backbone"]["stackwise_num_filters"] == [64, 16, 16, 16]
    assert config["amp_dtype"] == ("bfloat16" if flags else "none")
    assert lines(proc.stdout, logline.FLOPS) == []
    assert len(lines(proc.stdout, logline.MEMORY)) == 1


def test_insightface_states_the_formula_at_resnet50_widths() -> None:
    """ResNet-50's widths (one block per stage): TensorFlow's flops line is dlperf.flops'
    InsightFace formula with the sampled classifier (JAX's: test_insightface_counted_...). No
    step is run (--steps 0): the line comes before them."""
    command = workload("tensorflow", "insightface", *FACE, "--sample-rate", "0.5", steps=0)
    proc = run("tensorflow", [*command, "--model-config", json.dumps(FEW_BLOCKS)])
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    (stated,) = lines(proc.stdout, logline.FLOPS)
    formula = flops.insightface_training_flops_per_sample(32, 101, 16, 0.5, (1, 1, 1, 1))
    assert float(stated["per_sample"]) == pytest.approx(formula, rel=1e-5)


@pytest.mark.parametrize("framework", ["jax", "tensorflow"])
def test_a_model_config_or_option_error_names_the_key(framework: str) -> None:
    """Refused before the backend starts, each naming what to change."""
    wide_deep = run(
        framework, workload(framework, "wide_deep", "--model-config", '{"hidden_size": 8}')
    )
    assert wide_deep.returncode != 0
    assert "model_config: hidden_size: Wide & Deep takes no model_config" in wide_deep.stderr
    typo = run(framework, workload(framework, "insightface", "--model-config", '{"depth": [1]}'))
    assert typo.returncode != 0
    assert "unknown insightface model_config key 'depth'" in typo.stderr
    small = run(framework, workload(framework, "insightface", *FACE, "--sample-rate", "0.01"))
    assert small.returncode != 0
    assert "sample_rate 0.01: partial FC's sample of 1 of num_classes 101 cannot hold" in (
        small.stderr
    )


@pytest.mark.parametrize(
    ("framework", "message"),
    [
        ("jax", "RESOURCE_EXHAUSTED: Out of memory allocating"),
        ("tensorflow", "OOM when allocating tensor"),
    ],
)
def test_wide_deep_beyond_the_memory_limit_is_an_out_of_memory_failure(
    framework: str, message: str, workload_runs: WorkloadRuns
) -> None:
    """A billion-row vocabulary under a 3 GiB address-space cap (the workload contract's
    out-of-memory run): the tables cannot be allocated, the framework says so in its words, and
    the adapter reads the failure as out of memory. (A far smaller cap stops JAX before it
    starts: glibc cannot allocate its threads' memory.)"""
    run = workload_runs.oom(framework)
    assert run.cell.model == "wide_deep" and run.options["vocab_size"] == 1_000_000_000
    assert run.exit_codes[0] != 0
    text = run.text()
    assert message in text, text[-2000:]
    assert is_oom(text)


@pytest.mark.parametrize("framework", ["jax", "tensorflow"])
def test_insightface_trains_data_parallel_on_two_ranks(
    framework: str, workload_runs: WorkloadRuns
) -> None:
    """Two processes as the harness starts them (jax.distributed / MultiWorkerMirroredStrategy;
    the workload contract's two-rank run), each with its own batch, partial FC drawing on both.
    Both split the classifier (51 rows a rank, 25 of them sampled): both ranks' loss is the one
    mean over all the images."""
    run = workload_runs.tiny(framework, "insightface").check_ok()
    assert run.options.get("sample_rate", 1.0) < 1.0  # partial FC on both ranks
    records = run.records()
    assert sorted((r.rank, r.step) for r in records) == [(k, i) for k in (0, 1) for i in (1, 2, 3)]
    assert run.config()["world_size"] == "2"
    described = json.loads(run.config()["model_config"])
    assert described["classifier"] == "split"
    assert (described["classifier_rows_per_rank"], described["sampled_classes"]) == (51, 50)
    losses = [[s["loss"] for s in run.lines(logline.STEP, rank)] for rank in (0, 1)]
    assert losses[0] == losses[1]


# A classifier of 5M x 16 fp32 (320 MB; the step holds about 8 of its size: weight, momentum,
# gradient, the normalised copy, their buffers) under a 3.8 GiB address-space cap. Measured peak
# address space uncapped (VmPeak, these runs' flags, a 2-core CPU): 4.20 GiB on one rank, 3.36 GiB
# on each of two (whose baseline is 0.33 GiB higher: jax.distributed and gloo), so about 0.4 GiB
# either side of the cap.
SPLIT_FITS = {
    "image_size": 16, "num_classes": 5_000_000, "embedding_size": 16, "sample_rate": 1.0,
    "threads": 1, "calibrate_s": 0, "memory_limit_gb": 3.8, "model_config": NARROW_RESNET,
}  # fmt: skip


def test_split_classifier_trains_where_a_whole_one_is_out_of_memory(
    workload_runs: WorkloadRuns,
) -> None:
    """Under the same cap, a classifier too large for one rank (out of memory before its first
    step ends, as the adapter reads it: XLA's allocator or, inside the step, YNNPACK's) trains
    split over two: each rank holds half of it (2.5M rows)."""
    adapter = workload_runs.adapter("jax")
    one = workload_runs.run("jax", workload_runs.cell(adapter, "insightface", 1), SPLIT_FITS)
    assert one.exit_codes[0] != 0 and one.lines(logline.STEP) == []
    assert is_oom(one.text()), one.text()[-2000:]
    two = workload_runs.run("jax", workload_runs.cell(adapter, "insightface", 2), SPLIT_FITS)
    two.check_ok()
    assert json.loads(two.config()["model_config"])["classifier_rows_per_rank"] == 2_500_000
    assert sorted((r.rank, r.step) for r in two.records()) == [
        (k, i) for k in (0, 1) for i in (1, 2, 3)
    ]


# Run in the JAX environment: the products in the jaxprs of the model's forward pass and of
# jax_train's training step (one device), per sample, and the flops line log_flops states; for
# InsightFace also the ArcFace layer's output on random features, to compare with PyTorch's.
COUNT = r"""
import contextlib, io, json, math, os, sys
os.environ |= {"KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"}
import jax, numpy as np
from jax.extend.core import ClosedJaxpr, Jaxpr
from jax.sharding import Mesh
from dlperf.workloads import jax_train, keras_models

def macs(jaxpr):
    total = 0
    for eqn in jaxpr.eqns:
        out = math.prod(eqn.outvars[0].aval.shape) if eqn.outvars else 0
        if eqn.primitive.name == "dot_general":
            (contracted, _), _ = eqn.params["dimension_numbers"]
            lhs = eqn.invars[0].aval.shape
            total += out * math.prod(lhs[i] for i in contracted)
        elif eqn.primitive.name == "conv_general_dilated":
            rhs_spec = eqn.params["dimension_numbers"].rhs_spec
            rhs = eqn.invars[1].aval.shape
            total += out * math.prod(rhs[i] for i in rhs_spec[1:])
        for value in eqn.params.values():
            for sub in value if isinstance(value, (tuple, list)) else (value,):
                if isinstance(sub, (ClosedJaxpr, Jaxpr)):
                    total += macs(getattr(sub, "jaxpr", sub))
    return total

results = []
for argv in json.loads(sys.argv[1]):
    args = jax_train.parse_args(argv)
    config = keras_models.model_configuration(args)
    model = keras_models.build_model(args, config)
    x, y = keras_models.synthetic_batch(args, config, 0)
    trainable = [v.value for v in model.trainable_variables]
    frozen = [v.value for v in model.non_trainable_variables]
    optimizer = keras_models.make_optimizer(args)
    optimizer.build(model.trainable_variables)
    step = jax_train.make_step(args, model, optimizer, Mesh(np.array(jax.devices()[:1]), ("data",)))
    state = (trainable, frozen, [v.value for v in optimizer.variables])
    forward = jax.make_jaxpr(lambda t, f, x: model.stateless_call(t, f, x, training=True))
    stated = io.StringIO()
    with contextlib.redirect_stdout(stated):
        keras_models.log_flops(args, config, "fp32")
    result = {
        "forward": 2 * macs(forward(trainable, frozen, x).jaxpr) / args.batch_size,
        "step": 2 * macs(jax.make_jaxpr(step)(state, x, y).jaxpr) / args.batch_size,
        "stated": stated.getvalue(),
    }
    if args.model == "insightface":
        head = model.get_layer("arcface")
        features = np.random.default_rng(0).standard_normal((8, args.embedding_size), "float32")
        labels = np.array([0, 5, 5, 99, 42, 7, 98, 3], "int32")
        out = head(features, labels)
        result["arcface"] = {
            "features": features.tolist(), "labels": labels.tolist(),
            "weight": np.asarray(head.weight.value).tolist(),
            "logits": np.asarray(out["logits"]).tolist(),
            "renumbered": np.asarray(out["labels"]).tolist(),
        }
    results.append(result)
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def counted() -> list[dict]:
    common = ["--batch-size", "4", "--steps", "1", "--device", "cpu"]
    face = ["--model", "insightface", *common, *FACE, "--model-config", json.dumps(FEW_BLOCKS)]
    face += ["--num-classes", "100"]  # half of them whole: the formula's count exactly
    argvs = [
        ["--model", "wide_deep", *common, *WIDE_DEEP],
        [*face, "--sample-rate", "1.0"],
        [*face, "--sample-rate", "0.5"],
    ]
    command = [framework_python("jax"), "-c", COUNT, json.dumps(argvs)]
    env = workload_env(**BACKEND_ENV["jax"])
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


def stated_flops(result: dict) -> float:
    (fields,) = lines(result["stated"], logline.FLOPS)
    return float(fields["per_sample"])


def test_wide_deep_counted_flops_are_the_formula(counted: list[dict]) -> None:
    """The deep MLP's products only (the tables are looked up), forward and backward: 3 x 2 x
    the MLP's MACs, what dlperf.flops states, exactly, and the training step counts it too (the
    first layer's input gradient included: the deep table is trained)."""
    wide_deep = counted[0]
    formula = flops.wide_deep_training_flops_per_sample(
        flops.WideDeepShape(hidden_units_num=2, hidden_size=32, deep_embedding_vec_size=8)
    )
    assert 3 * wide_deep["forward"] == wide_deep["step"] == formula
    assert stated_flops(wide_deep) == pytest.approx(formula, rel=1e-6)


@pytest.mark.parametrize(("index", "rate"), [(1, 1.0), (2, 0.5)])
def test_insightface_counted_forward_flops_are_the_formula(
    counted: list[dict], index: int, rate: float
) -> None:
    """KerasHub's ResNet (ResNet-50 widths, one block per stage) at 32 pixels, fc5 and the
    classes scored: 3 x its forward products is dlperf.flops' formula, exactly. (The jaxpr of
    the training step counts more: the input gradients of strided convolutions are convolutions
    over the dilated gradient, zeros included.)"""
    result = counted[index]
    formula = flops.insightface_training_flops_per_sample(32, 100, 16, rate, (1, 1, 1, 1))
    assert 3 * result["forward"] == pytest.approx(formula, rel=1e-9)
    assert result["step"] > 2 * result["forward"]
    assert stated_flops(result) == pytest.approx(formula, rel=1e-5)


def test_arcface_is_the_pytorch_recipes(counted: list[dict]) -> None:
    """The Keras ArcFace layer against the PyTorch recipe's margin on the same weights: every
    logit (all classes), and with partial FC each image's own class renumbered into a sample of
    50 whose other logits are those of classes of the whole classifier."""
    torch = pytest.importorskip("torch")
    from dlperf.workloads.torch_models import insightface

    def expected(head: dict) -> torch.Tensor:
        features = torch.nn.functional.normalize(torch.tensor(head["features"]))
        weight = torch.nn.functional.normalize(torch.tensor(head["weight"]))
        return insightface.arcface(features @ weight.T, torch.tensor(head["labels"]))

    whole = counted[1]["arcface"]
    assert whole["renumbered"] == whole["labels"]
    assert torch.tensor(whole["logits"]) == pytest.approx(expected(whole), abs=1e-3)

    sampled = counted[2]["arcface"]
    logits, every = torch.tensor(sampled["logits"]), expected(sampled)
    assert logits.shape == (8, 50)
    for row, (label, renumbered) in enumerate(
        zip(sampled["labels"], sampled["renumbered"], strict=True)
    ):
        assert float(logits[row, renumbered]) == pytest.approx(float(every[row, label]), abs=1e-3)
        others = torch.cat([logits[row, :renumbered], logits[row, renumbered + 1 :]])
        distance = (others[:, None] - every[row][None, :]).abs().min(dim=1).values
        assert float(distance.max()) < 1e-3
    # one sample for the batch, sorted by class: each class one number, in the classes' order
    pairs = sorted(set(zip(sampled["labels"], sampled["renumbered"], strict=True)))
    assert len(pairs) == len(set(sampled["labels"]))
    assert [number for _, number in pairs] == sorted(number for _, number in pairs)


# Run in the JAX environment, one process with two CPU devices (a mesh of two, as two ranks'
# shard_map runs it): InsightFace's classifier split over them against the same model whole on
# each (jax_train's data parallel as it trains W&D), with the same weights: the whole one holds
# full (101 x 16), the split one its rows in the two ranks' blocks (51 rows each, rank 1's last
# row no class's). Each steps on the same two batches; then partial FC's layer alone.
SPLIT = r"""
import dataclasses, json, os, sys
os.environ |= {"KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"}
os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2"
import jax, keras, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from dlperf.workloads import jax_train, keras_models
from dlperf.workloads.keras_special import ClassifierSplit

argv, steps = json.loads(sys.argv[1]), int(sys.argv[2])
mesh = Mesh(np.array(jax.devices()[:2]), ("data",))
on = lambda spec: NamedSharding(mesh, spec)

def build(args, world):
    facts = ClassifierSplit(args.num_classes, world, args.sample_rate)
    split = dataclasses.replace(
        facts, position=lambda: jax.lax.axis_index("data"),
        gather=lambda x: jax.lax.all_gather(x, "data", tiled=True),
    ) if world > 1 else None
    keras.utils.set_random_seed(0)  # the same backbone for both
    return keras_models.build_model(args, keras_models.model_configuration(args, facts), split), facts

args = jax_train.parse_args(argv)
split_model, facts = build(args, 2)
whole_model, _ = build(jax_train.parse_args([*argv, "--sample-rate", "1"]), 1)
rng = np.random.default_rng(7)
full = rng.normal(0, 0.01, (args.num_classes, args.embedding_size)).astype("float32")
blocks = np.zeros((2 * facts.block, args.embedding_size), "float32")
for rank, (start, end) in enumerate(facts.shards):
    blocks[rank * facts.block : (rank + 1) * facts.block] = rng.normal(0, 0.01, blocks.shape)[: facts.block]
    blocks[rank * facts.block : rank * facts.block + end - start] = full[start:end]
whole_model.get_layer("arcface").weight.assign(full)
x, y = zip(*(keras_models.synthetic_batch(args, {}, rank) for rank in range(2)))
x = jax.tree.map(lambda *a: np.concatenate(a), *x)
y = np.concatenate(y)

def train(model, split, weight):
    optimizer = keras_models.make_optimizer(args)
    optimizer.build(model.trainable_variables)
    specs = jax_train.state_specs(model, optimizer, split)
    values = [[v.value for v in vs] for vs in (
        model.trainable_variables, model.non_trainable_variables, optimizer.variables)]
    head = model.get_layer("arcface").weight
    index = [v.path for v in model.trainable_variables].index(head.path)
    values[0][index] = weight
    # a split block's optimizer slot: zeros for both blocks (the global array of two)
    values[2] = [np.zeros((2 * v.shape[0], *v.shape[1:]), v.dtype) if s != P() else v
                 for v, s in zip(values[2], specs[2])]
    state = jax.tree.map(lambda v, s: jax.device_put(np.asarray(v), on(s)), tuple(values), specs)
    shapes = {
        "variable": list(head.shape), "global": list(state[0][index].shape),
        "shards": [list(s.data.shape) for s in state[0][index].addressable_shards],
        "slots": [list(state[2][i].shape) for i, s in enumerate(specs[2]) if s != P()],
        "params": model.count_params(),
    }
    step = jax_train.make_step(args, model, optimizer, mesh, split)
    batch = jax.device_put((x, y), on(P("data")))
    losses = []
    for _ in range(steps):
        state, loss = step(state, *batch)
        losses.append(np.asarray(loss).tolist())
    return losses, shapes

split_losses, split_shapes = train(split_model, True, blocks)
whole_losses, whole_shapes = train(whole_model, False, full)

# partial FC: the split layer (sample_rate 0.5) on 8 features, 4 a rank, against the whole one
sampled_model, sampled_facts = build(jax_train.parse_args([*argv, "--sample-rate", "0.5"]), 2)
sampled = sampled_model.get_layer("arcface")
features = np.random.default_rng(0).standard_normal((8, args.embedding_size), "float32")
labels = np.array([0, 5, 5, 99, 42, 7, 98, 60], "int32")
seeds = [v.value for v in sampled.non_trainable_variables]

def local(weight, features, labels):
    out, _ = sampled.stateless_call([weight], seeds, features, labels)
    return out["logits"], out["labels"]

partial = jax.jit(jax.shard_map(
    local, mesh=mesh, in_specs=(P("data"),) * 3, out_specs=(P("data"),) * 2, check_vma=False,
))
logits, renumbered = partial(*jax.device_put((blocks, features, labels), on(P("data"))))
whole = whole_model.get_layer("arcface")(features, labels)
print(json.dumps({
    "split": split_losses, "whole": whole_losses, "split_shapes": split_shapes,
    "whole_shapes": whole_shapes, "shards": facts.shards, "sampled_per_rank": sampled_facts.sampled,
    "partial": {
        "labels": labels.tolist(), "logits": np.asarray(logits).tolist(),
        "renumbered": np.asarray(renumbered).tolist(),
        "whole": np.asarray(whole["logits"]).tolist(),
    },
}))
"""


@pytest.fixture(scope="module")
def split_and_whole() -> dict:
    """SPLIT's three steps and partial FC's logits, 101 classes over two devices (4 images a
    device; a narrow backbone)."""
    argv = ["--model", "insightface", "--batch-size", "4", "--steps", "3", "--device", "cpu"]
    argv += [*FACE, "--sample-rate", "1.0", "--model-config", json.dumps(NARROW_RESNET)]
    command = [framework_python("jax"), "-c", SPLIT, json.dumps(argv), "3"]
    env = workload_env(**BACKEND_ENV["jax"])
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


def test_split_classifier_trains_as_the_whole_one(split_and_whole: dict) -> None:
    """Step by step, the split classifier's loss (the same on both devices: the mean over all 8
    images) is the mean of the whole classifier's two device losses (each the mean over its own 4
    images), data parallel on the same devices: the same loss, so steps 2 and 3 check that the
    update was the same too (a backbone gradient averaged instead of summed over the devices
    moved step 2's loss by 14%). Within 1e-3 relative: the two sum the same terms in other
    orders, and ArcFace's tiny initial weights (norm 0.04, learning rate 0.1) amplify fp32
    rounding about 400 times a step (measured: 3e-8, 4e-8, then 3e-5)."""
    split, whole = split_and_whole["split"], split_and_whole["whole"]
    assert len(split) == len(whole) == 3
    for ranks, replicas in zip(split, whole, strict=True):
        assert ranks[0] == ranks[1]
        assert ranks[0] == pytest.approx(sum(replicas) / 2, rel=1e-3)
    assert all(math.isfinite(loss) and loss > 0 for loss, _ in split)


def test_each_rank_holds_its_block_of_the_classifier(split_and_whole: dict) -> None:
    """101 classes on 2 ranks: each rank's ArcFace variable and optimizer slot 51 x 16 (rank 0's
    51 classes; rank 1's 50 and a row no class uses), the step's global arrays 102 rows sharded
    over the two devices, and the model 50 x 16 parameters smaller than the whole one's."""
    assert split_and_whole["shards"] == [[0, 51], [51, 101]]
    split, whole = split_and_whole["split_shapes"], split_and_whole["whole_shapes"]
    assert split["variable"] == [51, 16] and split["global"] == [102, 16]
    assert split["shards"] == [[51, 16], [51, 16]] and split["slots"] == [[102, 16]]
    assert whole["variable"] == whole["global"] == [101, 16] and whole["slots"] == []
    assert whole["params"] - split["params"] == 50 * 16


def test_split_partial_fc_scores_a_sample_of_each_ranks_classes(split_and_whole: dict) -> None:
    """sample_rate 0.5 split: each rank scores all 8 images (both ranks' 4) against 25 of its own
    classes (half its smallest share, the same count on both), each image's own class on the
    rank that holds it and only there, with its margin logit the whole classifier's, and every
    other logit one of that rank's classes' in the whole classifier."""
    assert split_and_whole["sampled_per_rank"] == 25
    partial = split_and_whole["partial"]
    logits, renumbered, whole = partial["logits"], partial["renumbered"], partial["whole"]
    shards = split_and_whole["shards"]
    assert len(logits) == 16 and {len(row) for row in logits} == {25}  # 8 rows on each rank
    for image, label in enumerate(partial["labels"]):
        holders = [rank for rank, (start, end) in enumerate(shards) if start <= label < end]
        assert [r for r in range(2) if renumbered[r * 8 + image] >= 0] == holders
        for rank, (start, end) in enumerate(shards):
            row, own = logits[rank * 8 + image], renumbered[rank * 8 + image]
            if own >= 0:
                assert row[own] == pytest.approx(whole[image][label], abs=1e-3)
            others = [v for column, v in enumerate(row) if column != own]
            mine = whole[image][start:end]
            assert max(min(abs(v - w) for w in mine) for v in others) < 1e-3


# Run as two ranks in the TensorFlow environment: InsightFace on tf_train's own strategy and step,
# its classifier split (argv[2] "split") or whole on each rank ("whole"), the ArcFace weight set
# from one seeded 101 x 16 matrix (a rank's block: its classes' rows, then zeros), args.steps;
# prints each step's loss and the classifier's shapes.
TF_SPLIT = r"""
import json, os, sys
import numpy as np
from dlperf.workloads import keras_models, tf_train
from dlperf.workloads.keras_special import ClassifierSplit

args, split_on = tf_train.parse_args(json.loads(sys.argv[1])), sys.argv[2] == "split"
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
tf_train.setup_process(args, rank, world, world)
import keras, tensorflow as tf

tf_train.pick_device(args, tf, rank, world)
strategy = tf_train.make_strategy(tf, world, on_gpu=False)
facts = ClassifierSplit(args.num_classes, world, args.sample_rate)
config = keras_models.model_configuration(args, facts if split_on else None)
split = tf_train.with_collectives(tf, strategy, facts) if split_on else None
keras.utils.set_random_seed(0)
with strategy.scope():
    model = keras_models.build_model(args, config, split)
    optimizer = keras_models.make_optimizer(args)
    optimizer.build(model.trainable_variables)
whole = np.random.default_rng(0).normal(0.0, 0.01, (args.num_classes, args.embedding_size))
weight = model.get_layer("arcface").weight
if split_on:
    start, end = facts.shards[rank]
    block = np.zeros((facts.block, args.embedding_size))
    block[: end - start] = whole[start:end]
    weight.assign(block.astype("float32"))
else:
    weight.assign(whole.astype("float32"))
step = tf_train.make_step(args, tf, strategy, model, optimizer, split)
x, y = tf.nest.map_structure(tf.constant, keras_models.synthetic_batch(args, config, rank))
losses = [float(step(x, y)) for _ in range(args.steps)]
slots = [list(v.shape) for v in optimizer.variables if tuple(v.shape) == tuple(weight.shape)]
print(json.dumps({
    "losses": losses, "weight": list(weight.shape), "slots": slots,
    "params": model.count_params(), "classifier": config["classifier"],
}))
"""


@pytest.fixture(scope="module")
def tf_split_and_whole(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict]]:
    """Two TensorFlow ranks (4 images each, a narrow backbone, 101 classes, jit_compile), split and
    whole: each rank's last output line."""
    argv = ["--model", "insightface", "--batch-size", "4", "--steps", "3", "--device", "cpu"]
    argv += ["--threads", "1", *FACE, "--sample-rate", "1.0", "--jit-compile"]
    argv += ["--model-config", json.dumps(NARROW_RESNET)]
    results = {}
    for kind in ("split", "whole"):
        command = [framework_python("tensorflow"), "-c", TF_SPLIT, json.dumps(argv), kind]
        folder = tmp_path_factory.mktemp(kind)
        env = functools.partial(workload_env, **BACKEND_ENV["tensorflow"])
        logs = run_ranks(command, folder, env=env)
        results[kind] = [json.loads(log.read_text().splitlines()[-1]) for log in logs]
    return results


def test_tensorflow_split_classifier_trains_as_the_whole_one(
    tf_split_and_whole: dict[str, list[dict]],
) -> None:
    """TensorFlow's split (tf.distribute's all-gather and all-reduce in the step, each worker's
    block its own), step by step: every rank's loss is the mean over all 8 images, the mean of
    the whole classifier's two rank losses (each over its own 4) from the same weights, so steps
    2 and 3 check the update too. Within 1e-3 relative, as JAX's split (the same sums in other
    orders, amplified by ArcFace's tiny weights)."""
    split = [rank["losses"] for rank in tf_split_and_whole["split"]]
    whole = [rank["losses"] for rank in tf_split_and_whole["whole"]]
    assert len(split[0]) == 3 and split[0] == split[1]  # one loss, the same on both ranks
    for step, loss in enumerate(split[0]):
        assert loss == pytest.approx((whole[0][step] + whole[1][step]) / 2, rel=1e-3)
    assert whole[0] != whole[1]  # the whole one's ranks see their own images
    assert all(math.isfinite(loss) and loss > 0 for loss in split[0])


def test_each_tensorflow_worker_holds_its_block_of_the_classifier(
    tf_split_and_whole: dict[str, list[dict]],
) -> None:
    """101 classes on 2 workers: each worker's ArcFace weight and its momentum 51 x 16, the
    model 50 x 16 parameters smaller than the whole one's 101 x 16, and the config line says
    split."""
    for split, whole in zip(tf_split_and_whole["split"], tf_split_and_whole["whole"], strict=True):
        assert split["weight"] == [51, 16] and split["slots"] == [[51, 16]]
        assert whole["weight"] == [101, 16] and whole["slots"] == [[101, 16]]
        assert whole["params"] - split["params"] == 50 * 16
        assert (split["classifier"], whole["classifier"]) == ("split", "replicated")
