"""What the PyTorch training loop (dlperf.workloads.torch_train) needs of a model: one Recipe per
model, in a module of its own (resnet50.py, bert.py, ...), registered in this package's RECIPES."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn


def data_parallel(model: nn.Module, device: torch.device) -> nn.Module:
    """The whole model replicated, its gradients all-reduced: DistributedDataParallel."""
    return nn.parallel.DistributedDataParallel(model)


def fully_sharded(model: nn.Module, blocks: Iterable[nn.Module]) -> None:
    """FSDP2 (torch.distributed.fsdp.fully_shard), in place: each block's parameters, gradients
    and optimizer state split across the ranks and gathered for its forward and backward, then
    the rest (embeddings, head) as the root's group."""
    from torch.distributed.fsdp import fully_shard

    for block in blocks:
        fully_shard(block)
    fully_shard(model)


@dataclass(frozen=True)
class Recipe:
    """How the loop builds, feeds, optimises and counts one model.

    - build(args): the model as a module whose forward(**batch) returns the training loss, and its
      configuration's facts (the report's model-configuration section);
    - batch(args, model, device): one synthetic batch made on the device, fed every step;
    - optimizer(parameters, fused): the optimizer DLPerf's upstream scripts use for the model;
    - formula(args, facts): training FLOPs per sample by dlperf.flops' stated formula (nan: none);
    - wrap(model, device): how data parallel wraps the model on more than one rank;
    - shard(model): FSDP2 over the model's blocks, in place (option sharding: fsdp); None: the
      model trains with ddp only;
    - collective_forward: the forward itself communicates (a classifier split across ranks), so
      every rank runs the FLOP-counting step, not rank 0 alone;
    - tf32_flag: which PyTorch switch lets its products use TF32 ("cudnn": convolutions,
      "matmul": cuBLAS);
    - clip: gradients clipped to --clip-grad-norm;
    - channels_last: NHWC images on CUDA.
    """

    build: Callable[[argparse.Namespace], tuple[nn.Module, dict[str, Any]]]
    batch: Callable[[argparse.Namespace, nn.Module, torch.device], dict[str, torch.Tensor]]
    optimizer: Callable[[Iterable[nn.Parameter], bool | None], torch.optim.Optimizer]
    formula: Callable[[argparse.Namespace, dict[str, Any]], float]
    wrap: Callable[[nn.Module, torch.device], nn.Module] = data_parallel
    shard: Callable[[nn.Module], None] | None = None
    collective_forward: bool = False
    tf32_flag: str = "matmul"
    clip: bool = False
    channels_last: bool = False


def generator(seed: int = 1234) -> torch.Generator:
    """The synthetic data's generator: a different stream per rank, the same every run."""
    import os

    return torch.Generator(device="cpu").manual_seed(seed + int(os.environ.get("RANK", 0)))


def transformers_facts(config: Any) -> dict[str, Any]:
    """A transformers config as the report shows it: what differs from its defaults."""
    described = {
        k: v for k, v in config.to_diff_dict().items() if k not in ("id2label", "label2id")
    }
    return described | {"model_type": config.model_type, "num_labels": config.num_labels}


def adamw(parameters: Iterable[nn.Parameter], fused: bool | None) -> torch.optim.Optimizer:
    return torch.optim.AdamW(parameters, lr=1e-4, weight_decay=0.01, fused=fused)


def momentum_sgd(parameters: Iterable[nn.Parameter], weight_decay: float) -> torch.optim.Optimizer:
    """SGD at learning rate 0.1 with momentum 0.9, never fused: the fused kernel (torch 2.11 to
    2.13) creates the momentum buffer on a step the grad scaler skips for an overflow and leaves
    it unwritten, so the next step applies garbage. On an H100 (2026-11-27) ResNet-50 AMP's loss
    was nan from its 4th step on. Fused Adam and AdamW leave their state alone on such a step."""
    return torch.optim.SGD(parameters, lr=0.1, momentum=0.9, weight_decay=weight_decay)


def sgd(parameters: Iterable[nn.Parameter], fused: bool | None) -> torch.optim.Optimizer:
    return momentum_sgd(parameters, weight_decay=5e-5)
