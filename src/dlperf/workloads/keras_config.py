"""The model_config rule of the Keras 3 workloads (jax_train, tf_train): transformers' config names,
as the pytorch adapter takes them, translated to KerasHub's backbone arguments, over the full-size
defaults (ResNet-50 v1.5, BERT-base, GPT-2 small, Llama-7B shapes). Pure, and free of Keras: the
adapters check a suite with `model_config_problem` before anything runs, and the workloads build
their models from `model_hyperparameters` (dlperf.workloads.keras_models)."""

from __future__ import annotations

from typing import Any

from dlperf.workloads.options import wide_deep_model_config_problem

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

# GPT: transformers' GPT2Config names (its own and its attribute_map's, what the pytorch
# workload's model_config takes) -> GPT2Backbone's arguments.
GPT2_NAMES = {
    "vocab_size": "vocabulary_size",
    "n_layer": "num_layers",
    "num_hidden_layers": "num_layers",
    "n_head": "num_heads",
    "num_attention_heads": "num_heads",
    "n_embd": "hidden_dim",
    "hidden_size": "hidden_dim",
    "n_inner": "intermediate_dim",
    "n_positions": "max_sequence_length",
    "max_position_embeddings": "max_sequence_length",
    "resid_pdrop": "dropout",
}
GPT2_SMALL: dict[str, Any] = {
    "vocabulary_size": 50257,
    "num_layers": 12,
    "num_heads": 12,
    "hidden_dim": 768,
    "intermediate_dim": None,  # GPT2Config's n_inner: None is 4 x hidden_dim
    "dropout": 0.1,
    "max_sequence_length": 1024,
}
# transformers' LlamaConfig names -> LlamaBackbone's arguments.
LLAMA_NAMES = {
    "vocab_size": "vocabulary_size",
    "num_hidden_layers": "num_layers",
    "num_attention_heads": "num_query_heads",
    "hidden_size": "hidden_dim",
    "intermediate_size": "intermediate_dim",
    "rms_norm_eps": "layer_norm_epsilon",
    "rope_theta": "rope_max_wavelength",
    "attention_dropout": "dropout",
    "max_position_embeddings": "max_sequence_length",
}
# LlamaConfig's defaults (Llama-7B shapes), as the pytorch workload builds them.
LLAMA: dict[str, Any] = {
    "vocabulary_size": 32000,
    "num_layers": 32,
    "num_query_heads": 32,
    "hidden_dim": 4096,
    "intermediate_dim": 11008,
    "num_key_value_heads": None,  # None: num_query_heads (no grouped-query attention)
    "rope_max_wavelength": 10000,
    "layer_norm_epsilon": 1e-6,
    "dropout": 0.0,
    "tie_word_embeddings": False,
    # no LlamaBackbone argument (rotary positions have no table): the longest seq_len allowed,
    # as transformers' max_position_embeddings bounds the pytorch workload's
    "max_sequence_length": 2048,
}
GPT_FAMILIES = {"gpt2": (GPT2_NAMES, GPT2_SMALL), "llama": (LLAMA_NAMES, LLAMA)}


def model_config_problem(model: str, overrides: dict[str, Any]) -> str | None:
    """Why `overrides` is no model_config of `model` (None: it is one): a key neither KerasHub's
    nor the transformers name it translates, or a GPT family it does not build. Pure, so the
    adapters check a suite with it before anything runs (dlperf.adapters.jax_builtin)."""
    overrides = dict(overrides)
    if model == "wide_deep":
        return wide_deep_model_config_problem(overrides)
    family = overrides.pop("model_type", "gpt2") if model == "gpt" else None
    if family is not None and family not in GPT_FAMILIES:
        return f"gpt model_config.model_type: {family!r}: expected one of {', '.join(GPT_FAMILIES)}"
    names, base = _names_and_base(model, family)
    for key in overrides:
        if names.get(key, key) not in base:
            known = sorted(set(base) | set(names) | ({"model_type"} if family else set()))
            what = f"{model} ({family})" if family else model
            return f"unknown {what} model_config key {key!r} (known: {', '.join(known)})"
    return None


def _names_and_base(model: str, family: str | None) -> tuple[dict[str, str], dict[str, Any]]:
    """The transformers names a model's model_config translates, and its KerasHub defaults."""
    if model in ("resnet50", "insightface"):  # insightface: its ResNet backbone's
        return RESNET_NAMES, RESNET50_V15
    if model == "gpt":
        return GPT_FAMILIES[family or "gpt2"]
    return BERT_NAMES, BERT_BASE


def model_hyperparameters(model: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """The KerasHub backbone arguments: the full-size defaults with the overrides applied (for
    gpt, also its "model_type": gpt2 or llama)."""
    problem = model_config_problem(model, overrides)
    if problem:
        raise SystemExit(f"dlperf: {problem}")
    if model == "wide_deep":
        return {}
    overrides = dict(overrides)
    family = overrides.pop("model_type", "gpt2") if model == "gpt" else None
    names, base = _names_and_base(model, family)
    config = dict(base)
    for key, value in overrides.items():
        key = names.get(key, key)
        if key == "input_conv_filters" and isinstance(value, int):
            value = [value]
        config[key] = value
    if family == "gpt2" and config["intermediate_dim"] is None:
        config["intermediate_dim"] = 4 * config["hidden_dim"]
    if family == "llama" and config["num_key_value_heads"] is None:
        config["num_key_value_heads"] = config["num_query_heads"]
    if family:
        config = {"model_type": family, **config}
    return config
