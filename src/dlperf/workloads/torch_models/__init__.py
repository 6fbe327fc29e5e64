"""The PyTorch workload's models, one Recipe each (see recipe.py), by dlperf.vocabulary name."""

from __future__ import annotations

from dlperf.workloads.torch_models import bert, gpt, insightface, resnet50, wide_deep
from dlperf.workloads.torch_models.recipe import Recipe

RECIPES: dict[str, Recipe] = {
    "resnet50": resnet50.RECIPE,
    "bert_base": bert.RECIPE,
    "wide_deep": wide_deep.RECIPE,
    "insightface": insightface.RECIPE,
    "gpt": gpt.RECIPE,
}
