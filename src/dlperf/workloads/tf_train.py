"""Built-in TensorFlow 2 workload: ResNet-50 v1.5, BERT-base pretraining, GPT, Wide & Deep or InsightFace on synthetic data, KerasHub models.

The models are the same KerasHub definitions the JAX workload trains (dlperf.workloads.keras_models:
ResNet-50 v1.5 as `ResNetImageClassifier`, BERT-base as `BertBackbone` with KerasHub's
`MaskedLMHead` and a next-sentence head, GPT as `GPT2CausalLM` or, with model_config
{"model_type": "llama", ...}, `LlamaCausalLM`, and the special cases Wide & Deep and InsightFace),
here on Keras 3's TensorFlow backend
(KERAS_BACKEND=tensorflow). The training step is a custom TensorFlow loop, as TensorFlow's guide
for tf.distribute writes it: `tf.GradientTape` over `model(x, training=True)`, the gradients
all-reduced, then `optimizer.apply`.

The xla column: the forward and backward pass are one `tf.function(jit_compile=True)` (XLA);
xla off is the same `tf.function` without jit_compile (TensorFlow's graph executor, op by op).

amp: Keras' mixed_bfloat16 policy on a CPU; mixed_float16 with a `LossScaleOptimizer` (dynamic
loss scaling) on a GPU. Weights stay float32; the loss is computed in float32.

Data parallel: one process per device under `tf.distribute.MultiWorkerMirroredStrategy`, its
TF_CONFIG built from the harness's RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT (worker i listens on
MASTER_PORT + 1 + i of its node's host; --worker-hosts names the hosts when there are several
nodes). Every worker feeds its own batch; the gradients of the loss (divided by the number of
workers) are summed by one batched all-reduce (ring over gRPC on CPU, NCCL on GPU), then every
worker applies the same update. BatchNorm's moving statistics stay per worker. Every variable is
mirrored (W&D's tables whole on every worker) but InsightFace's classifier, which is split across
the workers as the PyTorch and JAX workloads split it: each worker's component of the ArcFace
weight is its own block of ceil(num_classes / workers) rows, updated by its own gradient alone;
features and labels are all-gathered and the loss is a sharded cross entropy. Its collectives
run in the step's graph, so under jit_compile XLA compiles the backbone (images to features) and
the classifier runs beside it.

Every rank prints one line per step, in the format of dlperf.parse.builtin:

    dlperf-step rank=0 step=12 samples=32 start=1763780000.123456 end=1763780000.234567 loss=6.9
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from typing import Any

from dlperf.workloads.common import (
    fp32_math,
    log_measured_peak,
    log_memory,
    require_modules,
    start_rank,
    train_steps,
    workload_parser,
)
from dlperf.workloads.keras_models import (
    MODEL_CONFIG_HELP,
    build_model,
    log_config,
    log_flops,
    make_optimizer,
    model_configuration,
    synthetic_batch,
)
from dlperf.workloads.keras_special import ClassifierSplit


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = workload_parser(
        __doc__.splitlines()[0],
        precision_help="amp: Keras mixed_bfloat16 on CPU, mixed_float16 + loss scaling on GPU",
        model_config_help=MODEL_CONFIG_HELP,
    )
    p.add_argument(
        "--jit-compile", action="store_true", help="tf.function(jit_compile=True): the xla column"
    )
    p.add_argument(
        "--worker-hosts",
        default="",
        help="host of every node, node 0 first, comma-separated (default: MASTER_ADDR, one node)",
    )
    return p.parse_args(argv)


def tf_config(args: argparse.Namespace, rank: int, world: int, local_world: int) -> dict[str, Any]:
    """MultiWorkerMirroredStrategy's cluster: worker i on its node's host, MASTER_PORT + 1 + i."""
    hosts = [h for h in args.worker_hosts.split(",") if h] or [
        os.environ.get("MASTER_ADDR", "127.0.0.1")
    ]
    port = int(os.environ.get("MASTER_PORT", "29500"))
    workers = [
        f"{hosts[min(i // local_world, len(hosts) - 1)]}:{port + 1 + i}" for i in range(world)
    ]
    return {"cluster": {"worker": workers}, "task": {"type": "worker", "index": rank}}


def setup_process(args: argparse.Namespace, rank: int, world: int, local_world: int) -> None:
    """The Keras backend, TensorFlow's log level and TF_CONFIG: set before tensorflow is imported."""
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    if os.environ["KERAS_BACKEND"] != "tensorflow":
        raise SystemExit(
            f"dlperf: KERAS_BACKEND={os.environ['KERAS_BACKEND']}; this workload needs tensorflow"
        )
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")  # no INFO lines; warnings and errors stay
    if world > 1:
        os.environ["TF_CONFIG"] = json.dumps(tf_config(args, rank, world, local_world))
    else:
        os.environ.pop("TF_CONFIG", None)


