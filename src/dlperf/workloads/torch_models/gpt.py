"""A decoder-only language model from transformers (AutoModelForCausalLM from a config, no
download): GPT-2 shapes by default (DLPerf's GPT special case), Llama shapes (RMSNorm, SwiGLU,
rotary embeddings, grouped-query attention, as MLPerf Training and torchtitan run) with
model_config {"model_type": "llama", ...}. Next-token loss over every position."""

from __future__ import annotations

import argparse
from typing import Any

import torch
from torch import nn

from dlperf import flops
from dlperf.workloads.common import model_config_overrides
from dlperf.workloads.torch_models.recipe import (
    Recipe,
    adamw,
    fully_sharded,
    generator,
    transformers_facts,
)

FAMILIES = ("gpt2", "llama")


class CausalLM(nn.Module):
    """The model's own shifted next-token cross entropy, as a module returning it."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model
        self.config = model.config

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, labels=input_ids).loss


def build(args: argparse.Namespace) -> tuple[nn.Module, dict[str, Any]]:
    from transformers import AutoConfig, AutoModelForCausalLM

    given = model_config_overrides(args, _fields(args), "the GPT-2 or Llama config")
    family = given.pop("model_type", "gpt2")
    if family not in FAMILIES:
        raise SystemExit(f"dlperf: model_config.model_type: {family}: expected one of {FAMILIES}")
    config = AutoConfig.for_model(family, **given)
    positions = config.max_position_embeddings
    if args.seq_len > positions:
        raise SystemExit(
            f"dlperf: seq_len {args.seq_len} > the model's max_position_embeddings {positions}"
        )
    model = AutoModelForCausalLM.from_config(config)
    return CausalLM(model), transformers_facts(config)


def _fields(args: argparse.Namespace) -> set[str]:
    """The chosen family's config fields (and the names it maps to them), and model_type."""
    import json

    from transformers import AutoConfig

    family = json.loads(args.model_config).get("model_type", "gpt2")
    config = AutoConfig.for_model(family if family in FAMILIES else "gpt2")
    return set(config.to_dict()) | set(config.attribute_map) | {"model_type", "attn_implementation"}


def batch(args: argparse.Namespace, model: nn.Module, device: torch.device) -> dict[str, Any]:
    vocab = int(getattr(model, "config").vocab_size)  # noqa: B009  (a Module attribute mypy cannot see)
    ids = torch.randint(0, vocab, (args.batch_size, args.seq_len), generator=generator())
    return {"input_ids": ids.to(device)}


def formula(args: argparse.Namespace, facts: dict[str, Any]) -> float:
    return flops.decoder_training_flops_per_sequence(
        flops.DecoderShape.from_config(facts), args.seq_len
    )


def shard(model: nn.Module) -> None:
    """FSDP2 per decoder block (the classes transformers names in _no_split_modules: GPT2Block,
    LlamaDecoderLayer), as torchtitan shards its Llama."""
    inner = getattr(model, "model")  # noqa: B009  (CausalLM's transformers model)
    names = set(inner._no_split_modules or ())
    fully_sharded(model, [m for m in inner.modules() if type(m).__name__ in names])


RECIPE = Recipe(build, batch, adamw, formula, shard=shard, clip=True)
