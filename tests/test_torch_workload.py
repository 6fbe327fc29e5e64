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
    assert len(model.model.bert.encoder.layer) == 1


def test_pretraining_loss_is_transformers_loss_on_the_masked_positions_only():
    """The masked-LM head on the gathered positions gives BertForPreTraining's own loss (labels
    -100 elsewhere) to float precision, and its counted FLOPs are dlperf.flops' formula with the
    head on max_predictions positions (eager attention, so every product is counted)."""
    import torch

    config = '{"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 2, ' + (
        '"intermediate_size": 128, "vocab_size": 500, "attn_implementation": "eager"}'
    )
    args = torch_train.parse_args(
        ["--model", "bert_base", "--batch-size", "3", "--steps", "1", "--seq-len", "16"]
        + ["--max-predictions", "5", "--model-config", config]
    )
    torch.manual_seed(0)
    model, described = torch_train.build_model(args)
    model.eval()  # no dropout: both losses see the same activations
    batch = torch_train.synthetic_batch(args, model.config, torch.device("cpu"))
    labels = torch.full_like(batch["input_ids"], -100)
    labels.scatter_(1, batch["mlm_positions"], batch["mlm_labels"])
    whole = model.model(
        input_ids=batch["input_ids"],
        token_type_ids=batch["token_type_ids"],
        attention_mask=batch["attention_mask"],
        labels=labels,
        next_sentence_label=batch["next_sentence_label"],
    ).loss
    assert float(model(**batch).detach()) == pytest.approx(float(whole), rel=1e-5)
    counted = torch_train.counted_flops_per_sample(model, batch)
    assert counted == pytest.approx(torch_train.formula_flops_per_sample(args, described), rel=1e-3)
