"""BERT-base pretraining from transformers' BertConfig (its defaults are BERT-base)."""

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
    generator,
    transformers_facts,
)


class Pretraining(nn.Module):
    """BERT's pretraining loss as Google's BERT and NVIDIA's DeepLearningExamples (DLPerf's BERT)
    compute it: the masked-LM head runs on the `max_predictions` masked positions gathered from
    the encoder's output, not on every token as transformers' BertForPreTraining does (21% more
    FLOPs at 128 tokens, and the same work as the upstream BERT the tables compare with).

    One module, so that DDP and torch.compile see the whole forward of a step."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model
        self.config = model.config

    def forward(
        self,
        input_ids: torch.Tensor,
        token_type_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        mlm_positions: torch.Tensor,
        mlm_labels: torch.Tensor,
        next_sentence_label: torch.Tensor,
    ) -> torch.Tensor:
        encoded, pooled = self.model.bert(
            input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask
        )[:2]
        index = mlm_positions.unsqueeze(-1).expand(-1, -1, encoded.size(-1))
        mlm_logits, nsp_logits = self.model.cls(encoded.gather(1, index), pooled)
        mlm = nn.functional.cross_entropy(mlm_logits.flatten(0, 1), mlm_labels.flatten())
        return mlm + nn.functional.cross_entropy(nsp_logits, next_sentence_label)


def build(args: argparse.Namespace) -> tuple[nn.Module, dict[str, Any]]:
    from transformers import BertConfig, BertForPreTraining

    # attn_implementation (eager, sdpa, ...) is a config argument that to_dict() leaves out
    fields = set(BertConfig().to_dict()) | {"attn_implementation"}
    config = BertConfig(**model_config_overrides(args, fields, "BertConfig"))
    return Pretraining(BertForPreTraining(config)), transformers_facts(config)


def batch(args: argparse.Namespace, model: nn.Module, device: torch.device) -> dict[str, Any]:
    g, b, s = generator(), args.batch_size, args.seq_len
    vocab = int(getattr(model, "config").vocab_size)  # noqa: B009  (a Module attribute mypy cannot see)
    input_ids = torch.randint(0, vocab, (b, s), generator=g)
    positions = torch.rand(b, s, generator=g).argsort(dim=1)[:, : min(args.max_predictions, s)]
    return {
        "input_ids": input_ids.to(device),
        "token_type_ids": (torch.arange(s) >= s // 2).long().expand(b, s).contiguous().to(device),
        "attention_mask": torch.ones(b, s, dtype=torch.long, device=device),
        "mlm_positions": positions.to(device),
        "mlm_labels": input_ids.gather(1, positions).to(device),
        "next_sentence_label": torch.randint(0, 2, (b,), generator=g).to(device),
    }


def formula(args: argparse.Namespace, facts: dict[str, Any]) -> float:
    shape = flops.BertShape.from_config(facts)
    return flops.bert_pretraining_flops_per_sample(shape, args.seq_len, args.max_predictions)


RECIPE = Recipe(build, batch, adamw, formula, clip=True)
