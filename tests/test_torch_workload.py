"""The built-in PyTorch workload's own checks, before it trains."""

from __future__ import annotations

import pytest

from dlperf.workloads import torch_train


def _args(model: str, model_config: str):
    return torch_train.parse_args(
        ["--model", model, "--batch-size", "2", "--steps", "1", "--model-config", model_config]
    )


@pytest.mark.parametrize(
    "model, config, message",
    [
        ("bert_base", '{"num_hiden_layers": 1}', "num_hiden_layers: not a field of BertConfig"),
        ("resnet50", '{"dephts": [1, 1, 1, 1]}', "dephts: not a field of ResNetConfig"),
    ],
)
def test_a_model_config_typo_stops_the_run_naming_the_key(model, config, message):
    """Issue 20.10: `num_hiden_layers: 1` trained a 12-layer model."""
    with pytest.raises(SystemExit, match=message):
        torch_train.build_model(_args(model, config))


def test_known_model_config_keys_build_the_model():
    model, described = torch_train.build_model(_args("bert_base", '{"num_hidden_layers": 1}'))
    assert described["num_hidden_layers"] == 1
    assert len(model.bert.encoder.layer) == 1