def pick_device(args: argparse.Namespace, tf: Any, local_rank: int, local_world: int) -> bool:
    """Make this process see one GPU (its local rank's) or none, and set its CPU threads.
    Returns whether it trains on a GPU."""
    gpus = tf.config.list_physical_devices("GPU")
    if args.device == "cuda" and not gpus:
        raise SystemExit("dlperf: --device cuda but TensorFlow sees no GPU (tensorflow-cpu?)")
    on_gpu = bool(gpus) and args.device != "cpu"
    if on_gpu:
        mine = gpus[local_rank] if local_rank < len(gpus) else gpus[0]
        tf.config.set_visible_devices([mine], "GPU")
        tf.config.experimental.set_memory_growth(mine, True)
    else:
        tf.config.set_visible_devices([], "GPU")
    threads = args.threads or max(1, (os.cpu_count() or 1) // local_world)
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(min(2, threads + 1))
    return on_gpu


def sharded_xent(tf: Any, gather: Any) -> Any:
    """The softmax cross entropy of logits whose classes are split across the replicas (the JAX
    workload's sharded_xent, partial FC's DistCrossEntropy): the row max, the sum of
    exponentials and the target logit reduced over the replicas (the max through an all-gather:
    tf.distribute reduces by sum or mean only), so every replica returns the mean loss of all the
    rows; labels -1 are another replica's classes. The gradient is local, (softmax - one-hot) /
    rows: the features' gradient reaches their replica through the all-gather's own gradient,
    which sums it."""

    @tf.custom_gradient
    def xent(logits: Any, labels: Any) -> Any:
        context = tf.distribute.get_replica_context()
        logits = tf.cast(logits, tf.float32)
        tops = gather(tf.reduce_max(logits, axis=1, keepdims=True))  # every replica's rows' max
        top = tf.reduce_max(tf.reshape(tops, (-1, tf.shape(logits)[0])), axis=0)[:, None]
        exp = tf.exp(logits - top)
        total = context.all_reduce("sum", tf.reduce_sum(exp, axis=1, keepdims=True))
        picked = tf.gather(logits, tf.maximum(labels, 0)[:, None], axis=1, batch_dims=1) - top
        target = context.all_reduce("sum", tf.where(labels[:, None] >= 0, picked, 0.0))
        softmax = exp / total

        def grad(upstream: Any) -> tuple[Any, None]:
            one_hot = tf.one_hot(labels, tf.shape(softmax)[1], dtype=softmax.dtype)  # -1: zeros
            rows = tf.cast(tf.shape(labels)[0], softmax.dtype)
            return (softmax - one_hot) * (upstream / rows), None

        return tf.reduce_mean(tf.math.log(total) - target), grad

    return xent


def make_strategy(tf: Any, world: int, on_gpu: bool) -> Any:
    """MultiWorkerMirroredStrategy over the world's workers (NCCL on GPUs, ring over gRPC on
    CPUs); the default strategy on one."""
    if world == 1:
        return tf.distribute.get_strategy()
    implementation = tf.distribute.experimental.CommunicationImplementation
    return tf.distribute.MultiWorkerMirroredStrategy(
        communication_options=tf.distribute.experimental.CommunicationOptions(
            implementation=implementation.NCCL if on_gpu else implementation.RING
        )
    )


def with_collectives(tf: Any, strategy: Any, facts: ClassifierSplit) -> ClassifierSplit:
    """The split with tf.distribute's collectives, called inside strategy.run: this replica's
    index, and every replica's x concatenated along axis 0 in replica order (differentiable: its
    gradient is summed over the replicas and each replica's slice sent back). The all-gather
    sends its result to the input's device, which a tensor of a tf.function has only where one
    was set: this worker's own."""
    (device,) = strategy.extended.worker_devices

    def gather(x: Any) -> Any:
        with tf.device(device):
            x = tf.identity(x)
        return tf.distribute.get_replica_context().all_gather(x, axis=0)

    return dataclasses.replace(
        facts,
        position=lambda: tf.distribute.get_replica_context().replica_id_in_sync_group,
        gather=gather,
    )


def split_gradients(
    args: argparse.Namespace, tf: Any, model: Any, optimizer: Any, split: ClassifierSplit
) -> tuple[Any, list[bool]]:
    """InsightFace's gradients with its classifier split: (gradients(x, y), which trainable
    variable is the classifier's block). Every replica's loss is the mean over all the replicas'
    images, so the all-reduce sums the other gradients undivided; the block's is whole already.
    The split's collectives cannot sit in a nested tf.function (a merge_call there is refused),
    so under jit_compile only the backbone (images to features) is one compiled function; the
    classifier and its loss are traced into the step with the collectives."""
    import keras

    head = model.get_layer("arcface")
    backbone = keras.Model(model.input["images"], model.get_layer("features").output)
    features_of = tf.function(
        lambda images: backbone(images, training=True), jit_compile=args.jit_compile
    )
    split_xent = sharded_xent(tf, split.gather)

    def gradients(x: Any, y: Any) -> tuple[Any, Any]:
        del y  # the labels go in with the images: the margin needs them
        with tf.GradientTape() as tape:
            out = head(features_of(x["images"]), x["labels"])
            loss = split_xent(out["logits"], out["labels"])
            scaled = optimizer.scale_loss(loss)  # scaled up under fp16
        return loss, tape.gradient(scaled, model.trainable_variables)

    return gradients, [v.path == head.weight.path for v in model.trainable_variables]


def make_step(
    args: argparse.Namespace,
    tf: Any,
    strategy: Any,
    model: Any,
    optimizer: Any,
    split: ClassifierSplit | None = None,
) -> Any:
    """One training step over the fixed batch: a tf.function returning this worker's loss; with
    InsightFace's classifier split (a ClassifierSplit of several replicas), each replica's
    block of it is its own variable's local value, updated by its own gradient alone."""
    replicas = strategy.num_replicas_in_sync

    def xent(logits: Any, labels: Any) -> Any:
        logits = tf.cast(logits, tf.float32)
        return tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        )

    def gradients(x: Any, y: Any) -> tuple[Any, Any]:
        with tf.GradientTape() as tape:
            out = model(x, training=True)
            if args.model == "resnet50":
                loss = xent(out, y)
            elif args.model == "wide_deep":
                loss = tf.reduce_mean(
                    tf.nn.sigmoid_cross_entropy_with_logits(
                        labels=y, logits=tf.cast(out, tf.float32)
                    )
                )
            elif args.model == "insightface":  # labels renumbered into partial FC's sample
                loss = xent(out["logits"], out["labels"])
            elif args.model == "gpt":  # next-token loss: position t predicts token t + 1
                loss = xent(out[:, :-1], y)
            else:
                loss = xent(out["mlm"], y["mlm"]) + xent(out["nsp"], y["nsp"])
            # the all-reduce sums: each worker's share of the mean; scaled up under fp16
            scaled = optimizer.scale_loss(loss / replicas)
        return loss, tape.gradient(scaled, model.trainable_variables)

    own = [False] * len(model.trainable_variables)  # a split classifier's block: each its own
    compute = tf.function(gradients, jit_compile=args.jit_compile)
    if split is not None:
        compute, own = split_gradients(args, tf, model, optimizer, split)

    def replica_step(x: Any, y: Any) -> tuple[Any, Any]:
        loss, grads = compute(x, y)
        if replicas > 1:  # one batched collective for all the gradients, as DDP's buckets
            # (a split classifier's block is this replica's alone: its gradient is whole)
            shared = [g for g, mine in zip(grads, own, strict=True) if not mine]
            summed = iter(tf.distribute.get_replica_context().all_reduce("sum", shared))
            grads = [g if mine else next(summed) for g, mine in zip(grads, own, strict=True)]
        return loss, grads

    @tf.function
    def step(x: Any, y: Any) -> Any:
        loss, grads = strategy.run(replica_step, args=(x, y))
        # In cross-replica context, so the optimizer all-reduces nothing again; the clipping of
        # BERT's and GPT's global norm and loss scaling act on the summed gradients. Each
        # replica's component of a variable takes that replica's gradient: a split classifier's
        # block stays each replica's own.
        optimizer.apply(grads, model.trainable_variables)
        return loss

    return step


