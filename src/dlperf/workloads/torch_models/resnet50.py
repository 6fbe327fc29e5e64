"""ResNet-50 v1.5 from transformers' ResNetConfig (its defaults are ResNet-50 v1.5)."""

from __future__ import annotations

import argparse
from typing import Any

import torch
from torch import nn

from dlperf import flops
from dlperf.workloads.common import model_config_overrides
from dlperf.workloads.torch_models.recipe import (
    Recipe,
    generator,
    sgd,
    transformers_facts,
)


class Classification(nn.Module):
    """transformers' image classifier's own loss, as a module returning it."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model
        self.config = model.config

    def forward(self, pixel_values: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.model(pixel_values=pixel_values, labels=labels).loss


def build(args: argparse.Namespace) -> tuple[nn.Module, dict[str, Any]]:
    from transformers import ResNetConfig, ResNetForImageClassification

    given = model_config_overrides(args, ResNetConfig().to_dict(), "ResNetConfig")
    config = ResNetConfig(num_labels=args.num_classes, **given)  # type: ignore[call-arg]
    return Classification(ResNetForImageClassification(config)), transformers_facts(config)


def batch(args: argparse.Namespace, model: nn.Module, device: torch.device) -> dict[str, Any]:
    g, b = generator(), args.batch_size
    pixels = torch.randn(b, 3, args.image_size, args.image_size, generator=g)
    labels = torch.randint(0, args.num_classes, (b,), generator=g)
    return {"pixel_values": pixels.to(device), "labels": labels.to(device)}


def formula(args: argparse.Namespace, facts: dict[str, Any]) -> float:
    """ResNet-50's formula where the config is ResNet-50's (else nan: a toy has no formula)."""
    resnet50 = {
        "depths": [3, 4, 6, 3],
        "hidden_sizes": [256, 512, 1024, 2048],
        "embedding_size": 64,
    }
    if all(facts.get(k) == v for k, v in resnet50.items()):
        return flops.resnet50_training_flops_per_sample(args.image_size, args.num_classes)
    return float("nan")


RECIPE = Recipe(build, batch, sgd, formula, tf32_flag="cudnn", channels_last=True)
