"""MindSpore's networks of the built-in workload, from MindCV and MindFormers configs (no download):
the model_config rule (transformers' names, translated to MindFormers'), checked before anything
runs (`model_config_problem`, pure: the adapter calls it without MindSpore), and the networks with
their losses (dlperf.workloads.mindspore_train's docstring says which and why)."""

from __future__ import annotations

import argparse
import json
from typing import Any

# MindFormers' BertConfig takes transformers' names; these define the network (the rest of it is
# about parallelism, checkpoints and inference). Its own default max_position_embeddings is 128:
# BERT-base's 512 is set unless the model_config says otherwise.
BERT_ARCHITECTURE = (
    "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
    "hidden_act", "hidden_dropout_prob", "attention_probs_dropout_prob",
    "max_position_embeddings", "type_vocab_size", "initializer_range", "post_layernorm_residual",
    "use_relative_positions", "seq_length", "batch_size",
)  # fmt: skip
BERT_BASE_POSITIONS = 512
# GPT: transformers' GPT2Config names (its own and its attribute_map's, what the pytorch workload's
# model_config takes) -> MindFormers' GPT2Config; the feed-forward width is its expand_ratio.
GPT2_NAMES = {
    "vocab_size": "vocab_size", "n_layer": "num_layers", "num_hidden_layers": "num_layers",
    "n_head": "num_heads", "num_attention_heads": "num_heads", "n_embd": "hidden_size",
    "hidden_size": "hidden_size", "n_inner": "intermediate_size",
    "intermediate_size": "intermediate_size", "n_positions": "max_position_embeddings",
    "max_position_embeddings": "max_position_embeddings", "embd_pdrop": "embedding_dropout_prob",
    "resid_pdrop": "hidden_dropout_rate", "attn_pdrop": "attention_dropout_rate",
}  # fmt: skip
# GPT-2 small: GPT2Config's defaults but its positions, which it sizes to seq_length
GPT2_SMALL: dict[str, Any] = {
    "vocab_size": 50257, "num_layers": 12, "num_heads": 12, "hidden_size": 768,
    "intermediate_size": None, "max_position_embeddings": 1024, "embedding_dropout_prob": 0.1,
    "hidden_dropout_rate": 0.1, "attention_dropout_rate": 0.1,
}  # fmt: skip
# transformers' LlamaConfig names -> MindFormers' LlamaConfig
LLAMA_NAMES = {
    "vocab_size": "vocab_size", "hidden_size": "hidden_size",
    "intermediate_size": "intermediate_size", "num_hidden_layers": "num_layers",
    "num_attention_heads": "num_heads", "num_key_value_heads": "n_kv_heads",
    "max_position_embeddings": "max_position_embedding", "rms_norm_eps": "rms_norm_eps",
    "rope_theta": "theta", "tie_word_embeddings": "tie_word_embeddings",
}  # fmt: skip
# transformers' LlamaConfig defaults (Llama-7B), as the pytorch workload builds them; MindFormers'
# own differ (rms_norm_eps 1e-5, positions sized to seq_length, float16 weights)
LLAMA: dict[str, Any] = {
    "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008, "num_layers": 32,
    "num_heads": 32, "n_kv_heads": None, "max_position_embedding": 2048, "rms_norm_eps": 1e-6,
    "theta": 10000.0, "tie_word_embeddings": False,
}  # fmt: skip
GPT_FAMILIES = {"gpt2": (GPT2_NAMES, GPT2_SMALL), "llama": (LLAMA_NAMES, LLAMA)}


def model_config_problem(model: str, overrides: dict[str, Any]) -> str | None:
    """Why `overrides` is no model_config of `model` (None: its keys are known). Pure: the adapter
    checks a suite with it before anything runs."""
    if model == "resnet50":
        return f"resnet50 takes no model_config keys: {sorted(overrides)}" if overrides else None
    family = overrides.get("model_type", "gpt2") if model == "gpt" else None
    if family is not None and family not in GPT_FAMILIES:
        return f"gpt model_config.model_type: {family!r}: expected one of {', '.join(GPT_FAMILIES)}"
    names = {*GPT_FAMILIES[family][0], "model_type"} if family else set(BERT_ARCHITECTURE)
    owner = {None: "BertConfig", "gpt2": "GPT2Config", "llama": "LlamaConfig"}[family]
    unknown = sorted(set(overrides) - names)
    if not unknown:
        return None
    return (
        f"unknown {model}{f' ({family})' if family else ''} model_config key {unknown[0]!r} "
        f"(known: {', '.join(sorted(names))}; transformers' {owner} names)"
    )


