"""The PyTorch workload's models, one Recipe each (see recipe.py), by dlperf.vocabulary name."""

from __future__ import annotations

from dlperf.workloads.torch_models import bert, gpt, resnet50
from dlperf.workloads.torch_models.recipe import Recipe

RECIPES: dict[str, Recipe] = {
    "resnet50": resnet50.RECIPE,
    "bert_base": bert.RECIPE,
    "gpt": gpt.RECIPE,
}
