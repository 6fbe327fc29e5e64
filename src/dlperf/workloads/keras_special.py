"""The special cases as Keras 3 layers, built as the PyTorch recipes build them
(dlperf.workloads.torch_models): Wide & Deep and InsightFace's ArcFace over KerasHub's ResNet,
with the facts of InsightFace's classifier (whole or split) its `dlperf-config` line states.
Keras and KerasHub are imported inside the functions, after the workload chose its backend."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dlperf.flops import (
    ARCFACE_MARGIN,
    ARCFACE_SCALE,
    DEEP_SPARSE_FIELDS,
    DENSE_FIELDS,
    WIDE_SPARSE_FIELDS,
    arcface_shard,
)


@dataclass(frozen=True)
class ClassifierSplit:
    """InsightFace's classifier split across `world` ranks, as the PyTorch recipe splits it
    (dlperf.flops.arcface_shard's classes on each rank), in blocks of one shape on every rank:
    `block` rows each, a rank's own classes first, then rows no class uses (a backend that runs
    one program on every rank, as JAX's shard_map does, needs the same shapes everywhere).

    The collectives are the backend's, called inside its training step: `position()` this rank's
    index among the ranks, `gather(x)` every rank's x concatenated along axis 0 in rank order
    (differentiable: its gradient sums each rank's share back to the rank it came from). Without
    them the split is only facts (the workload's `dlperf-config` line)."""

    num_classes: int
    world: int
    sample_rate: float = 1.0
    position: Callable[[], Any] | None = None
    gather: Callable[[Any], Any] | None = None

    @property
    def shards(self) -> list[tuple[int, int]]:
        """Every rank's classes [start, end)."""
        return [arcface_shard(self.num_classes, r, self.world) for r in range(self.world)]

    @property
    def block(self) -> int:
        """The rows of each rank's classifier weight: its largest shard (ceil(num_classes /
        world))."""
        return -(-self.num_classes // self.world)

    @property
    def sampled(self) -> int | None:
        """Partial FC's classes scored per rank and step, the same on every rank: sample_rate of
        the smallest shard (arcface_torch's count, rounded down); None where every class is
        scored."""
        fewest = self.num_classes // self.world
        count = max(1, int(self.sample_rate * fewest))
        return count if self.sample_rate < 1 and count < fewest else None

    @property
    def scored(self) -> int:
        """The classes scored per step over all the ranks."""
        return self.num_classes if self.sampled is None else self.sampled * self.world


def classifier_facts(args: argparse.Namespace, split: ClassifierSplit | None) -> dict[str, Any]:
    """InsightFace's classifier as the `dlperf-config` line states it: "replicated" (whole on every
    rank) or "split" (each rank's classifier_rows_per_rank rows, ClassifierSplit.block), and
    sampled_classes, the classes scored per step over all the ranks (partial FC's sample_rate of
    them: arcface_torch's count, per rank with a split). A sample always holds its step's own
    classes, so it must have room for a batch of distinct ones (with a split, every rank's
    batch: they may all be one rank's classes): a smaller sample is refused, naming the option."""
    if not 0 < args.sample_rate <= 1:
        raise SystemExit(f"dlperf: sample_rate {args.sample_rate}: expected 0 < sample_rate <= 1")
    if split is None:
        sampled = max(1, int(args.sample_rate * args.num_classes))
        facts: dict[str, Any] = {"sampled_classes": sampled, "classifier": "replicated"}
        room, of = min(args.batch_size, args.num_classes), f"num_classes {args.num_classes}"
    else:
        if args.num_classes < split.world:
            raise SystemExit(
                f"dlperf: num_classes {args.num_classes} < {split.world} ranks: one has none"
            )
        sampled = split.sampled or split.block
        facts = {
            "sampled_classes": split.scored,
            "classifier": "split",
            "classifier_rows_per_rank": split.block,
        }
        room = min(args.batch_size * split.world, split.block) if split.sampled else 0
        of = f"num_classes {args.num_classes}"
        if split.world > 1:
            of = f"each rank's {args.num_classes // split.world} or more of {of}"
    if sampled < room:
        raise SystemExit(
            f"dlperf: sample_rate {args.sample_rate}: partial FC's sample of {sampled} of {of} "
            f"cannot hold the {room} classes of a batch; raise sample_rate (or num_classes)"
        )
    return facts


def build_wide_deep(config: dict[str, Any]) -> Any:
    """Wide & Deep as the PyTorch recipe builds it: logit = the sum of the wide ids' weights (a
    linear model on sparse features) + the deep MLP over the 26 looked-up vectors and the 13
    dense features (hidden_units_num ReLU layers of hidden_size, then one unit). OneFlow's
    initialisers: uniform(-0.05, 0.05) tables, Glorot-uniform layers and zero biases (Keras'
    Dense defaults). Plain dense tables, whole on every rank, every row updated (OneFlow splits
    them and updates the rows looked up); no dropout."""
    import keras

    vocab, width = config["vocab_size"], config["deep_embedding_vec_size"]
    table = keras.initializers.RandomUniform(-0.05, 0.05)
    dense = keras.Input((DENSE_FIELDS,), name="dense")
    wide_ids = keras.Input((WIDE_SPARSE_FIELDS,), dtype="int32", name="wide_ids")
    deep_ids = keras.Input((DEEP_SPARSE_FIELDS,), dtype="int32", name="deep_ids")
    wide_weights = keras.layers.Embedding(vocab, 1, embeddings_initializer=table, name="wide")
    deep_vectors = keras.layers.Embedding(vocab, width, embeddings_initializer=table, name="deep")
    wide = keras.ops.sum(wide_weights(wide_ids), axis=(1, 2))
    hidden = keras.layers.Concatenate(name="deep_input")(
        [keras.layers.Flatten()(deep_vectors(deep_ids)), dense]
    )
    for i in range(config["hidden_units_num"]):
        layer = keras.layers.Dense(config["hidden_size"], activation="relu", name=f"fc{i}")
        hidden = layer(hidden)
    deep = keras.layers.Dense(1, name="deep_logit")(hidden)
    logit = wide + keras.ops.squeeze(deep, axis=1)
    inputs = {"dense": dense, "wide_ids": wide_ids, "deep_ids": deep_ids}
    return keras.Model(inputs=inputs, outputs=logit, name="wide_deep")


def build_insightface(
    args: argparse.Namespace, config: dict[str, Any], split: ClassifierSplit | None = None
) -> Any:
    """KerasHub's ResNet backbone pooled to an embedding_size feature through a dense layer and
    batch norm (insightface's fc5 output block; PyTorch's BatchNorm1d momentum and epsilon), then
    the ArcFace classifier: its {"logits", "labels"} (the labels renumbered into partial FC's
    sample), the loss the softmax cross entropy of those. With a split, this rank's block of the
    classifier, and logits of every rank's images (arcface_layer)."""
    import keras
    import keras_hub

    backbone = keras_hub.models.ResNetBackbone(
        **config["backbone"], image_shape=(args.image_size, args.image_size, 3)
    )
    images = keras.Input((args.image_size, args.image_size, 3), name="images")
    labels = keras.Input((), dtype="int32", name="labels")
    pooled = keras.layers.GlobalAveragePooling2D(name="pool")(backbone(images))
    fc = keras.layers.Dense(config["embedding_size"], name="fc5")(pooled)
    features = keras.layers.BatchNormalization(momentum=0.9, epsilon=1e-5, name="features")(fc)
    head = arcface_layer(
        config["num_classes"], config["sampled_classes"], config["embedding_size"], split
    )
    return keras.Model(
        inputs={"images": images, "labels": labels},
        outputs=head(features, labels),
        name="insightface",
    )


def arcface_layer(
    num_classes: int, sampled: int, embedding_size: int, split: ClassifierSplit | None = None
) -> Any:
    """The ArcFace classifier (num_classes x embedding_size, arcface_torch's normal(0, 0.01)):
    cosines of the normalised features and class weights (in the compute precision), then in
    fp32 s cos(theta + m) at each image's own class and s cos(theta) elsewhere (past
    theta = pi - m, cos(theta) - m sin(m), as insightface does). With sampled < num_classes,
    partial FC as arcface_torch samples: the step's own classes and random others, `sampled` in
    all, sorted, the labels renumbered into them (the negatives drawn from one seeded stream,
    the same on every rank).

    With a split (ClassifierSplit, its collectives given): the weight is this rank's block
    (split.block rows, drawn on the rank), the features and labels of every rank are
    gathered, the labels renumbered into this rank's classes (-1: another rank's class), and
    the logits are every rank's images against this rank's classes, the block's unused rows at
    -inf; partial FC samples split.sampled of this rank's own classes. The loss over them is a
    sharded cross entropy (the JAX workload's): no rank sees a whole row of logits."""
    import math

    import keras
    from keras import ops

    if split is not None and (split.position is None or split.gather is None):
        raise ValueError("arcface_layer: a split classifier needs the backend's collectives")

    class ArcFace(keras.layers.Layer):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(name="arcface", **kwargs)
            self.split = split
            self.weight = self.add_weight(
                shape=(num_classes if split is None else split.block, embedding_size),
                initializer=keras.initializers.RandomNormal(0.0, 0.01),
                name="weight",
            )
            sampling = sampled < num_classes if split is None else split.sampled is not None
            self.seed = keras.random.SeedGenerator(1234) if sampling else None

        def call(self, features: Any, labels: Any) -> dict[str, Any]:
            weight = self.weight
            real = None  # the rows of the logits that are classes: all, unless split
            if self.split is not None:
                features, labels, weight, real = self.mine(features, labels)
            elif self.seed is not None:
                own = ops.scatter(labels[:, None], ops.ones_like(labels), (num_classes,))
                noise = keras.random.uniform((num_classes,), seed=self.seed)
                _, index = ops.top_k(ops.where(own > 0, 2.0, noise), sampled)
                index = ops.sort(index)
                labels = ops.cast(ops.searchsorted(index, labels), "int32")
                weight = ops.take(weight, index, axis=0)
            cosine = ops.matmul(ops.normalize(features), ops.transpose(ops.normalize(weight)))
            cosine = ops.cast(cosine, "float32")
            mine = ops.one_hot(labels, ops.shape(cosine)[1], dtype="bool")  # none for -1
            cos_t = ops.sum(ops.where(mine, cosine, 0.0), axis=1, keepdims=True)
            sin_t = ops.sqrt(ops.maximum(1.0 - cos_t * cos_t, 1e-9))
            margined = ops.where(
                cos_t > math.cos(math.pi - ARCFACE_MARGIN),
                cos_t * math.cos(ARCFACE_MARGIN) - sin_t * math.sin(ARCFACE_MARGIN),
                cos_t - ARCFACE_MARGIN * math.sin(ARCFACE_MARGIN),
            )
            logits = ARCFACE_SCALE * ops.where(mine, margined, cosine)
            if real is not None:
                logits = ops.where(real[None, :], logits, -math.inf)
            return {"logits": logits, "labels": labels}

        def mine(self, features: Any, labels: Any) -> tuple[Any, Any, Any, Any]:
            """Every rank's features and labels, the labels renumbered into this rank's block
            (-1 elsewhere), the block's rows scored (a sample with partial FC) and which of
            those are classes (None: all of them)."""
            assert split is not None and split.gather is not None and split.position is not None
            features, labels = split.gather(features), split.gather(labels)
            rank = split.position()
            start = ops.take(ops.array([s for s, _ in split.shards], "int32"), rank)
            rows = ops.take(ops.array([e - s for s, e in split.shards], "int32"), rank)
            own = labels - start
            own = ops.where((own >= 0) & (own < rows), own, -1)
            real = ops.arange(split.block, dtype="int32") < rows
            if self.seed is None:
                return features, own, self.weight, real
            # partial FC among this rank's classes: its images' classes, then random others
            hits = ops.scatter(
                ops.maximum(own, 0)[:, None], ops.cast(own >= 0, "int32"), (split.block,)
            )
            noise = keras.random.uniform((split.block,), seed=self.seed)
            score = ops.where(hits > 0, 2.0, ops.where(real, noise, -1.0))
            _, index = ops.top_k(score, split.sampled)
            index = ops.sort(index)
            renumbered = ops.cast(ops.searchsorted(index, ops.maximum(own, 0)), "int32")
            own = ops.where(own >= 0, renumbered, -1)
            return features, own, ops.take(self.weight, index, axis=0), None

        def compute_output_spec(self, features: Any, labels: Any) -> dict[str, Any]:
            batch, scored = features.shape[0], sampled
            if split is not None:
                batch = None if batch is None else batch * split.world
                scored = split.block if split.sampled is None else split.sampled
            return {
                "logits": keras.KerasTensor((batch, scored), dtype="float32"),
                "labels": keras.KerasTensor((batch,), dtype="int32"),
            }

    return ArcFace()
