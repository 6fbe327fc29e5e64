"""The JAX workload's option sharding: fsdp (GPT; on one rank it is ddp, and the config line says
sharding=none), as MaxText's fsdp axis shards: parameters, gradients and optimizer state split over the mesh's data
axis (make_fsdp_step). Each trainable and optimizer variable is sharded on its largest axis the
world size divides (replicated where none does: the optimizer's scalars), the batch on the same
axis, and the step is one `jax.jit` program with those in and out shardings, no shard_map: XLA's
SPMD partitioner gathers each weight where a layer uses it and reduce-scatters its gradient. The
loss is the mean over the global batch (GPT has no BatchNorm: it is ddp's mean gradient); each
rank's step line states its own batch's loss, as under ddp. The state is first placed replicated
(ddp's) and freed, then cut from every process's same initial weights, and Keras' own whole copies
are freed. The config line states param_bytes, the bytes of trainable variables rank 0 holds (each
rank's memory line its own): on two CPU ranks a toy GPT-2 held exactly half of ddp's, and every
rank's losses equalled ddp's step by step to the step line's 4 decimals (tests/test_jax_fsdp.py).
"""

from __future__ import annotations

import argparse
from typing import Any


def fsdp_spec(shape: tuple[int, ...], world: int) -> Any:
    """sharding fsdp's PartitionSpec of one variable: split over "data" on its largest axis that
    the world size divides (the first of equal ones), replicated where none does (a scalar)."""
    from jax.sharding import PartitionSpec as P

    for axis in sorted(range(len(shape)), key=lambda i: -shape[i]):
        if shape[axis] >= world and shape[axis] % world == 0:
            return P(*[None] * axis, "data")
    return P()


def fsdp_shardings(model: Any, optimizer: Any, mesh: Any) -> Any:
    """The sharding of each leaf of the step's state (trainable, non_trainable, optimizer) under
    sharding fsdp: every trainable and optimizer variable split by fsdp_spec, the non-trainable
    ones (GPT's: the dropout's seed) replicated."""
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    world = mesh.devices.size

    def split(variables: Any) -> list[Any]:
        return [NamedSharding(mesh, fsdp_spec(tuple(v.shape), world)) for v in variables]

    replicated = [NamedSharding(mesh, P()) for _ in model.non_trainable_variables]
    return split(model.trainable_variables), replicated, split(optimizer.variables)


def make_fsdp_step(
    args: argparse.Namespace, model: Any, optimizer: Any, mesh: Any, shardings: Any
) -> Any:
    """GPT's training step under sharding fsdp, as MaxText's fsdp axis runs it: one jax.jit
    program over the global batch (split over "data"), the state in and out as `shardings` has
    it (fsdp_shardings) and donated; XLA's SPMD partitioner gathers each weight where a layer
    uses it and reduce-scatters its gradient, no shard_map. The loss is the mean over the global
    batch (GPT has no BatchNorm: nothing is normalised over a rank's own batch, so this is ddp's
    mean gradient); each rank's step line gets its own batch's loss, as make_step's does."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    world = mesh.devices.size

    def loss_fn(trainable: Any, non_trainable: Any, x: Any, y: Any) -> Any:
        logits, non_trainable = model.stateless_call(trainable, non_trainable, x, training=True)
        # next-token loss: position t predicts token t + 1 (make_step's xent, per token)
        logp = jax.nn.log_softmax(logits[:, :-1].astype(jnp.float32), axis=-1)
        nll = -jnp.take_along_axis(logp, y[..., None], axis=-1)[..., 0]
        per_rank = jnp.mean(nll.reshape(world, -1), axis=1)  # rank r's rows: its batch
        return jnp.mean(per_rank), (non_trainable, per_rank)

    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)

    def step(state: Any, x: Any, y: Any) -> Any:
        trainable, non_trainable, opt_vars = state
        (_, (non_trainable, per_rank)), grads = grad_fn(trainable, non_trainable, x, y)
        trainable, opt_vars = optimizer.stateless_apply(opt_vars, grads, trainable)
        return (trainable, non_trainable, opt_vars), per_rank

    batch = NamedSharding(mesh, P("data"))
    return jax.jit(
        step,
        in_shardings=(shardings, batch, batch),
        out_shardings=(shardings, batch),
        donate_argnums=0,
    )


def fsdp_state_and_step(
    args: argparse.Namespace, model: Any, optimizer: Any, mesh: Any, replicated: Any
) -> tuple[Any, Any]:
    """sharding fsdp: the state placed as fsdp_shardings splits it, and its step. Every process
    built the same initial weights (the same seed), so each cuts its own slices from its host
    copy; the replicated state main placed first (ddp's) is freed before."""
    import jax
    import numpy as np

    if args.model != "gpt":
        raise SystemExit(
            f"dlperf: sharding fsdp: the jax workload shards gpt only, not {args.model}"
        )
    jax.tree.map(lambda a: a.delete(), replicated)
    shardings = fsdp_shardings(model, optimizer, mesh)

    def put(value: Any, sharding: Any) -> Any:
        # copies: on a CPU a device array may alias its numpy source, here the whole variable
        host = np.asarray(value)
        return jax.make_array_from_callback(host.shape, sharding, lambda i: host[i].copy())

    values = (
        [v.value for v in model.trainable_variables],
        [v.value for v in model.non_trainable_variables],
        [v.value for v in optimizer.variables],
    )
    state = jax.tree.map(put, values, shardings)
    # Keras' own copies, whole on this device: the step reads the state only
    jax.tree.map(lambda a: a.delete(), values)
    return state, make_fsdp_step(args, model, optimizer, mesh, shardings)


def held_bytes(arrays: list[Any]) -> int:
    """The bytes of these global arrays that this process's own devices hold."""
    return sum(shard.data.nbytes for a in arrays for shard in a.addressable_shards)
