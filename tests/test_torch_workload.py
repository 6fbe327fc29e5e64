"""The built-in PyTorch workload's own checks, before it trains."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import torch
from torch import nn

from dlperf.adapters import TaskContext, get_adapter
from dlperf.config import validate
from dlperf.errors import ConfigError
from dlperf.matrix import Cell, Layout
from dlperf.workloads import torch_train
from dlperf.workloads.options import command_flags

if TYPE_CHECKING:
    from conftest import WorkloadRuns


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
    batch = torch_train.synthetic_batch(args, model, torch.device("cpu"))
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


ADAPTER = get_adapter("pytorch")
TINY_GPT2 = json.dumps(ADAPTER.tiny["gpt"]["model_config"])  # the adapter's tiny configuration
TINY_LLAMA = (
    '{"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "intermediate_size": 172,'
    ' "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1000}'
)


@pytest.mark.parametrize("config", [TINY_GPT2, TINY_LLAMA], ids=["gpt2", "llama_gqa"])
def test_gpt_counted_flops_are_the_6n_plus_attention_formula(config):
    """GPT-2 and Llama (SwiGLU, grouped-query attention) shapes: FlopCounterMode on the model as
    it trains (SDPA attention, which the count runs as plain products) gives dlperf.flops'
    6 N + 12 L s h per token exactly."""
    import torch

    tiny = command_flags(ADAPTER.resolved_options(ADAPTER.tiny["gpt"]))
    args = torch_train.parse_args(
        ["--model", "gpt", "--batch-size", "3", "--steps", "1", *tiny, "--model-config", config]
    )  # the last --model-config wins
    model, described = torch_train.build_model(args)
    batch = torch_train.synthetic_batch(args, model, torch.device("cpu"))
    assert batch["input_ids"].shape == (3, ADAPTER.tiny["gpt"]["seq_len"])
    counted = torch_train.counted_flops_per_sample(model, batch)
    assert counted == pytest.approx(torch_train.formula_flops_per_sample(args, described), rel=1e-9)


@pytest.mark.parametrize(
    "config, message",
    [
        ('{"n_layers": 2}', "n_layers: not a field of the GPT-2 or Llama config"),
        ('{"model_type": "llama", "num_kv_heads": 2}', "num_kv_heads: not a field"),
        ('{"model_type": "bert"}', "model_type: bert: expected one of"),
    ],
)
def test_a_gpt_model_config_typo_or_family_stops_the_run(config, message):
    with pytest.raises(SystemExit, match=message):
        torch_train.build_model(_args("gpt", config))


def test_a_sequence_longer_than_the_models_positions_stops_the_run():
    args = torch_train.parse_args(
        ["--model", "gpt", "--batch-size", "1", "--steps", "1", "--seq-len", "4096"]
    )
    with pytest.raises(SystemExit, match="seq_len 4096 > the model's max_position_embeddings 1024"):
        torch_train.build_model(args)


def test_the_xla_column_compiles_in_the_mode_the_case_asks():
    """torch.compile is PyTorch's xla column: its mode is the option compile_mode, checked
    against torch.compile's modes, passed only where the cell compiles, and parsed by the
    workload; another framework's case cannot name it."""
    adapter = get_adapter("pytorch")
    command = _command(adapter, xla=True, options={"compile_mode": "reduce-overhead"})
    at = command.index("--compile")
    assert command[at + 1 : at + 3] == ["--compile-mode", "reduce-overhead"]
    assert "--compile" not in _command(adapter, xla=False, options={})
    assert (
        torch_train.parse_args(["--model", "gpt", "--batch-size", "1", "--steps", "1"]).compile_mode
        == "default"
    )

    case = {"framework": "pytorch", "model": "bert_base", "batch_size": [8], "layouts": ["1n1g"]}
    validate({"cases": [dict(case, options={"compile_mode": "max-autotune"})]})
    with pytest.raises(ConfigError, match=r"options\.compile_mode: 'fast' is not one of"):
        validate({"cases": [dict(case, options={"compile_mode": "fast"})]})
    with pytest.raises(ConfigError, match=r"compile_mode"):
        validate({"cases": [dict(case, framework="jax", options={"compile_mode": "default"})]})


