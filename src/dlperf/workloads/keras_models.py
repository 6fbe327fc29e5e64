"""What the Keras 3 workloads share (jax_train on the JAX backend, tf_train on TensorFlow's):
KerasHub's ResNet-50 v1.5, BERT pretraining and GPT models built from hyperparameters (no
download), the synthetic batch fed to them, and their `dlperf-config` and `dlperf-flops` lines.

The models: `keras_hub.models.ResNetImageClassifier` over a `ResNetBackbone` with bottleneck
blocks [3, 4, 6, 3] (the stride sits in the 3x3 convolution, so this is ResNet-50 v1.5),
`keras_hub.models.BertBackbone` (BERT-base) under KerasHub's `MaskedLMHead` (tied to the token
embedding, as `BertMaskedLM` builds it) plus a 2-way next-sentence head on the pooled output, and
for `gpt` a decoder-only LM as the PyTorch workload trains it: `GPT2CausalLM` over a
`GPT2Backbone` (GPT-2 small by default; the LM head is the token embedding reversed, tied) or,
with model_config {"model_type": "llama", ...}, `LlamaCausalLM` over a `LlamaBackbone` (the
shapes of transformers' LlamaConfig defaults; an untied LM head unless tie_word_embeddings), its
loss the next-token cross entropy over every position.

The special cases, as the PyTorch recipes build them (dlperf.workloads.torch_models), in Keras
layers (built in dlperf.workloads.keras_special): `wide_deep` (a wide part summing its own 1-wide embedding of 2 crossed ids, a deep part of
26 looked-up vectors and 13 dense features through hidden_units_num ReLU layers, the sigmoid
cross entropy; its sizes are options, not model_config) and `insightface` (KerasHub's ResNet
backbone, ResNet-50 v1.5 by default, pooled to an embedding_size feature through a dense layer
and batch norm, then an ArcFace margin softmax over num_classes; sample_rate < 1 is partial FC).
InsightFace's classifier is split across the ranks (a ClassifierSplit, with the backend's
collectives: JAX's shard_map, TensorFlow's tf.distribute), as the PyTorch workload splits it: what
fits is each rank's num_classes / ranks share of it (on one rank, the whole).

Keras and KerasHub are imported only inside the functions that need them, after the workload has
chosen its backend (KERAS_BACKEND); nothing here imports jax or tensorflow.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from dlperf.flops import (
    ARCFACE_MARGIN,
    ARCFACE_SCALE,
    DEEP_SPARSE_FIELDS,
    DENSE_FIELDS,
    WIDE_SPARSE_FIELDS,
    BertShape,
    DecoderShape,
    WideDeepShape,
    decoder_training_flops_per_sequence,
    insightface_training_flops_per_sample,
    wide_deep_training_flops_per_sample,
)
from dlperf.workloads.common import log, log_stated_flops
from dlperf.workloads.keras_config import RESNET50_V15, model_hyperparameters
from dlperf.workloads.keras_special import (
    ClassifierSplit,
    build_insightface,
    build_wide_deep,
    classifier_facts,
)

MODEL_CONFIG_HELP = (
    "JSON overrides of the model's hyperparameters: KerasHub argument names, or the transformers "
    "config names the pytorch adapter takes (e.g. num_hidden_layers)"
)
# Wide & Deep's Criteo-shaped examples, as the PyTorch recipe's (torch_models.wide_deep)
WIDE_DEEP_SIZES = ("vocab_size", "deep_embedding_vec_size", "hidden_units_num", "hidden_size")


def model_configuration(
    args: argparse.Namespace, split: ClassifierSplit | None = None
) -> dict[str, Any]:
    """What the workload builds, as its `dlperf-config` line states it: the KerasHub arguments
    (model_hyperparameters); for wide_deep its option sizes and fields; for insightface the
    backbone's arguments and the classifier's (split across the ranks where `split` says so,
    else whole on every rank)."""
    config = model_hyperparameters(args.model, json.loads(args.model_config))
    if args.model == "wide_deep":
        return {name: getattr(args, name) for name in WIDE_DEEP_SIZES} | {
            "dense_fields": DENSE_FIELDS,
            "deep_sparse_fields": DEEP_SPARSE_FIELDS,
            "wide_sparse_fields": WIDE_SPARSE_FIELDS,
        }
    if args.model == "insightface":
        return {
            "backbone": config,
            "embedding_size": args.embedding_size,
            "num_classes": args.num_classes,
            "sample_rate": args.sample_rate,
            **classifier_facts(args, split),
            "arcface_scale": ARCFACE_SCALE,
            "arcface_margin": ARCFACE_MARGIN,
        }
    return config


def check_sequence_length(args: argparse.Namespace, config: dict[str, Any]) -> None:
    """GPT's seq_len within the model's positions (GPT-2's position table; Llama's configured
    max_position_embeddings), as the pytorch workload refuses it."""
    if args.model == "gpt" and args.seq_len > config["max_sequence_length"]:
        raise SystemExit(
            f"dlperf: seq_len {args.seq_len} > the model's max_sequence_length "
            f"{config['max_sequence_length']} (max_position_embeddings)"
        )


def build_model(
    args: argparse.Namespace, config: dict[str, Any], split: ClassifierSplit | None = None
) -> Any:
    """The Keras model of args.model: logits for resnet50, {"mlm", "nsp"} logits for bert_base,
    next-token logits at every position for gpt, {"logits", "labels"} for insightface (with a
    split, of this rank's block of the classifier: keras_special.arcface_layer)."""
    import keras
    import keras_hub

    if args.model == "resnet50":
        backbone = keras_hub.models.ResNetBackbone(
            **config, image_shape=(args.image_size, args.image_size, 3)
        )
        return keras_hub.models.ResNetImageClassifier(
            backbone=backbone, num_classes=args.num_classes, activation=None
        )
    if args.model == "wide_deep":
        return build_wide_deep(config)
    if args.model == "insightface":
        return build_insightface(args, config, split)
    if args.model == "gpt":
        check_sequence_length(args, config)
        kwargs = {k: v for k, v in config.items() if k != "model_type"}
        if config["model_type"] == "llama":
            del kwargs["max_sequence_length"]
            # the LM head: the token embedding reversed (its own reverse_embeddings when untied)
            return keras_hub.models.LlamaCausalLM(keras_hub.models.LlamaBackbone(**kwargs))
        # tied to the token embedding, as GPT-2 ties it
        return keras_hub.models.GPT2CausalLM(keras_hub.models.GPT2Backbone(**kwargs))
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


def make_optimizer(args: argparse.Namespace) -> Any:
    """The optimizer DLPerf's upstream scripts train the model with: ResNet-50's and
    InsightFace's SGD with momentum (insightface's weight decay 5e-4), OneFlow W&D's Adam at
    1e-3 (plain Adam: the tables are dense), AdamW for BERT and GPT (their global-norm clip)."""
    import keras

    if args.model in ("resnet50", "insightface"):
        decay = 5e-4 if args.model == "insightface" else 5e-5
        return keras.optimizers.SGD(learning_rate=0.1, momentum=0.9, weight_decay=decay)
    if args.model == "wide_deep":
        return keras.optimizers.Adam(learning_rate=1e-3)
    return keras.optimizers.AdamW(
        learning_rate=1e-4,
        weight_decay=0.01,
        global_clipnorm=args.clip_grad_norm if args.clip_grad_norm > 0 else None,
    )


def synthetic_batch(args: argparse.Namespace, config: dict[str, Any], rank: int) -> tuple[Any, Any]:
    """One fixed batch of this rank (numpy, channels last): (x, y); the same arrays every step."""
    import numpy as np

    rng = np.random.default_rng(1234 + rank)
    b = args.batch_size
    if args.model in ("resnet50", "insightface"):
        pixels = rng.standard_normal((b, args.image_size, args.image_size, 3), dtype=np.float32)
        labels = rng.integers(0, args.num_classes, (b,), dtype=np.int32)
        if args.model == "insightface":  # the classifier's margin needs the labels
            return {"images": pixels, "labels": labels}, labels
        return pixels, labels
    if args.model == "wide_deep":  # Criteo-shaped: ids in [0, vocab_size), click labels
        vocab = args.vocab_size
        x = {
            "dense": rng.random((b, DENSE_FIELDS), dtype=np.float32),
            "wide_ids": rng.integers(0, vocab, (b, WIDE_SPARSE_FIELDS), dtype=np.int32),
            "deep_ids": rng.integers(0, vocab, (b, DEEP_SPARSE_FIELDS), dtype=np.int32),
        }
        return x, rng.integers(0, 2, (b,)).astype(np.float32)
    s, vocab = args.seq_len, config["vocabulary_size"]
    if args.model == "gpt":  # y: the next token of every position but the last
        token_ids = rng.integers(0, vocab, (b, s), dtype=np.int32)
        mask = np.ones((b, s), dtype=np.int32)
        return {"token_ids": token_ids, "padding_mask": mask}, token_ids[:, 1:].copy()
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
    KerasHub's argument names; BERT's masked-LM head runs on the masked positions only; GPT's
    decoder formula, 6 N + 12 L s h per token, its LM head counted tied or not; W&D's deep MLP;
    InsightFace's backbone, fc5 and the classes scored). A ResNet of other widths or strides than
    ResNet-50's has no formula: no line, MFU n/a."""
    per_sample = None
    if args.model == "gpt":
        per_sample = decoder_training_flops_per_sequence(decoder_shape(config), args.seq_len)
    elif args.model == "wide_deep":
        per_sample = wide_deep_training_flops_per_sample(WideDeepShape.from_config(config))
    elif args.model == "insightface":
        if not has_resnet50_widths(config["backbone"]):
            return
        per_sample = insightface_training_flops_per_sample(
            args.image_size,
            args.num_classes,
            args.embedding_size,
            args.sample_rate,
            tuple(config["backbone"]["stackwise_num_blocks"]),
        )
    if per_sample is not None:
        if args.explain:
            log(
                "flops",
                rank=0,
                per_sample=f"{per_sample:.6g}",
                math=math,
                method="formula_dlperf.flops",
            )
        return
    if args.model == "bert_base":
        shape = BertShape(
            config["num_layers"],
            config["hidden_dim"],
            config["intermediate_dim"],
            config["vocabulary_size"],
        )
        log_stated_flops(0, args, math, shape)
        return
    if has_resnet50_widths(config):
        log_stated_flops(0, args, math, depths=tuple(config["stackwise_num_blocks"]))


def has_resnet50_widths(config: dict[str, Any]) -> bool:
    """Whether a ResNetBackbone's arguments are ResNet-50's but for its depths: the formula's
    (a stem kernel or block type of its own is another network; pre-activation moves only the
    batch norms, not a convolution)."""
    fixed = set(RESNET50_V15) - {"stackwise_num_blocks", "use_pre_activation"}
    return all(config.get(k) == RESNET50_V15[k] for k in fixed)


def decoder_shape(config: dict[str, Any]) -> DecoderShape:
    """dlperf.flops' shape of the GPT built from `config` (KerasHub's argument names)."""
    llama = config["model_type"] == "llama"
    heads = config["num_query_heads" if llama else "num_heads"]
    return DecoderShape(
        num_layers=config["num_layers"],
        hidden_size=config["hidden_dim"],
        intermediate_size=config["intermediate_dim"],
        vocab_size=config["vocabulary_size"],
        heads=heads,
        kv_heads=config["num_key_value_heads"] if llama else heads,
        gated_mlp=llama,
    )
