"""InsightFace (DLPerf's special case) as insightface's partial FC (arcface_torch) and OneFlow's
oneflow_face train it: a ResNet backbone to an embedding_size face feature, then an ArcFace
classifier over num_classes identities whose weight is split across the ranks (model parallel).
Each rank holds its share of the classes and scores every rank's images against it; the
softmax's max and sum are all-reduced. sample_rate < 1 is partial FC: a sample of each rank's
classes per step. The backbone is transformers' ResNetConfig (ResNet-50 v1.5 by default), which
--model-config overrides (its embedding_size is the stem's width, not the option's); images are
image_size squares (insightface's faces are 112)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterable
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn import functional as F

from dlperf import flops
from dlperf.flops import ARCFACE_MARGIN, ARCFACE_SCALE, arcface_shard
from dlperf.workloads.common import model_config_overrides
from dlperf.workloads.torch_models.recipe import (
    Recipe,
    generator,
    momentum_sgd,
    transformers_facts,
)


def rank_and_world() -> tuple[int, int]:
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


class Backbone(nn.Module):
    """The ResNet's pooled output to the face feature through a linear layer and batch norm
    (insightface's fc5 output block); what data parallel replicates."""

    def __init__(self, resnet: Any, embedding_size: int) -> None:
        super().__init__()
        self.resnet = resnet
        self.fc = nn.Linear(resnet.config.hidden_sizes[-1], embedding_size)
        self.features = nn.BatchNorm1d(embedding_size)

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        pooled = self.resnet(pixel_values=pixel_values).pooler_output.flatten(1)
        return self.features(self.fc(pooled))


def arcface(cosine: torch.Tensor, own: torch.Tensor) -> torch.Tensor:
    """s cos(theta + m) at each image's own class, s cos(theta) elsewhere (own -1: the class is
    another rank's). Past theta = pi - m, where cos(theta + m) would rise again,
    cos(theta) - m sin(m), as insightface does. One column per row gathered and scattered back:
    no host sync, no one-hot mask."""
    column = own.clamp(min=0).unsqueeze(1)
    cos_t = cosine.gather(1, column)
    sin_t = (1 - cos_t * cos_t).clamp(min=1e-9).sqrt()
    margined = torch.where(
        cos_t > math.cos(math.pi - ARCFACE_MARGIN),
        cos_t * math.cos(ARCFACE_MARGIN) - sin_t * math.sin(ARCFACE_MARGIN),
        cos_t - ARCFACE_MARGIN * math.sin(ARCFACE_MARGIN),
    )
    target = torch.where(own.unsqueeze(1) >= 0, margined, cos_t)
    return ARCFACE_SCALE * cosine.scatter(1, column, target)


class ShardedCrossEntropy(torch.autograd.Function):
    """Cross entropy over logits whose classes are split across the ranks (partial FC's
    DistCrossEntropy, Megatron-LM's vocab-parallel cross entropy): the max, the sum of
    exponentials and the target logit are all-reduced, so every rank returns the mean loss of all
    the rows. The backward is local, (softmax - one-hot) / rows: each rank's classes get their
    own gradient, and the all-gather's backward sums each feature's gradient over the shards."""

    @staticmethod
    def forward(ctx: Any, logits: torch.Tensor, own: torch.Tensor) -> torch.Tensor:
        top = logits.max(dim=1, keepdim=True).values
        dist.all_reduce(top, op=dist.ReduceOp.MAX)
        exp = (logits - top).exp()
        total = exp.sum(dim=1, keepdim=True)
        dist.all_reduce(total)
        target = logits.gather(1, own.clamp(min=0).unsqueeze(1)) - top
        target = torch.where(own.unsqueeze(1) >= 0, target, 0.0)
        dist.all_reduce(target)
        ctx.save_for_backward(exp / total, own)
        return (total.log() - target).mean()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        softmax, own = ctx.saved_tensors
        column = own.clamp(min=0).unsqueeze(1)
        one_hot = torch.zeros_like(softmax).scatter(1, column, (own >= 0).unsqueeze(1).float())
        return (softmax - one_hot) * (grad / len(own)), None


class ArcFace(nn.Module):
    """This rank's shard of the classifier (all of it on one rank) and the loss over it."""

    def __init__(self, embedding_size: int, num_classes: int, sample_rate: float) -> None:
        super().__init__()
        rank, world = rank_and_world()
        self.start, end = arcface_shard(num_classes, rank, world)
        # arcface_torch's initialisation; each rank draws its own shard
        self.weight = nn.Parameter(torch.normal(0, 0.01, (end - self.start, embedding_size)))
        self.sampled = max(1, int(sample_rate * (end - self.start)))  # arcface_torch's count

    def forward(self, features: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        _, world = rank_and_world()
        if world > 1:  # every rank's images against this rank's classes
            # imported here: only InsightFace's runs load torch.distributed.nn
            from torch.distributed.nn.functional import all_gather as all_gather_with_grad

            features = torch.cat(all_gather_with_grad(features))
            everyone = [torch.empty_like(labels) for _ in range(world)]
            dist.all_gather(everyone, labels)
            labels = torch.cat(everyone)
        own = labels - self.start
        own = torch.where((own >= 0) & (own < len(self.weight)), own, -1)
        weight: torch.Tensor = self.weight
        if self.sampled < len(weight):
            index, own = self.sample(own)
            weight = weight[index]
        # the product in the autocast precision, the margin and the softmax in fp32
        cosine = F.linear(F.normalize(features), F.normalize(weight)).float()
        logits = arcface(cosine, own)
        if world == 1:
            return F.cross_entropy(logits, own)
        loss: torch.Tensor = ShardedCrossEntropy.apply(logits, own)
        return loss

    def sample(self, own: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Partial FC, as arcface_torch samples: `sampled` of this rank's classes at random, the
        classes of the step's images always among them (all of those, where they are more), and
        the labels renumbered into the sample."""
        with torch.no_grad():
            positive = torch.unique(own[own >= 0])  # sorted
            if len(positive) >= self.sampled:
                index = positive
            else:
                score = torch.rand(len(self.weight), device=own.device)
                score[positive] = 2.0
                index = score.topk(self.sampled).indices.sort().values
            renumbered = torch.searchsorted(index, own.clamp(min=0))
            return index, torch.where(own >= 0, renumbered, -1)


class FaceRecognition(nn.Module):
    def __init__(self, backbone: Backbone, head: ArcFace) -> None:
        super().__init__()
        self.backbone, self.head = backbone, head

    def forward(self, pixel_values: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.head(self.backbone(pixel_values), labels)  # type: ignore[no-any-return]


def build(args: argparse.Namespace) -> tuple[nn.Module, dict[str, Any]]:
    from transformers import ResNetConfig, ResNetModel

    if not 0 < args.sample_rate <= 1:
        raise SystemExit(f"dlperf: sample_rate {args.sample_rate}: expected 0 < sample_rate <= 1")
    world = rank_and_world()[1]
    if args.num_classes < world:
        raise SystemExit(f"dlperf: num_classes {args.num_classes} < {world} ranks: one has none")
    config = ResNetConfig(**model_config_overrides(args, ResNetConfig().to_dict(), "ResNetConfig"))
    model = FaceRecognition(
        Backbone(ResNetModel(config), args.embedding_size),
        ArcFace(args.embedding_size, args.num_classes, args.sample_rate),
    )
    # the backbone has no classifier: ResNetConfig's num_labels says nothing of it
    backbone = {k: v for k, v in transformers_facts(config).items() if k != "num_labels"}
    return model, {
        "backbone": backbone,
        "embedding_size": args.embedding_size,
        "num_classes": args.num_classes,
        "sample_rate": args.sample_rate,
        "arcface_scale": ARCFACE_SCALE,
        "arcface_margin": ARCFACE_MARGIN,
    }


def batch(args: argparse.Namespace, model: nn.Module, device: torch.device) -> dict[str, Any]:
    g, b = generator(), args.batch_size
    pixels = torch.randn(b, 3, args.image_size, args.image_size, generator=g)
    labels = torch.randint(0, args.num_classes, (b,), generator=g)
    return {"pixel_values": pixels.to(device), "labels": labels.to(device)}


def sgd(parameters: Iterable[nn.Parameter], fused: bool | None) -> torch.optim.Optimizer:
    """insightface's and arcface_torch's: learning rate 0.1, momentum 0.9, weight decay 5e-4."""
    return momentum_sgd(parameters, weight_decay=5e-4)


RESNET50 = {
    "num_channels": 3,
    "embedding_size": 64,
    "hidden_sizes": [256, 512, 1024, 2048],
    "layer_type": "bottleneck",
    "downsample_in_first_stage": False,
    "downsample_in_bottleneck": False,
}


def formula(args: argparse.Namespace, facts: dict[str, Any]) -> float:
    """dlperf.flops' formula where the backbone has ResNet-50's widths (any depths; nan else)."""
    backbone = facts["backbone"]
    if not all(backbone.get(k) == v for k, v in RESNET50.items()):
        return float("nan")
    return flops.insightface_training_flops_per_sample(
        args.image_size,
        args.num_classes,
        args.embedding_size,
        args.sample_rate,
        tuple(backbone["depths"]),
    )


def summed(state: object, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """A DDP communication hook: the buckets all-reduced to their sum, not averaged."""
    work = dist.all_reduce(bucket.buffer(), async_op=True)
    assert work is not None
    return work.get_future().then(lambda done: done.value()[0])


def wrap(model: nn.Module, device: torch.device) -> nn.Module:
    """Data parallel on the backbone alone: DDP replicates it, and each rank keeps its own shard
    of the classifier. Every rank's loss is already the mean over all ranks' images, and the
    gradient of each image's feature reaches the rank that made it whole, so the backbone's
    gradients are summed over the ranks (DDP would average them)."""
    inner = getattr(model, "_orig_mod", model)  # under torch.compile: the module it compiles
    ddp = nn.parallel.DistributedDataParallel(inner.backbone)
    # through a lambda: DDP checks a hook's annotations as objects, and this module's are strings
    ddp.register_comm_hook(None, lambda state, bucket: summed(state, bucket))
    inner.backbone = ddp
    return model


RECIPE = Recipe(
    build,
    batch,
    sgd,
    formula,
    wrap=wrap,
    collective_forward=True,
    tf32_flag="cudnn",
    channels_last=True,
)
