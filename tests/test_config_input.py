"""A suite as a user types it, mistakes included: each is an error naming the file, line and key
and saying what to write, never a traceback, a silently ignored key or a job that fails later."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlperf.config import ConfigError, load

CASE = "cases:\n  - {framework: pytorch, model: resnet50, batch_size: [8], layouts: [1n1g]}\n"


def suite(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(text)
    return path


def load_error(path: Path) -> str:
    """The ConfigError loading the suite at `path` raises, in words."""
    with pytest.raises(ConfigError) as err:
        load(path)
    return str(err.value)


@pytest.mark.parametrize(
    ("batch", "says"),
    [
        (
            '"8"',
            "'8' is not a whole number of at least 1 or 'max' (write the number without quotes)",
        ),
        ("0", "0 is not a whole number of at least 1 or 'max'"),
        ("MAX", "'MAX' is not a whole number of at least 1 or 'max'"),
    ],
)
def test_a_batch_size_that_is_neither_a_number_nor_max_says_what_it_may_be(
    tmp_path: Path, batch: str, says: str
) -> None:
    """Was: "'8' is not valid under any of the given schemas", which names neither."""
    path = suite(
        tmp_path,
        "cases:\n  - framework: pytorch\n    model: resnet50\n"
        f"    batch_size: [{batch}]\n    layouts: [1n1g]\n",
    )
    error = load_error(path)
    assert f"{path}:4: cases[0].batch_size[0]: {says}" in error


@pytest.mark.parametrize(
    ("line", "says"),
    [
        (
            "exclude: [n1, n2]",
            "site.extra_args.exclude: ['n1', 'n2'] is not a string or a number or true",
        ),
        ("requeue: false", "site.extra_args.requeue: False is not a string or a number or true"),
        ("mail-type:", "site.extra_args.mail-type: None is not a string or a number or true"),
        ("--mail-type: END", "site.extra_args: '--mail-type' does not match"),
    ],
)
def test_an_extra_sbatch_option_sbatch_cannot_read_is_an_error(
    tmp_path: Path, line: str, says: str
) -> None:
    """Each became `#SBATCH --exclude='['"'"'n1'"'"', ...]'`, `--requeue=False`, `--mail-type=None`
    or `----mail-type=END` in every job's script (submitit writes str(value) and the key as
    given), lines sbatch cannot read as meant, found only at submission."""
    path = suite(tmp_path, f"backend: slurm\nsite:\n  extra_args:\n    {line}\n{CASE}")
    error = load_error(path)
    assert f"{path}:4: {says}" in error
    if line.startswith("--"):
        assert "write an sbatch option's name without its leading dashes" in error


def test_extra_sbatch_options_sbatch_reads_pass(tmp_path: Path) -> None:
    from dlperf.launch.submit import _slurm_params

    path = suite(
        tmp_path,
        "backend: slurm\nsite:\n  extra_args: {mail-type: END, exclude: 'n1,n2', nice: 10, "
        f"hold: true, mem_per_gpu: 8G}}\n{CASE}",
    )
    extra = _slurm_params(load(path)["site"])["slurm_additional_parameters"]
    assert extra == {
        "mail-type": "END", "exclude": "n1,n2", "nice": 10, "hold": True, "mem_per_gpu": "8G",
        "no-requeue": True,
    }  # fmt: skip


def test_a_layout_that_is_not_nngg_says_how_to_write_one(tmp_path: Path) -> None:
    path = suite(tmp_path, CASE.replace("[1n1g]", "[1n8g, 1n0g]"))
    error = load_error(path)
    assert (
        f"{path}:2: cases[0].layouts[1]: '1n0g' does not match '^[1-9][0-9]*n[1-9][0-9]*g$': "
        "write a layout NnGg, N nodes x G devices each, both at least 1 (e.g. 1n8g)"
    ) in error


@pytest.mark.parametrize(
    ("lines", "line", "says"),
    [
        (
            "    precision_options: {amp: {threads: 2}}\n",
            6,
            "cases[0].precision_options.amp: the case measures no amp cell (precision: ['fp32']): "
            "add amp to its precision, or remove these options",
        ),
        (
            "    max_search: {ceiling: 512}\n",
            6,
            "cases[0].max_search: the case sweeps no option to `max`, so no search uses it: "
            "`batch_size: max` is searched as max_batch_search says (set it there)",
        ),
    ],
)
def test_a_case_setting_no_cell_uses_is_an_error(
    tmp_path: Path, lines: str, line: int, says: str
) -> None:
    """Both were ignored silently: threads for amp cells of an fp32-only case, and a max_search
    meant for `batch_size: max`, whose search then probed up to max_batch_search's 4096."""
    path = suite(
        tmp_path,
        "cases:\n  - framework: pytorch\n    model: resnet50\n"
        f"    batch_size: [max]\n    layouts: [1n1g]\n{lines}",
    )
    error = load_error(path)
    assert error == f"{path}:{line}: {says}"