def test_amp_on_cuda_runs_in_the_type_the_case_asks():
    """cuda_amp_dtype: float16 with a grad scaler by default (DLPerf's AMP), bfloat16 without
    one where a case asks (on an H100, 2026-11-27: +4% for BERT-base b512 under CUDA graphs);
    passed in amp cells only, and what the MFU's peak is taken in follows it. A CPU's amp is
    bf16 either way."""
    adapter = get_adapter("pytorch")
    amp = _command(adapter, xla=False, options={"cuda_amp_dtype": "bfloat16"}, precision="amp")
    at = amp.index("--cuda-amp-dtype")
    assert amp[at + 1] == "bfloat16"
    assert "--cuda-amp-dtype" not in _command(adapter, xla=False, options={})  # an fp32 cell
    argv = ["--model", "bert_base", "--batch-size", "2", "--steps", "1", "--precision", "amp"]
    default, bf16 = (
        torch_train.parse_args(argv),
        torch_train.parse_args([*argv, "--cuda-amp-dtype", "bfloat16"]),
    )
    cuda, cpu = torch.device("cuda", 0), torch.device("cpu")
    assert torch_train.autocast_dtype(default, cuda) == torch.float16
    assert torch_train.math_dtype(default, cuda) == "fp16"
    assert torch_train.autocast_dtype(bf16, cuda) == torch.bfloat16
    assert torch_train.math_dtype(bf16, cuda) == "bf16"
    assert torch_train.autocast_dtype(default, cpu) == torch.bfloat16
    case = {"framework": "pytorch", "model": "bert_base", "batch_size": [8], "layouts": ["1n1g"]}
    with pytest.raises(ConfigError, match=r"options\.cuda_amp_dtype: 'fp8' is not one of"):
        validate({"cases": [dict(case, options={"cuda_amp_dtype": "fp8"})]})


def _command(adapter, xla: bool, options: dict, precision: str = "fp32") -> list[str]:
    cell = Cell("pytorch", "bert_base", precision, xla, 2, Layout(1, 1))
    ctx = TaskContext(
        cell=cell, options=adapter.resolved_options(options), steps=3, device="cpu", rank=0,
        node_rank=0, nodes=1, gpus_per_node=1, master_addr="127.0.0.1", master_port=29500,
        run_dir=Path("/tmp"),
    )  # fmt: skip
    return adapter.command(ctx)


@pytest.mark.integration
def test_a_compiled_run_trains_and_states_its_mode(workload_runs: WorkloadRuns) -> None:
    """The xla column on a CPU: a tiny BERT through torch.compile (Inductor's C++ kernels) in
    mode reduce-overhead (CUDA graphs are a GPU's; on a CPU it compiles as default) trains its
    steps, and its config line says how it was compiled."""
    adapter = workload_runs.adapter("pytorch")
    cell = Cell("pytorch", "bert_base", "fp32", True, workload_runs.batch, Layout(1, 1))
    options = adapter.tiny["bert_base"] | {"compile_mode": "reduce-overhead"}
    run = workload_runs.run("pytorch", cell, options)
    run.check_ok()
    assert [r.step for r in run.records()] == list(range(1, workload_runs.steps + 1))
    assert run.config()["compile"] == "reduce-overhead"


def test_a_cuda_graphs_run_states_the_graphs_inductor_skipped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Review: a graph left out of CUDA graphs (reduce-overhead on CUDA) ran as compile's
    default mode under the CUDA-graphs cell's id; the memory line now counts them."""
    from torch._dynamo.utils import counters

    monkeypatch.setitem(counters, "inductor", counters["inductor"].copy())
    counters["inductor"]["cudagraph_skips"] = 2
    argv = ["--model", "bert_base", "--batch-size", "2", "--steps", "1", "--compile"]
    graphs = torch_train.parse_args([*argv, "--compile-mode", "reduce-overhead"])
    cuda, cpu = torch.device("cuda", 0), torch.device("cpu")
    assert torch_train.cuda_graph_fields(graphs, cuda) == {"cudagraph_skips": "2"}
    assert torch_train.cuda_graph_fields(graphs, cpu) == {}  # no CUDA graphs on a CPU
    assert torch_train.cuda_graph_fields(torch_train.parse_args(argv), cuda) == {}


@pytest.mark.parametrize("model", ["resnet50", "bert_base", "wide_deep", "insightface", "gpt"])
def test_an_overflow_step_the_grad_scaler_skips_leaves_the_optimizer_untouched(model):
    """The optimizer each recipe builds as on CUDA (fused asked): on an H100, torch 2.11's fused
    SGD wrote a momentum buffer on the skipped first steps and ResNet-50 AMP's loss went nan."""
    from dlperf.workloads.torch_models import RECIPES

    weight = nn.Parameter(torch.ones(4))
    optimizer = RECIPES[model].optimizer([weight], True)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16)
    for overflow in (True, False):
        optimizer.zero_grad(set_to_none=True)
        factor = torch.tensor([float("inf") if overflow else 1.0, 1.0, 1.0, 1.0])
        scaler.scale((weight * weight * factor).sum()).backward()
        scaler.step(optimizer)
        scaler.update()
        if overflow:
            assert weight.tolist() == [1.0] * 4
            assert "momentum_buffer" not in optimizer.state.get(weight, {})
    stock = nn.Parameter(torch.ones(4))
    reference = RECIPES[model].optimizer([stock], None)  # unfused, as on a CPU
    (stock * stock).sum().backward()
    reference.step()
    assert weight.tolist() == pytest.approx(stock.tolist())
    assert weight.tolist()[0] < 1.0  # the good step trained
