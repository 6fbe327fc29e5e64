"""GPT in the built-in workloads beyond PyTorch and Keras (issue 17): PaddleNLP's GPTForCausalLM
and LlamaForCausalLM in PaddlePaddle, MindFormers' GPT2LMHeadModel and LlamaForCausalLM in
MindSpore, and MXNet's stated reason for having none.

Each run is the adapter's own command() in the framework's own environment (conftest.WorkloadRuns;
skipped with the reason where the environment cannot be built). GPT-2 shapes are the contract's
run of the adapter's tiny configuration (fp32, xla off); Llama shapes run compiled with amp
(Paddle's to_static and bf16 autocast; MindSpore's GRAPH_MODE and float16), the path the
workloads had to work around the libraries for. Both tiny models are the ones transformers
builds from the same model_config: the same parameter count, the same FLOPs formula."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from dlperf import logline
from dlperf.adapters import get_adapter
from dlperf.flops import DecoderShape, decoder_training_flops_per_sequence
from dlperf.i18n import english
from dlperf.matrix import Cell, Layout

if TYPE_CHECKING:
    from conftest import WorkloadRun, WorkloadRuns

FRAMEWORKS = ["paddlepaddle", "mindspore_builtin"]
# The Llama counterpart of the adapters' tiny GPT-2 (2 layers, 64 wide), grouped-query attention
LLAMA: dict[str, Any] = {
    "model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
    "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 1000,
}  # fmt: skip
# The shapes dlperf.flops counts, and transformers' parameter counts of the same two models
SHAPES = {
    "gpt2": DecoderShape(2, 64, 256, 1000, heads=4, kv_heads=4),
    "llama": DecoderShape(2, 64, 128, 1000, heads=4, kv_heads=2, gated_mlp=True),
}
PARAMS = {"gpt2": "229632", "llama": "202048"}
# How each states the compiled, amp run: (config key, its value), amp_dtype
COMPILED_AMP = {
    "paddlepaddle": (("to_static", "True"), "bfloat16"),
    "mindspore_builtin": (("mode", "GRAPH_MODE"), "float16"),
}


def check_trained(run: WorkloadRun, family: str, batch: int, steps: int) -> None:
    """Steps 1..steps of `batch` samples, the family's model and the decoder formula's FLOPs."""
    run.check_ok()
    records = run.records()
    assert [r.step for r in records] == list(range(1, steps + 1)), run.tails()
    assert {r.samples for r in records} == {batch}
    config = run.config()
    assert config["model"] == "gpt" and config["params"] == PARAMS[family]
    model_config = json.loads(config["model_config"])
    assert model_config["model_type"] == family
    assert DecoderShape.from_config(model_config) == SHAPES[family]  # the library's own names
    (flops,) = run.lines(logline.FLOPS)
    seq_len = run.options["seq_len"]
    expected = decoder_training_flops_per_sequence(SHAPES[family], seq_len)
    assert flops["per_sample"] == f"{expected:.6g}" and flops["method"] == "formula_dlperf.flops"


@pytest.mark.integration
@pytest.mark.frameworks
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_gpt2_shapes_train(framework: str, workload_runs: WorkloadRuns) -> None:
    run = workload_runs.tiny(framework, "gpt")
    check_trained(run, "gpt2", workload_runs.batch, workload_runs.steps)
    assert run.config()["amp_dtype"] == "none"


@pytest.mark.integration
@pytest.mark.frameworks
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_llama_shapes_train_compiled_with_amp(framework: str, workload_runs: WorkloadRuns) -> None:
    adapter = workload_runs.adapter(framework)
    cell = Cell(framework, "gpt", "amp", True, workload_runs.batch, Layout(1, 1))
    run = workload_runs.run(framework, cell, adapter.tiny["gpt"] | {"model_config": LLAMA})
    check_trained(run, "llama", workload_runs.batch, workload_runs.steps)
    (key, compiled), amp_dtype = COMPILED_AMP[framework]
    config = run.config()
    assert (config[key], config["amp_dtype"]) == (compiled, amp_dtype)


@pytest.mark.integration
@pytest.mark.frameworks
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_gpt_model_config_typo_names_the_key(framework: str, workload_runs: WorkloadRuns) -> None:
    """A Llama key misspelt: the run stops before training, naming it (and the config it is not
    a field of), instead of training the default-sized model."""
    adapter = workload_runs.adapter(framework)
    cell = workload_runs.cell(adapter, "gpt")
    typo = {"model_config": LLAMA | {"num_hiden_layers": 1}}
    run = workload_runs.run(framework, cell, adapter.tiny["gpt"] | typo)
    text = run.text()
    assert run.exit_codes[0] != 0 and not run.lines(logline.STEP), text[-3000:]
    # each workload's own words (PaddleNLP's field check, MindSpore's model_config_problem, the
    # rule `dlperf check` applies too): the key, and the config it is no field of
    said = [
        line for line in text.splitlines() if "model_config" in line and "num_hiden_layers" in line
    ]
    assert said and all("LlamaConfig" in line for line in said), text[-3000:]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_adapter_runs_gpt_from_its_library(framework: str) -> None:
    adapter = get_adapter(framework)
    assert "gpt" in adapter.models and "gpt" not in adapter.lacks
    source = adapter.models["gpt"]
    assert "LlamaForCausalLM" in source.path and source.repo in (
        "PaddlePaddle/PaddleNLP", "mindspore-lab/mindformers",
    )  # fmt: skip
    case = {"framework": framework, "model": "gpt", "batch_size": [2], "layouts": ["1n2g"]}
    adapter.check_case(case | {"options": adapter.tiny["gpt"]})


def test_mxnet_says_why_it_has_no_gpt() -> None:
    """GluonNLP 0.10 installs no decoder-only LM; its GPT-2 is a script of the repository."""
    adapter = get_adapter("mxnet")
    assert "gpt" not in adapter.models
    assert "scripts/text_generation/model/gpt.py" in english(adapter.lacks["gpt"])


@pytest.mark.parametrize(
    ("config", "family"),
    [
        # PaddleNLP's GPTConfig.to_dict(): model_type gpt, the generic names
        (
            {"model_type": "gpt", "num_hidden_layers": 2, "hidden_size": 64,
             "num_attention_heads": 4, "intermediate_size": 256, "vocab_size": 1000},
            "gpt2",
        ),
        # MindFormers' GPT2Config: num_layers, num_heads, expand_ratio
        (
            {"model_type": "gpt2", "num_layers": 2, "hidden_size": 64, "num_heads": 4,
             "expand_ratio": 4, "vocab_size": 1000},
            "gpt2",
        ),
        # MindFormers' LlamaConfig: n_kv_heads
        (
            {"model_type": "llama", "num_layers": 2, "hidden_size": 64, "num_heads": 4,
             "n_kv_heads": 2, "intermediate_size": 128, "vocab_size": 1000},
            "llama",
        ),
    ],
)  # fmt: skip
def test_decoder_shape_reads_the_libraries_config_names(
    config: dict[str, Any], family: str
) -> None:
    assert DecoderShape.from_config(config) == SHAPES[family]
