"""Wide & Deep (DLPerf's W&D special case) as OneFlow-Benchmark's WideDeepLearning builds it
(after HugeCTR's wdl sample), on Criteo-shaped synthetic examples: 13 dense features, 26 sparse ids for the deep
part and 2 crossed ids for the wide part, every id in [0, vocab_size). Its sizes are options
(vocab_size, deep_embedding_vec_size, hidden_units_num, hidden_size), not --model-config."""

from __future__ import annotations

import argparse
import itertools
import json
from collections.abc import Iterable
from typing import Any

import torch
from torch import nn

from dlperf import flops
from dlperf.flops import DEEP_SPARSE_FIELDS, DENSE_FIELDS, WIDE_SPARSE_FIELDS
from dlperf.workloads.options import wide_deep_model_config_problem
from dlperf.workloads.torch_models.recipe import Recipe, generator


class WideDeep(nn.Module):
    """logit = wide (the sum of the wide ids' weights: a linear model on sparse features)
    + deep (the 26 looked-up vectors and the dense features through hidden_units_num ReLU layers);
    the loss: sigmoid cross entropy against the click labels.

    Plain dense embeddings, as DDP and the fused optimizers need them: OneFlow splits its tables
    across the GPUs (model parallel) and updates only the looked-up rows (sparse updates); here
    every rank holds both tables whole and its optimizer steps every row. No dropout (DLPerf's
    scripts set OneFlow's deep_dropout_rate to 0.5: a mask per hidden layer, no FLOPs)."""

    def __init__(self, vocab_size: int, vec_size: int, layers: int, hidden: int) -> None:
        super().__init__()
        self.wide = nn.Embedding(vocab_size, 1)
        self.deep = nn.Embedding(vocab_size, vec_size)
        widths = [DENSE_FIELDS + DEEP_SPARSE_FIELDS * vec_size] + [hidden] * layers
        mlp: list[nn.Module] = []
        for width_in, width_out in itertools.pairwise(widths):
            mlp += [nn.Linear(width_in, width_out), nn.ReLU()]
        self.mlp = nn.Sequential(*mlp, nn.Linear(widths[-1], 1))
        # OneFlow's initialisers: uniform(-0.05, 0.05) tables, Glorot-uniform layers, zero biases
        for table in (self.wide, self.deep):
            nn.init.uniform_(table.weight, -0.05, 0.05)
        for layer in self.mlp:
            if isinstance(layer, nn.Linear):
                nn.init.xavier_uniform_(layer.weight)
                nn.init.zeros_(layer.bias)

    def forward(
        self,
        dense: torch.Tensor,
        wide_ids: torch.Tensor,
        deep_ids: torch.Tensor,
        labels: torch.Tensor,
    ) -> torch.Tensor:
        wide = self.wide(wide_ids).sum(dim=(1, 2))
        deep = self.mlp(torch.cat([self.deep(deep_ids).flatten(1), dense], dim=1)).squeeze(1)
        return nn.functional.binary_cross_entropy_with_logits(wide + deep, labels)


def build(args: argparse.Namespace) -> tuple[nn.Module, dict[str, Any]]:
    if problem := wide_deep_model_config_problem(json.loads(args.model_config)):
        raise SystemExit(f"dlperf: {problem}")
    sizes = {
        "vocab_size": args.vocab_size,
        "deep_embedding_vec_size": args.deep_embedding_vec_size,
        "hidden_units_num": args.hidden_units_num,
        "hidden_size": args.hidden_size,
    }
    model = WideDeep(
        args.vocab_size, args.deep_embedding_vec_size, args.hidden_units_num, args.hidden_size
    )
    fields = {
        "dense_fields": DENSE_FIELDS,
        "deep_sparse_fields": DEEP_SPARSE_FIELDS,
        "wide_sparse_fields": WIDE_SPARSE_FIELDS,
    }
    return model, sizes | fields


def batch(args: argparse.Namespace, model: nn.Module, device: torch.device) -> dict[str, Any]:
    g, b, vocab = generator(), args.batch_size, args.vocab_size
    examples = {
        "dense": torch.rand(b, DENSE_FIELDS, generator=g),
        "wide_ids": torch.randint(0, vocab, (b, WIDE_SPARSE_FIELDS), generator=g),
        "deep_ids": torch.randint(0, vocab, (b, DEEP_SPARSE_FIELDS), generator=g),
        "labels": torch.randint(0, 2, (b,), generator=g).float(),
    }
    return {k: v.to(device) for k, v in examples.items()}


def adam(parameters: Iterable[nn.Parameter], fused: bool | None) -> torch.optim.Optimizer:
    """OneFlow's W&D: (lazy) Adam at learning rate 1e-3. LazyAdam updates only the rows looked
    up; dense tables give plain Adam, which steps every row."""
    return torch.optim.Adam(parameters, lr=1e-3, fused=fused)


def formula(args: argparse.Namespace, facts: dict[str, Any]) -> float:
    return flops.wide_deep_training_flops_per_sample(flops.WideDeepShape.from_config(facts))


RECIPE = Recipe(build, batch, adam, formula)
