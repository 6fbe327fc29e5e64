"""Built-in JAX workload: ResNet50 v1.5 or BERT-base pretraining on synthetic data, models from KerasHub.

The models are KerasHub's own definitions running on Keras 3's JAX backend, built from
hyperparameters without any download: `keras_hub.models.ResNetImageClassifier` over a
`ResNetBackbone` with bottleneck blocks [3, 4, 6, 3] (the stride sits in the 3x3 convolution, so
this is ResNet-50 v1.5), and `keras_hub.models.BertBackbone` (BERT-base) under KerasHub's
`MaskedLMHead` (tied to the token embedding, as `BertMaskedLM` builds it) plus a 2-way
next-sentence head on the pooled output. The training step is plain JAX over Keras' stateless
API (`model.stateless_call`, `optimizer.stateless_apply`), as the Keras guide for JAX writes it.

Data parallel as DistributedDataParallel does it: every process holds one device and its own
batch, and `jax.shard_map` runs the step per device with an explicit `pmean` of the gradients (and
of BatchNorm's moving statistics), so BatchNorm normalises over the local batch only. Processes
meet through `jax.distributed.initialize` at MASTER_ADDR:MASTER_PORT; CPU collectives use gloo.

The xla column: JAX lowers every operation through XLA, and this workload always compiles the
whole training step into one XLA program (`jax.jit`), so it is measured in the xla=on column only
(the adapter skips xla=off cells). Op-by-op dispatch is no usable "off": on a 2-core CPU one
ResNet-50 step took over 8 minutes that way, against 0.6 s jitted.

Every rank prints one line per step, in the format of dlperf.parse.builtin:

    dlperf-step rank=0 step=12 samples=32 start=1763780000.123456 end=1763780000.234567 loss=6.9
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from typing import Any

from dlperf.workloads.common import log, start_rank, workload_parser

# transformers' BertConfig names (what the pytorch adapter's model_config takes) -> KerasHub's.
BERT_NAMES = {
    "vocab_size": "vocabulary_size",
    "num_hidden_layers": "num_layers",
    "num_attention_heads": "num_heads",
    "hidden_size": "hidden_dim",
    "intermediate_size": "intermediate_dim",
    "max_position_embeddings": "max_sequence_length",
    "type_vocab_size": "num_segments",
    "hidden_dropout_prob": "dropout",
}
BERT_BASE = {
    "vocabulary_size": 30522,
    "num_layers": 12,
    "num_heads": 12,
    "hidden_dim": 768,
    "intermediate_dim": 3072,
    "dropout": 0.1,
    "max_sequence_length": 512,
    "num_segments": 2,
}
# transformers' ResNetConfig names -> KerasHub's ResNetBackbone arguments.
RESNET_NAMES = {
    "depths": "stackwise_num_blocks",
    "embedding_size": "input_conv_filters",
}
RESNET50_V15 = {
    "input_conv_filters": [64],
    "input_conv_kernel_sizes": [7],
    "stackwise_num_filters": [64, 128, 256, 512],
    "stackwise_num_blocks": [3, 4, 6, 3],
    "stackwise_num_strides": [1, 2, 2, 2],
    "block_type": "bottleneck_block",
    "use_pre_activation": False,
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = workload_parser(
        __doc__.splitlines()[0],
        precision_help="amp: Keras mixed_bfloat16 policy (bf16 compute, fp32 weights)",
        model_config_help="JSON overrides of the model's hyperparameters: KerasHub argument names, or the transformers config names the pytorch adapter takes (e.g. num_hidden_layers)",
    )
    return p.parse_args(argv)


def model_hyperparameters(model: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """The KerasHub backbone arguments: the full-size defaults with the overrides applied."""
    names, base = (RESNET_NAMES, RESNET50_V15) if model == "resnet50" else (BERT_NAMES, BERT_BASE)
    config = dict(base)
    for key, value in overrides.items():
        key = names.get(key, key)
        if key not in base:
            known = sorted(set(base) | set(names))
            raise SystemExit(
                f"dlperf: unknown {model} model_config key {key!r} (known: {', '.join(known)})"
            )
        if key == "input_conv_filters" and isinstance(value, int):
            value = [value]
        config[key] = value
    return config


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
    # XLA's CPU thread pool is as large as the CPU set the process may run on: give each rank
    # its share of the cores, as the PyTorch workload gives each rank cores / ranks threads.
    if args.device != "cuda" and hasattr(os, "sched_getaffinity"):
        cores = sorted(os.sched_getaffinity(0))
        share = args.threads or max(1, len(cores) // local_world)
        first = (local_rank * share) % len(cores)
        mine = [cores[(first + i) % len(cores)] for i in range(min(share, len(cores)))]
        os.sched_setaffinity(0, mine)


def build_model(args: argparse.Namespace, config: dict[str, Any]) -> Any:
    import keras
    import keras_hub

    if args.model == "resnet50":
        backbone = keras_hub.models.ResNetBackbone(
            **config, image_shape=(args.image_size, args.image_size, 3)
        )
        return keras_hub.models.ResNetImageClassifier(
            backbone=backbone, num_classes=args.num_classes, activation=None
        )
    backbone = keras_hub.models.BertBackbone(**config)
    init = keras.initializers.TruncatedNormal(stddev=0.02)  # BERT's initializer
    # The masked-LM head as keras_hub.models.BertMaskedLM builds it, plus BERT's NSP head.
    mlm_head = keras_hub.layers.MaskedLMHead(
        vocabulary_size=backbone.vocabulary_size,
        token_embedding=backbone.token_embedding,
        intermediate_activation="gelu",
        kernel_initializer=init,
        dtype=backbone.dtype_policy,
        name="mlm_head",
    )
    nsp_head = keras.layers.Dense(
        2, kernel_initializer=init, dtype=backbone.dtype_policy, name="nsp_head"
    )
    inputs = {
        **backbone.input,
        "mask_positions": keras.Input(shape=(None,), dtype="int32", name="mask_positions"),
    }
    outputs = backbone(backbone.input)
    return keras.Model(
        inputs=inputs,
        outputs={
            "mlm": mlm_head(outputs["sequence_output"], inputs["mask_positions"]),
            "nsp": nsp_head(outputs["pooled_output"]),
        },
        name="bert_pretraining",
    )


def synthetic_batch(args: argparse.Namespace, config: dict[str, Any], rank: int) -> tuple[Any, Any]:
    """One fixed batch of this rank (numpy); the same arrays are fed every step."""
    import numpy as np

    rng = np.random.default_rng(1234 + rank)
    b = args.batch_size
    if args.model == "resnet50":
        pixels = rng.standard_normal((b, args.image_size, args.image_size, 3), dtype=np.float32)
        return pixels, rng.integers(0, args.num_classes, (b,), dtype=np.int32)
    s, vocab = args.seq_len, config["vocabulary_size"]
    p = min(args.max_predictions, s)
    token_ids = rng.integers(0, vocab, (b, s), dtype=np.int32)
    positions = rng.random((b, s)).argsort(axis=1)[:, :p].astype(np.int32)
    x = {
        "token_ids": token_ids,
        "segment_ids": np.broadcast_to((np.arange(s) >= s // 2).astype(np.int32), (b, s)).copy(),
        "padding_mask": np.ones((b, s), dtype=np.int32),
        "mask_positions": positions,
    }
    y = {
        "mlm": np.take_along_axis(token_ids, positions, axis=1),
        "nsp": rng.integers(0, 2, (b,), dtype=np.int32),
    }
    return x, y


def make_step(args: argparse.Namespace, model: Any, optimizer: Any, mesh: Any) -> Any:
    """The training step over (trainable, non_trainable, optimizer) state; data parallel over mesh."""
    import jax
    import jax.numpy as jnp
    from jax.flatten_util import ravel_pytree
    from jax.sharding import PartitionSpec as P

    def xent(logits: Any, labels: Any) -> Any:
        logp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
        return -jnp.mean(jnp.take_along_axis(logp, labels[..., None], axis=-1))

    def loss_fn(trainable: Any, non_trainable: Any, x: Any, y: Any) -> Any:
        out, non_trainable = model.stateless_call(trainable, non_trainable, x, training=True)
        if args.model == "resnet50":
            loss = xent(out, y)
        else:
            loss = xent(out["mlm"], y["mlm"]) + xent(out["nsp"], y["nsp"])
        return loss, non_trainable

    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)

    def all_mean(tree: Any) -> Any:
        flat, unravel = ravel_pytree(tree)
        return unravel(jax.lax.pmean(flat, "data"))

    world = mesh.devices.size

    def local_step(state: Any, x: Any, y: Any) -> Any:
        trainable, non_trainable, opt_vars = state
        (loss, non_trainable), grads = grad_fn(trainable, non_trainable, x, y)
        if world > 1:
            # DDP's all-reduce of the gradients, in one flat buffer as DDP's buckets do: one
            # collective per tensor costs ~10 ms each over gloo, most of a small model's step.
            grads = all_mean(grads)
            # BatchNorm's moving statistics: averaged so replicas agree (DDP broadcasts them).
            floats = [
                i for i, v in enumerate(non_trainable) if jnp.issubdtype(v.dtype, jnp.floating)
            ]
            if floats:
                averaged = all_mean([non_trainable[i] for i in floats])
                non_trainable = list(non_trainable)
                for i, v in zip(floats, averaged, strict=True):
                    non_trainable[i] = v
        trainable, opt_vars = optimizer.stateless_apply(opt_vars, grads, trainable)
        return (trainable, non_trainable, opt_vars), loss[None]

    step = jax.shard_map(
        local_step,
        mesh=mesh,
        in_specs=(P(), P("data"), P("data")),
        out_specs=(P(), P("data")),
        check_vma=False,
    )
    return jax.jit(step, donate_argnums=0)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rank, world, local_rank, local_world = start_rank(args)
    missing = [m for m in ("jax", "keras", "keras_hub") if importlib.util.find_spec(m) is None]
    if missing:
        raise SystemExit(
            f"dlperf: the jax workload needs {', '.join(missing)}: pip install 'dlperf[jax]' "
            "and pip install --no-deps keras-hub==0.32.0"
        )
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
    import keras_hub

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

    config = model_hyperparameters(args.model, json.loads(args.model_config))
    model = build_model(args, config)
    if args.model == "resnet50":
        optimizer = keras.optimizers.SGD(learning_rate=0.1, momentum=0.9, weight_decay=5e-5)
    else:
        optimizer = keras.optimizers.AdamW(
            learning_rate=1e-4,
            weight_decay=0.01,
            global_clipnorm=args.clip_grad_norm if args.clip_grad_norm > 0 else None,
        )
    optimizer.build(model.trainable_variables)

    mesh = Mesh(np.array(devices), ("data",))
    replicated = NamedSharding(mesh, P())
    sharded = NamedSharding(mesh, P("data"))

    def put_replicated(value: Any) -> Any:
        host = np.asarray(value)
        return jax.make_array_from_callback(host.shape, replicated, lambda index: host[index])

    state = jax.tree.map(
        put_replicated,
        (
            [v.value for v in model.trainable_variables],
            [v.value for v in model.non_trainable_variables],
            [v.value for v in optimizer.variables],
        ),
    )
    x, y = synthetic_batch(args, config, rank)
    x, y = jax.tree.map(lambda a: jax.make_array_from_process_local_data(sharded, a), (x, y))
    step = make_step(args, model, optimizer, mesh)

    if rank == 0:
        log(
            "config",
            model=args.model,
            params=model.count_params(),
            device=device.platform,
            amp_dtype="bfloat16" if use_amp else "none",
            world_size=world,
            xla="jit",
            jax=jax.__version__,
            keras=keras.__version__,
            keras_hub=keras_hub.__version__,
            model_config=json.dumps(config, sort_keys=True, separators=(",", ":")),
        )
    for i in range(1, args.steps + 1):
        start = time.time()
        state, loss = step(state, x, y)
        jax.block_until_ready((state, loss))  # the timestamp below is the step's end
        end = time.time()
        loss_value = float(loss.addressable_shards[0].data[0])
        log(
            "step",
            rank=rank,
            step=i,
            samples=args.batch_size,
            start=f"{start:.6f}",
            end=f"{end:.6f}",
            loss=f"{loss_value:.4f}",
        )
    if world > 1:
        jax.distributed.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