def test_settings_a_cell_uses_pass(tmp_path: Path) -> None:
    path = suite(
        tmp_path,
        "cases:\n  - framework: pytorch\n    model: insightface\n    precision: [fp32, amp]\n"
        "    batch_size: [8]\n    layouts: [1n1g]\n    precision_options: {amp: {threads: 2}}\n"
        "    sweep: {num_classes: [max]}\n    max_search: {start: 1000, ceiling: 4000}\n",
    )
    case = load(path)["cases"][0]
    assert case["max_search"] == {"start": 1000, "ceiling": 4000}
    assert case["precision_options"] == {"amp": {"threads": 2}}


def test_a_results_folder_given_as_a_baseline_says_it_is_a_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was "baselines[0].path: no such file '.../results' (looked in /repo, /repo)": it is there."""
    from dlperf.cli import main

    results = tmp_path / "results"
    (results / "tables").mkdir(parents=True)
    (results / "tables" / "cells.tsv").write_text("cell_id\tthroughput_median\n")
    path = suite(tmp_path, f"{CASE}baselines:\n  - {{name: old, path: {results}}}\n")
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"dlperf: baselines[0].path: {results} is a folder; give a cells or runs table (.tsv or "
        f".csv), e.g. {results / 'tables' / 'cells.tsv'}"
    )


def test_a_baseline_that_is_nowhere_names_each_place_looked_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from dlperf.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("dlperf.paths.WORKFLOW_DIR", tmp_path)
    path = suite(tmp_path, f"{CASE}baselines:\n  - {{name: old, path: old/cells.tsv}}\n")
    assert main(["check", str(path)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"dlperf: baselines[0].path: no such file 'old/cells.tsv' (looked in {tmp_path})"
    )


@pytest.mark.parametrize(
    ("framework", "model", "model_config", "says"),
    [
        ("jax", "bert_base", "{num_hidden_layer: 2}", "unknown bert_base model_config key 'num_hidden_layer'"),
        ("tensorflow", "gpt", "{model_type: llama, n_head: 4}", "unknown gpt (llama) model_config key 'n_head'"),
        ("tensorflow", "gpt", "{model_type: gpt3}", "gpt model_config.model_type: 'gpt3': expected one of gpt2, llama"),
        ("jax", "wide_deep", "{hidden_size: 8}", "model_config: hidden_size: Wide & Deep takes no model_config"),
        ("pytorch", "wide_deep", "{hidden_size: 8}", "model_config: hidden_size: Wide & Deep takes no model_config"),
        ("mxnet", "bert_base", "{units: 256}", "unknown bert_base model_config key 'units'"),
        ("mxnet", "resnet50", "{depths: [1, 1]}", "resnet50 model_config depths must be 4 numbers: [1, 1]"),
    ],
)  # fmt: skip
def test_a_model_config_key_the_workload_does_not_know_is_found_at_check_time(
    tmp_path: Path, framework: str, model: str, model_config: str, says: str
) -> None:
    """Was found only when each run started (the workload's SystemExit): every repeat of every
    cell queued, started its framework and failed. These workloads' key rules are their own
    (KerasHub's arguments, GluonNLP's names), checked without importing the framework."""
    path = suite(
        tmp_path,
        f"cases:\n  - framework: {framework}\n    model: {model}\n    xla: [true]\n"
        f"    batch_size: [8]\n    layouts: [1n1g]\n    options:\n"
        f"      model_config: {model_config}\n",
    )
    error = load_error(path)
    assert error.startswith(f"{path}:8: cases[0].options.model_config: {says}")


def test_a_model_config_the_workload_knows_passes(tmp_path: Path) -> None:
    import sys

    path = suite(
        tmp_path,
        "cases:\n  - framework: jax\n    model: gpt\n    xla: [true]\n    batch_size: [8]\n"
        "    layouts: [1n1g]\n    precision: [fp32, amp]\n"
        "    options: {model_config: {model_type: llama, num_attention_heads: 4}}\n"
        "    precision_options: {amp: {model_config: {n_layers: 2}}}\n",
    )
    with pytest.raises(ConfigError, match=r":9: cases\[0\]\.precision_options\.amp\.model_config"):
        load(path)  # the amp cells' model_config (it replaces the options' one): checked too
    path.write_text(path.read_text().replace("{n_layers: 2}", "{n_layer: 2}"))
    case = load(path)["cases"][0]
    assert case["options"]["model_config"]["model_type"] == "llama"
    assert case["precision_options"]["amp"]["model_config"] == {"n_layer": 2}
    assert not {"keras", "jax", "mxnet", "tensorflow"} & set(sys.modules)


@pytest.mark.parametrize(
    ("model", "model_config", "says"),
    [
        ("resnet50", "{depths: [1, 1, 1, 1]}", "resnet50 takes no model_config keys: ['depths']"),
        ("bert_base", "{num_hiden_layers: 1}", "unknown bert_base model_config key 'num_hiden_layers'"),
        ("gpt", "{model_type: llama, num_hiden_layers: 1}", "unknown gpt (llama) model_config key 'num_hiden_layers'"),
    ],
)  # fmt: skip
def test_mindspore_model_config_keys_are_checked_at_check_time(
    tmp_path: Path, model: str, model_config: str, says: str
) -> None:
    path = suite(
        tmp_path,
        f"cases:\n  - framework: mindspore_builtin\n    model: {model}\n    batch_size: [8]\n"
        f"    layouts: [1n1g]\n    options:\n      model_config: {model_config}\n",
    )
    error = load_error(path)
    assert error.startswith(f"{path}:7: cases[0].options.model_config: {says}")


@pytest.mark.parametrize(
    ("text", "line", "where"),
    [
        ("site: &s\n  partition: *s\n", 2, "site.partition"),
        ("name: x\nreport: &r\n  footnotes: [1, *r]\n", 3, "report.footnotes[1]"),
        ("cases:\n  - &c {framework: pytorch, options: {model_config: *c}}\n", 2,
         "cases[0].options.model_config"),
    ],
)  # fmt: skip
def test_an_alias_of_a_node_that_holds_it_names_its_line(
    tmp_path: Path, text: str, line: int, where: str
) -> None:
    """Was a RecursionError traceback (config._check_finite followed the value into itself)."""
    path = suite(tmp_path, text)
    assert load_error(path) == (
        f"{path}:{line}: {where}: an alias of a mapping or list that holds it (its value would "
        "never end): write the value out, or alias another node"
    )


def test_an_alias_repeated_beside_itself_is_no_loop(tmp_path: Path) -> None:
    case = "{framework: pytorch, model: resnet50, batch_size: [8], layouts: [1n1g]}"
    path = suite(tmp_path, f"site: {{env: &e {{A: b}}}}\ncases:\n  - {case}\nx: *e\n")
    assert "x" in load_error(path)  # the schema's unknown key, not a loop
    site = "site: {setup: &s [echo], container: {image: x, mounts: *s}}"
    path = suite(tmp_path, f"{site}\ncases:\n  - {case}\n")
    assert load(path)["site"]["container"]["mounts"] == ["echo"]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (
            f"name: 'my suite!'\n{CASE}",
            ":1: name: 'my suite!' does not match '^[A-Za-z0-9_. -]+$': write letters, digits, "
            "spaces and _ . - only (e.g. dlperf-embedded)",
        ),
        (
            CASE.replace("}", ", variant: No-Clip}"),
            ":2: cases[0].variant: 'No-Clip' does not match '^[a-z0-9_]+$': write lower-case "
            "letters, digits and _ only (e.g. noclip); it is part of the cell id",
        ),
    ],
)
def test_a_name_or_variant_with_other_characters_says_which_it_may_have(
    tmp_path: Path, text: str, says: str
) -> None:
    """Was "write Short name of the suite, shown in the report title." and "write A named
    variation that changes what is measured (...)": the key's description, not what to write."""
    path = suite(tmp_path, text)
    assert f"{path}{says}" in load_error(path)


def test_a_repeat_count_no_campaign_could_run_is_an_error_naming_its_key(tmp_path):
    """Review: repeats: 99999999999999999999999 passed the schema and `dlperf plan` hung
    scheduling it."""
    path = tmp_path / "suite.yaml"
    case = "cases: [{framework: pytorch, model: resnet50, batch_size: [8], layouts: [1n1g]}]\n"
    path.write_text("repeats: 99999999999999999999999\n" + case)
    assert (
        "suite.yaml:1: repeats: 99999999999999999999999 is greater than the maximum of 1000"
        in load_error(path)
    )
    path.write_text("adaptive_repeats: {max: 5000, ci_width_pct: 2}\n" + case)
    assert "adaptive_repeats.max: 5000 is greater than the maximum of 1000" in load_error(path)


@pytest.mark.parametrize("framework", ["pytorch", "tensorflow", "mxnet"])
def test_a_built_in_max_batch_size_for_a_model_that_is_not_one_is_refused(
    tmp_path: Path, framework: str
) -> None:
    """Review: a built-in adapter's max_batch_size took any key, so `{resnet5: 128}` (for
    resnet50) passed check and silently replaced the whole table (options merge by key): the
    plan's estimate of the `max` cell then fell back to no batch at all, the typo unsaid."""
    path = suite(
        tmp_path,
        f"cases:\n  - framework: {framework}\n    model: resnet50\n    batch_size: [max]\n"
        "    layouts: [1n1g]\n    options:\n      max_batch_size: {resnet5: 128}\n",
    )
    assert load_error(path) == (
        f"{path}:7: cases[0].options.max_batch_size: 'resnet5' is not one of "
        "['resnet50', 'bert_base', 'wide_deep', 'insightface', 'gpt']"
    )
    path.write_text(path.read_text().replace("resnet5:", "resnet50:"))
    assert load(path)["cases"][0]["options"]["max_batch_size"] == {"resnet50": 128}