def _compute_capability(tf: Any) -> tuple[int, ...] | None:
    """The first visible GPU's (the rank's own: its CUDA_VISIBLE_DEVICES names one)."""
    gpus = tf.config.list_physical_devices("GPU")
    details = tf.config.experimental.get_device_details(gpus[0]) if gpus else {}
    return details.get("compute_capability")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rank, world, local_rank, local_world = start_rank(args)
    require_modules("tensorflow", ("tensorflow", "keras", "keras_hub"), "envs/tensorflow.txt")
    # InsightFace's classifier split across the ranks (on one rank: whole, a split of one)
    split_facts = None
    if args.model == "insightface":
        split_facts = ClassifierSplit(args.num_classes, world, args.sample_rate)
    # a config error stops it before the backend starts
    config = model_configuration(args, split_facts)
    setup_process(args, rank, world, local_world)

    import keras
    import tensorflow as tf

    on_gpu = pick_device(args, tf, local_rank, local_world)
    strategy = make_strategy(tf, world, on_gpu)
    use_amp = args.precision == "amp"
    amp_dtype = ("float16" if on_gpu else "bfloat16") if use_amp else "none"
    keras.config.set_dtype_policy(f"mixed_{amp_dtype}" if use_amp else "float32")
    keras.utils.set_random_seed(0)  # the same initial weights on every worker

    split = None
    if split_facts is not None and world > 1:  # a block of ceil(num_classes / ranks) rows each
        split = with_collectives(tf, strategy, split_facts)
    with strategy.scope():
        model = build_model(args, config, split)
        optimizer = make_optimizer(args)
        if use_amp and on_gpu:
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
        optimizer.build(model.trainable_variables)
    step = make_step(args, tf, strategy, model, optimizer, split)
    device = "/GPU:0" if on_gpu else "/CPU:0"
    with tf.device(device):  # the batch lives on the device: no input pipeline is timed
        x, y = tf.nest.map_structure(tf.constant, synthetic_batch(args, config, rank))

    if rank == 0:
        log_config(
            args,
            model,
            config,
            device="cuda" if on_gpu else "cpu",
            amp_dtype=amp_dtype,
            world_size=world,
            xla="jit_compile" if args.jit_compile else "none",
            tensorflow=tf.__version__,
            cuda=tf.sysconfig.get_build_info().get("cuda_version", "none") if on_gpu else "none",
        )
        math = {"float16": "fp16", "bfloat16": "bf16"}.get(amp_dtype) or fp32_math(
            _compute_capability(tf) if on_gpu else None,
            tf.config.experimental.tensor_float_32_execution_enabled(),
        )
        log_flops(args, config, math)

        last: list[Any] = []  # the sync reads the last product back (GPU ops run async)

        def matmul_of(n: int) -> Any:
            dtype = {"fp16": tf.float16, "bf16": tf.bfloat16}.get(math, tf.float32)
            with tf.device(device):
                a, b = (tf.cast(tf.random.normal((n, n)), dtype) for _ in range(2))
            return lambda: last.__setitem__(slice(None), [tf.linalg.matmul(a, b)])

        def sync() -> None:  # tf.test.experimental.sync_devices fails under multi-worker
            if last:
                last[0][0, 0].numpy()

        gpu = (
            tf.config.experimental.get_device_details(tf.config.get_visible_devices("GPU")[0]).get(
                "device_name", "gpu"
            )
            if on_gpu
            else "none"
        )
        log_measured_peak(rank, args, math, matmul_of, sync, gpu)
    if on_gpu:  # the memory line is the training's peak: the calibration's products are dlperf's
        tf.config.experimental.reset_memory_stats("GPU:0")
    train_steps(rank, args, local_rank if on_gpu else None, lambda: float(step(x, y)))
    log_memory(rank, tf.config.experimental.get_memory_info("GPU:0")["peak"] if on_gpu else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
