"""What the Keras 3 workloads share (jax_train on the JAX backend, tf_train on TensorFlow's):
KerasHub's ResNet-50 v1.5 and BERT pretraining models built from hyperparameters (no download),
the synthetic batch fed to them, and their `dlperf-config` line.

The models: `keras_hub.models.ResNetImageClassifier` over a `ResNetBackbone` with bottleneck
blocks [3, 4, 6, 3] (the stride sits in the 3x3 convolution, so this is ResNet-50 v1.5), and
`keras_hub.models.BertBackbone` (BERT-base) under KerasHub's `MaskedLMHead` (tied to the token
embedding, as `BertMaskedLM` builds it) plus a 2-way next-sentence head on the pooled output.

Keras and KerasHub are imported only inside the functions that need them, after the workload has
chosen its backend (KERAS_BACKEND); nothing here imports jax or tensorflow.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from dlperf.flops import BertShape
from dlperf.workloads.common import log, log_stated_flops

MODEL_CONFIG_HELP = (
    "JSON overrides of the model's hyperparameters: KerasHub argument names, or the transformers "
    "config names the pytorch adapter takes (e.g. num_hidden_layers)"
)
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


def build_model(args: argparse.Namespace, config: dict[str, Any]) -> Any:
    """The Keras model of args.model: logits for resnet50, {"mlm", "nsp"} logits for bert_base."""
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
    """One fixed batch of this rank (numpy, channels last): (x, y); the same arrays every step."""
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


def log_config(args: argparse.Namespace, model: Any, config: dict[str, Any], **fields: Any) -> None:
    """The `dlperf-config` line: the model, its parameter count, the workload's own fields (device,
    precision, backend versions), Keras' and KerasHub's versions, and the exact model config."""
    import keras
    import keras_hub

    log(
        "config",
        model=args.model,
        params=model.count_params(),
        **fields,
        keras=keras.__version__,
        keras_hub=keras_hub.__version__,
        model_config=json.dumps(config, sort_keys=True, separators=(",", ":")),
    )


def log_flops(args: argparse.Namespace, config: dict[str, Any], math: str) -> None:
    """The stated FLOPs per sample of the KerasHub model built from `config` (dlperf.flops, with
    KerasHub's argument names; its masked-LM head runs on the masked positions only). A ResNet of
    other widths or strides than ResNet-50's has no formula: no line, MFU n/a."""
    if args.model == "bert_base":
        shape = BertShape(
            config["num_layers"],
            config["hidden_dim"],
            config["intermediate_dim"],
            config["vocabulary_size"],
        )
        log_stated_flops(0, args, math, shape)
        return
    resnet50 = {
        k: RESNET50_V15[k]
        for k in ("input_conv_filters", "stackwise_num_filters", "stackwise_num_strides")
    }
    if all(config.get(k) == v for k, v in resnet50.items()):
        log_stated_flops(0, args, math, depths=tuple(config["stackwise_num_blocks"]))