def bert_config(overrides: dict[str, Any], args: argparse.Namespace, compute: str) -> Any:
    from mindformers.models.bert import BertConfig

    settings = {"max_position_embeddings": BERT_BASE_POSITIONS} | overrides
    return BertConfig(
        **settings,
        batch_size=args.batch_size,
        seq_length=args.seq_len,
        compute_dtype=compute,
        checkpoint_name_or_path="",  # built from the config: never a download
    )


def gpt_settings(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """The family (gpt2 or llama) and MindFormers' config arguments of its sizes: the defaults with
    model_config's overrides, every key checked (model_config_problem, as dlperf check does)."""
    given = json.loads(args.model_config)
    if problem := model_config_problem("gpt", given):
        raise SystemExit(f"dlperf: {problem}")
    family = given.get("model_type", "gpt2")
    names, defaults = GPT_FAMILIES[family]
    settings = defaults | {names[k]: v for k, v in given.items() if k != "model_type"}
    if family == "gpt2":  # GPT2Config's feed-forward: expand_ratio x hidden_size
        h, inner = settings["hidden_size"], settings.pop("intermediate_size")
        if inner is not None and inner % h:
            raise SystemExit(
                f"dlperf: gpt model_config: intermediate_size {inner} is not a multiple of "
                f"hidden_size {h}: MindFormers' GPT2Config sets it as expand_ratio x hidden_size"
            )
        settings["expand_ratio"] = inner // h if inner else 4
    positions = settings[
        "max_position_embeddings" if family == "gpt2" else "max_position_embedding"
    ]
    if args.seq_len > positions:
        raise SystemExit(f"dlperf: seq_len {args.seq_len} > the model's positions {positions}")
    return family, settings


def gpt_network(args: argparse.Namespace, ms: Any, compute: str) -> tuple[Any, dict[str, Any]]:
    """MindFormers' GPT-2 or Llama causal LM (its loss the next-token cross entropy), its config."""
    family, settings = gpt_settings(args)
    common = {
        "seq_length": args.seq_len, "batch_size": args.batch_size, "compute_dtype": compute,
        "param_init_type": "float32", "checkpoint_name_or_path": "",  # never a download
    }  # fmt: skip
    if family == "gpt2":
        from mindformers.models.gpt2 import GPT2Config, GPT2LMHeadModel

        config = GPT2Config(**settings, **common)
        network = GPT2LMHeadModel(config)
    else:
        from mindformers.models.llama import LlamaConfig, LlamaForCausalLM
        from mindformers.modules.layers import RotaryEmbedding

        config = LlamaConfig(**settings, **common, fused_rms_norm=False, use_rope_slice=True)
        network = LlamaForCausalLM(config)
        for _, cell in network.cells_and_names():  # the Cast its construct calls (docstring)
            if isinstance(cell, RotaryEmbedding) and not hasattr(cell, "cast"):
                cell.cast = ms.ops.Cast()
    exact = {k: getattr(config, k) for k in [*settings, "seq_length"]}
    exact["compute_dtype"] = str(config.compute_dtype)
    if family == "llama":
        exact |= {"fused_rms_norm": False, "use_rope_slice": True}
    return network, exact | {"model_type": family}


def build_network(args: argparse.Namespace, ms: Any, amp: bool) -> tuple[Any, dict[str, Any]]:
    """(the network with its loss: a Cell of the batch's tensors, the exact model config)."""
    from mindspore import nn

    if args.model == "gpt":
        return gpt_network(args, ms, "float16" if amp else "float32")
    overrides = json.loads(args.model_config)
    if problem := model_config_problem(args.model, overrides):
        raise SystemExit(f"dlperf: {problem}")
    if args.model == "resnet50":
        from mindcv.models import create_model

        backbone = create_model("resnet50", num_classes=args.num_classes, pretrained=False)
        if amp:
            backbone = ms.amp.auto_mixed_precision(backbone, "O2", dtype=ms.float16)
        loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        config = {"arch": "mindcv.models.resnet50", "num_classes": args.num_classes}
        return nn.WithLossCell(backbone, loss), config
    from mindformers.models.bert import BertForPreTraining

    config = bert_config(overrides, args, "float16" if amp else "float32")
    network = BertForPreTraining(config)
    exact = {k: getattr(config, k) for k in BERT_ARCHITECTURE}
    exact["compute_dtype"] = str(config.compute_dtype)
    return network, exact | {"model_type": "bert"}
