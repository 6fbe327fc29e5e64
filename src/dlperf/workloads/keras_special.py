"""The special cases as Keras 3 layers, built as the PyTorch recipes build them
(dlperf.workloads.torch_models): Wide & Deep and InsightFace's ArcFace over KerasHub's ResNet.
Keras and KerasHub are imported inside the functions, after the workload chose its backend."""

from __future__ import annotations

import argparse
from typing import Any

from dlperf.flops import (
    ARCFACE_MARGIN,
    ARCFACE_SCALE,
    DEEP_SPARSE_FIELDS,
    DENSE_FIELDS,
    WIDE_SPARSE_FIELDS,
)


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


def build_insightface(args: argparse.Namespace, config: dict[str, Any]) -> Any:
    """KerasHub's ResNet backbone pooled to an embedding_size feature through a dense layer and
    batch norm (insightface's fc5 output block; PyTorch's BatchNorm1d momentum and epsilon), then
    the ArcFace classifier: its {"logits", "labels"} (the labels renumbered into partial FC's
    sample), the loss the softmax cross entropy of those."""
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
    head = arcface_layer(config["num_classes"], config["sampled_classes"], config["embedding_size"])
    return keras.Model(
        inputs={"images": images, "labels": labels},
        outputs=head(features, labels),
        name="insightface",
    )


def arcface_layer(num_classes: int, sampled: int, embedding_size: int) -> Any:
    """The ArcFace classifier (num_classes x embedding_size, arcface_torch's normal(0, 0.01)):
    cosines of the normalised features and class weights (in the compute precision), then in
    fp32 s cos(theta + m) at each image's own class and s cos(theta) elsewhere (past
    theta = pi - m, cos(theta) - m sin(m), as insightface does). With sampled < num_classes,
    partial FC as arcface_torch samples: the step's own classes and random others, `sampled` in
    all, sorted, the labels renumbered into them (the negatives drawn from one seeded stream,
    the same on every rank)."""
    import math

    import keras
    from keras import ops

    class ArcFace(keras.layers.Layer):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(name="arcface", **kwargs)
            self.weight = self.add_weight(
                shape=(num_classes, embedding_size),
                initializer=keras.initializers.RandomNormal(0.0, 0.01),
                name="weight",
            )
            self.seed = keras.random.SeedGenerator(1234) if sampled < num_classes else None

        def call(self, features: Any, labels: Any) -> dict[str, Any]:
            weight = self.weight
            if self.seed is not None:
                own = ops.scatter(labels[:, None], ops.ones_like(labels), (num_classes,))
                noise = keras.random.uniform((num_classes,), seed=self.seed)
                _, index = ops.top_k(ops.where(own > 0, 2.0, noise), sampled)
                index = ops.sort(index)
                labels = ops.cast(ops.searchsorted(index, labels), "int32")
                weight = ops.take(weight, index, axis=0)
            cosine = ops.matmul(ops.normalize(features), ops.transpose(ops.normalize(weight)))
            cosine = ops.cast(cosine, "float32")
            mine = ops.one_hot(labels, ops.shape(cosine)[1], dtype="bool")
            cos_t = ops.sum(ops.where(mine, cosine, 0.0), axis=1, keepdims=True)
            sin_t = ops.sqrt(ops.maximum(1.0 - cos_t * cos_t, 1e-9))
            margined = ops.where(
                cos_t > math.cos(math.pi - ARCFACE_MARGIN),
                cos_t * math.cos(ARCFACE_MARGIN) - sin_t * math.sin(ARCFACE_MARGIN),
                cos_t - ARCFACE_MARGIN * math.sin(ARCFACE_MARGIN),
            )
            logits = ARCFACE_SCALE * ops.where(mine, margined, cosine)
            return {"logits": logits, "labels": labels}

        def compute_output_spec(self, features: Any, labels: Any) -> dict[str, Any]:
            batch = features.shape[0]
            return {
                "logits": keras.KerasTensor((batch, sampled), dtype="float32"),
                "labels": keras.KerasTensor((batch,), dtype="int32"),
            }

    return ArcFace()
