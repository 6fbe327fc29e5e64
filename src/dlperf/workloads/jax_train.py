"""Built-in JAX workload: ResNet50 v1.5, BERT-base pretraining, GPT, Wide & Deep or InsightFace on synthetic data, models from KerasHub.

The models are KerasHub's own definitions running on Keras 3's JAX backend, built from
hyperparameters without any download by dlperf.workloads.keras_models (shared with the
TensorFlow workload): ResNet-50 v1.5 (`ResNetImageClassifier`), BERT-base (`BertBackbone`
with KerasHub's `MaskedLMHead` and a next-sentence head) and GPT (`GPT2CausalLM`, or
`LlamaCausalLM` with model_config {"model_type": "llama", ...}; next-token cross entropy over
every position), and the special cases Wide & Deep and InsightFace (Keras layers over KerasHub's
ResNet, see keras_models). The training step is plain JAX over Keras' stateless API
(`model.stateless_call`, `optimizer.stateless_apply`), as the Keras guide for JAX writes it.

Data parallel as DistributedDataParallel does it: every process holds one device and its own
batch, and `jax.shard_map` runs the step per device with an explicit `pmean` of the gradients (and
of BatchNorm's moving statistics), so BatchNorm normalises over the local batch only. Processes
meet through `jax.distributed.initialize` at MASTER_ADDR:MASTER_PORT; CPU collectives use gloo.
Every variable is replicated (W&D's tables are whole on every rank) but InsightFace's classifier,
split across the ranks as the PyTorch workload splits it (model parallel): each rank holds a
block of ceil(num_classes / ranks) rows (its own classes, dlperf.flops.arcface_shard's, then rows
no class uses), a global array sharded over "data" as its optimizer slots are; every rank's
features and labels are all-gathered, each rank scores them all against its own classes, and the
loss is a sharded softmax cross entropy (sharded_xent: the max, the sum of exponentials and the
target logit reduced over the ranks). Every rank's loss is then the mean over all the ranks'
images, so the gradients of the rest of the model are summed over the ranks, not averaged (as the
PyTorch recipe's DDP hook sums them), and the classifier's block keeps its own.

Option sharding: fsdp (GPT): parameters, gradients and optimizer state split over the ranks by
XLA's SPMD partitioner, as MaxText's fsdp axis runs them (dlperf.workloads.jax_fsdp).

The xla column: JAX lowers every operation through XLA, and this workload always compiles the
whole training step into one XLA program (`jax.jit`), so it is measured in the xla=on column only
(the adapter skips xla=off cells). Op-by-op dispatch is no usable "off": on a 2-core CPU one
ResNet-50 step took over 8 minutes that way, against 0.6 s jitted.

Every rank prints one line per step, in the format of dlperf.parse.builtin:

    dlperf-step rank=0 step=12 samples=32 start=1763780000.123456 end=1763780000.234567 loss=6.9
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from typing import Any

from dlperf.workloads.common import (
    fp32_math,
    jax_allows_tf32,
    log_measured_peak,
    log_memory,
    require_modules,
    start_rank,
    train_steps,
    workload_parser,
)
from dlperf.workloads.jax_fsdp import fsdp_state_and_step, held_bytes
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
        precision_help="amp: Keras mixed_bfloat16 policy (bf16 compute, fp32 weights)",
        model_config_help=MODEL_CONFIG_HELP,
    )
    return p.parse_args(argv)


def setup_platform(args: argparse.Namespace, local_rank: int, local_world: int) -> None:
    """Pick the JAX platform and the CPU threads of this rank before JAX starts its backends."""
    os.environ.setdefault("KERAS_BACKEND", "jax")
    if os.environ["KERAS_BACKEND"] != "jax":
        raise SystemExit(
            f"dlperf: KERAS_BACKEND={os.environ['KERAS_BACKEND']}; this workload needs jax"
        )
    if args.device == "cpu":
        os.environ["JAX_PLATFORMS"] = "cpu"
    elif args.device == "cuda":
        os.environ["JAX_PLATFORMS"] = "cuda"
    # XLA takes 75% of the GPU up front: NVML's used memory would be the pool, not the training's
    # (TensorFlow's workload grows its memory as well); a site may set it otherwise
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    # XLA's CPU thread pool is as large as the CPU set the process may run on: give each rank
    # its share of the cores, as the PyTorch workload gives each rank cores / ranks threads.
    if args.device != "cuda" and hasattr(os, "sched_getaffinity"):
        cores = sorted(os.sched_getaffinity(0))
        share = args.threads or max(1, len(cores) // local_world)
        first = (local_rank * share) % len(cores)
        mine = [cores[(first + i) % len(cores)] for i in range(min(share, len(cores)))]
        os.sched_setaffinity(0, mine)


def split_leaves(model: Any, optimizer: Any) -> tuple[list[bool], list[bool]]:
    """Which trainable variables and which optimizer variables hold InsightFace's split
    classifier (each rank its own block): the ArcFace weight, and the optimizer's slots of it,
    which Keras names after its path (insightface_arcface_weight_momentum)."""
    weight = model.get_layer("arcface").weight
    prefix = weight.path.replace("/", "_") + "_"
    trainable = [v.path == weight.path for v in model.trainable_variables]
    slots = [
        v.name.startswith(prefix) and tuple(v.shape) == tuple(weight.shape)
        for v in optimizer.variables
    ]
    assert sum(trainable) == 1, "no single ArcFace weight among the trainable variables"
    return trainable, slots


def state_specs(model: Any, optimizer: Any, split: bool) -> Any:
    """The PartitionSpec of each leaf of the step's state (trainable, non_trainable, optimizer):
    all replicated, but with a split classifier its block and slots, sharded over "data"."""
    from jax.sharding import PartitionSpec as P

    trainable, slots = split_leaves(model, optimizer) if split else ([], [])

    def specs(flags: list[bool], count: int) -> list[Any]:
        return [P("data") if flags and flags[i] else P() for i in range(count)]

    return (
        specs(trainable, len(model.trainable_variables)),
        specs([], len(model.non_trainable_variables)),
        specs(slots, len(optimizer.variables)),
    )


def sharded_xent() -> Any:
    """The softmax cross entropy of logits whose classes are split across the ranks of "data"
    (partial FC's DistCrossEntropy; the PyTorch recipe's ShardedCrossEntropy): the row max, the
    sum of exponentials and the target logit reduced over the ranks, so every rank returns the
    mean loss of all the rows; labels -1 are another rank's classes. A custom VJP: the backward
    is local, (softmax - one-hot) / rows, so no collective is differentiated here (the gradient
    of the features reaches their rank through the all-gather's transpose, which sums it)."""
    import jax
    import jax.numpy as jnp

    def forward(logits: Any, labels: Any) -> tuple[Any, Any]:
        logits = logits.astype(jnp.float32)
        top = jax.lax.pmax(jnp.max(logits, axis=1, keepdims=True), "data")
        exp = jnp.exp(logits - top)
        total = jax.lax.psum(jnp.sum(exp, axis=1, keepdims=True), "data")
        picked = jnp.take_along_axis(logits, jnp.maximum(labels, 0)[:, None], axis=1) - top
        target = jax.lax.psum(jnp.where(labels[:, None] >= 0, picked, 0.0), "data")
        return jnp.mean(jnp.log(total) - target), (exp / total, labels)

    def backward(saved: Any, grad: Any) -> tuple[Any, None]:
        softmax, labels = saved
        one_hot = jax.nn.one_hot(labels, softmax.shape[1], dtype=softmax.dtype)  # -1: zeros
        return (softmax - one_hot) * (grad / labels.shape[0]), None

    xent = jax.custom_vjp(lambda logits, labels: forward(logits, labels)[0])
    xent.defvjp(forward, backward)
    return xent


def make_step(
    args: argparse.Namespace, model: Any, optimizer: Any, mesh: Any, split: bool = False
) -> Any:
    """The training step over (trainable, non_trainable, optimizer) state; data parallel over
    mesh, InsightFace's classifier split over it where `split` (state_specs)."""
    import jax
    import jax.numpy as jnp
    from jax.flatten_util import ravel_pytree
    from jax.sharding import PartitionSpec as P

    def xent(logits: Any, labels: Any) -> Any:
        logp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
        return -jnp.mean(jnp.take_along_axis(logp, labels[..., None], axis=-1))

    def sigmoid_xent(logits: Any, labels: Any) -> Any:
        z = logits.astype(jnp.float32)
        return -jnp.mean(labels * jax.nn.log_sigmoid(z) + (1 - labels) * jax.nn.log_sigmoid(-z))

    split_xent = sharded_xent() if split else None

    def loss_fn(trainable: Any, non_trainable: Any, x: Any, y: Any) -> Any:
        out, non_trainable = model.stateless_call(trainable, non_trainable, x, training=True)
        if args.model == "resnet50":
            loss = xent(out, y)
        elif args.model == "wide_deep":
            loss = sigmoid_xent(out, y)
        elif split_xent is not None:  # every rank's images against this rank's classes
            loss = split_xent(out["logits"], out["labels"])
        elif args.model == "insightface":  # labels renumbered into partial FC's sample
            loss = xent(out["logits"], out["labels"])
        elif args.model == "gpt":  # next-token loss: position t predicts token t + 1
            loss = xent(out[:, :-1], y)
        else:
            loss = xent(out["mlm"], y["mlm"]) + xent(out["nsp"], y["nsp"])
        return loss, non_trainable

    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)

    def all_reduce(tree: Any, reduce: Any = jax.lax.pmean) -> Any:
        flat, unravel = ravel_pytree(tree)
        return unravel(reduce(flat, "data"))

    world = mesh.devices.size
    specs = state_specs(model, optimizer, split)
    own = [spec != P() for spec in specs[0]]  # the split classifier's block: this rank's own

    def local_step(state: Any, x: Any, y: Any) -> Any:
        trainable, non_trainable, opt_vars = state
        (loss, non_trainable), grads = grad_fn(trainable, non_trainable, x, y)
        if world > 1 and split:
            # every rank's loss is the mean over all the ranks' images: a rank's gradient of a
            # replicated variable is its own images' share of the whole, so the shares are
            # summed (the classifier's block is this rank's alone: its gradient is whole)
            shared = [i for i, mine in enumerate(own) if not mine]
            summed = all_reduce([grads[i] for i in shared], jax.lax.psum)
            grads = list(grads)
            for i, g in zip(shared, summed, strict=True):
                grads[i] = g
        elif world > 1:
            # DDP's all-reduce of the gradients, in one flat buffer as DDP's buckets do: one
            # collective per tensor costs ~10 ms each over gloo, most of a small model's step.
            grads = all_reduce(grads)
        if world > 1:
            # BatchNorm's moving statistics: averaged so replicas agree (DDP broadcasts them).
            floats = [
                i for i, v in enumerate(non_trainable) if jnp.issubdtype(v.dtype, jnp.floating)
            ]
            if floats:
                averaged = all_reduce([non_trainable[i] for i in floats])
                non_trainable = list(non_trainable)
                for i, v in zip(floats, averaged, strict=True):
                    non_trainable[i] = v
        trainable, opt_vars = optimizer.stateless_apply(opt_vars, grads, trainable)
        return (trainable, non_trainable, opt_vars), loss[None]

    step = jax.shard_map(
        local_step,
        mesh=mesh,
        in_specs=(specs, P("data"), P("data")),
        out_specs=(specs, P("data")),
        check_vma=False,
    )
    return jax.jit(step, donate_argnums=0)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rank, world, local_rank, local_world = start_rank(args)
    require_modules(
        "jax", ("jax", "keras", "keras_hub"), "envs/jax.txt (and envs/jax.excludes.txt)"
    )
    # InsightFace's classifier split across the ranks (on one rank: whole, a split of one)
    split_facts = None
    if args.model == "insightface":
        split_facts = ClassifierSplit(args.num_classes, world, args.sample_rate)
    # a config error stops it before the backend starts
    config = model_configuration(args, split_facts)
    setup_platform(args, local_rank, local_world)

    import jax
    import numpy as np
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    if world > 1:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.distributed.initialize(
            coordinator_address=f"{os.environ.get('MASTER_ADDR', '127.0.0.1')}:{os.environ.get('MASTER_PORT', '29500')}",
            num_processes=world,
            process_id=rank,
            # one accelerator per process; on CPU every process has its own single device anyway
            local_device_ids=None if args.device == "cpu" else [local_rank],
        )
    import keras

    # One device per process: on a node where a process sees several (a 1n1g run with all the
    # node's GPUs visible), it uses its first.
    devices = jax.devices() if world > 1 else jax.local_devices()[:1]
    if world > 1 and (len(devices) != world or len(jax.local_devices()) != 1):
        raise SystemExit(
            f"dlperf: expected one device per process, got {len(jax.local_devices())} local and "
            f"{len(devices)} in all for {world} processes"
        )
    device = jax.local_devices()[0] if world > 1 else devices[0]
    use_amp = args.precision == "amp"
    keras.config.set_dtype_policy("mixed_bfloat16" if use_amp else "float32")
    keras.utils.set_random_seed(0)  # the same initial weights on every rank

    split = None
    if split_facts is not None and world > 1:  # the collectives, inside the step's shard_map
        split = dataclasses.replace(
            split_facts,
            position=lambda: jax.lax.axis_index("data"),
            gather=lambda x: jax.lax.all_gather(x, "data", tiled=True),
        )
    # with a split, each rank draws its own block of the classifier (ceil(num_classes / ranks)
    # rows), from the seed every rank shares, as the PyTorch recipe's ranks draw their shards
    model = build_model(args, config, split)
    optimizer = make_optimizer(args)
    optimizer.build(model.trainable_variables)
    # JAX allocates asynchronously: a variable that did not fit fails here, as RESOURCE_EXHAUSTED,
    # not as an abort when numpy reads its buffer below (a W&D table past --memory-limit-gb)
    jax.block_until_ready([v.value for v in (*model.variables, *optimizer.variables)])

    mesh = Mesh(np.array(devices), ("data",))
    replicated = NamedSharding(mesh, P())
    sharded = NamedSharding(mesh, P("data"))

    def put(value: Any, spec: Any) -> Any:
        host = np.asarray(value)
        if spec != P():  # this rank's block of a split variable: its rows of the global array
            return jax.make_array_from_process_local_data(sharded, host)
        return jax.make_array_from_callback(host.shape, replicated, lambda index: host[index])

    values = (
        [v.value for v in model.trainable_variables],
        [v.value for v in model.non_trainable_variables],
        [v.value for v in optimizer.variables],
    )
    state = jax.tree.map(put, values, state_specs(model, optimizer, split is not None))
    x, y = synthetic_batch(args, config, rank)
    x, y = jax.tree.map(lambda a: jax.make_array_from_process_local_data(sharded, a), (x, y))
    step = make_step(args, model, optimizer, mesh, split is not None)

    fsdp = args.sharding == "fsdp" and world > 1  # on one rank fsdp is ddp, as torch_train has it
    if fsdp:  # GPT's trainable and optimizer variables split over "data" (fsdp_shardings)
        state, step = fsdp_state_and_step(args, model, optimizer, mesh, state)
    param_bytes = held_bytes(state[0])  # this rank's share of the trainable variables

    if rank == 0:
        log_config(
            args,
            model,
            config,
            device=device.platform,
            amp_dtype="bfloat16" if use_amp else "none",
            world_size=world,
            sharding=args.sharding if world > 1 else "none",
            param_bytes=param_bytes,
            xla="jit",
            jax=jax.__version__,
        )
        capability = getattr(device, "compute_capability", None)  # "9.0" on a CUDA device
        math = (
            "bf16"
            if use_amp
            else fp32_math(
                tuple(map(int, capability.split("."))) if isinstance(capability, str) else None,
                jax_allows_tf32(jax.config.jax_default_matmul_precision),
            )
        )
        log_flops(args, config, math)
        last: list[Any] = []  # JAX dispatches asynchronously: the sync waits for the last product

        def matmul_of(n: int) -> Any:
            import jax.numpy as jnp

            dtype = jnp.bfloat16 if use_amp else jnp.float32
            keys = jax.random.split(jax.random.key(0))
            a, b = (jax.device_put(jax.random.normal(k, (n, n), dtype), device) for k in keys)
            product = jax.jit(jnp.matmul)
            return lambda: last.__setitem__(slice(None), [product(a, b)])

        def sync() -> None:
            jax.block_until_ready(last)

        gpu = device.device_kind if device.platform == "gpu" else "none"

    def train_step() -> float:
        nonlocal state
        state, loss = step(state, x, y)
        jax.block_until_ready((state, loss))
        return float(loss.addressable_shards[0].data[0])

    train_steps(rank, args, local_rank if device.platform == "gpu" else None, train_step)
    stats = (device.memory_stats() or {}) if device.platform == "gpu" else {}
    log_memory(rank, stats.get("peak_bytes_in_use"), param_bytes=param_bytes)
    if rank == 0:  # after the memory line: JAX cannot reset its peak, and the products are dlperf's
        log_measured_peak(rank, args, math, matmul_of, sync, gpu)
    if world > 1:
        jax.distributed.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
