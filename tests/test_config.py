"""Config validation: defaults filled, every error names the key (and file line for YAML)."""

from __future__ import annotations

import copy
import re

import pytest
import yaml

from dlperf.config import ConfigError, Suite, load, validate


def minimal() -> dict:
    return {
        "cases": [
            {"framework": "pytorch", "model": "resnet50", "batch_size": [8], "layouts": ["1n1g"]}
        ]
    }


def test_defaults_are_filled():
    config = validate(minimal())
    assert config["repeats"] == 7
    assert config["window"] == {"warmup": 20, "measure": 100}
    assert config["backend"] == "local"
    assert config["cases"][0]["precision"] == ["fp32"]
    assert config["cases"][0]["xla"] == [False]
    assert config["site"]["gpus_per_node_max"] == 8


def test_default_suite_is_valid(root):
    config = load(root / "config" / "config.yaml")
    cells = Suite(config).cell_specs()
    assert {str(s.cell.layout) for s in cells} == {"1n1g", "1n2g"}
    assert {s.cell.model for s in cells} == {"resnet50", "bert_base"}


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda c: c.update(repeats=0), "repeats: 0 is less than the minimum of 1"),
        (
            lambda c: c.update(windw={}),
            "Additional properties are not allowed ('windw' was unexpected) (not a known key",
        ),
        (
            lambda c: c["cases"][0].update(precision=["fp16"]),
            "cases[0].precision[0]: 'fp16' is not one of ['fp32', 'amp']",
        ),
        (
            lambda c: c["cases"][0].update(layouts=["8g"]),
            "cases[0].layouts[0]: '8g' does not match",
        ),
        (
            lambda c: c["cases"][0].update(framework="caffe"),
            "cases[0].framework: 'caffe' is not one of",
        ),
        (
            lambda c: c["cases"][0].update(options={"imag_size": 3}),
            "cases[0].options.imag_size: unknown option of pytorch",
        ),
        (lambda c: c["cases"][0].update(batch_size=["huge"]), "cases[0].batch_size[0]"),
        # issue 20.11: values that passed the schema
        (lambda c: c.update(time_limit_min=float("inf")), "time_limit_min: inf is not a finite"),
        (lambda c: c.update(time_limit_min=float("nan")), "time_limit_min: nan is not a finite"),
        (
            lambda c: c["cases"][0].update(options={"calibrate_s": float("nan")}),
            "cases[0].options.calibrate_s: nan is not a finite number",
        ),
        (lambda c: c.update(report={"languages": []}), "report.languages: [] should be non-empty"),
    ],
)
def test_errors_name_the_key(mutate, message):
    config = minimal()
    mutate(config)
    with pytest.raises(ConfigError) as err:
        validate(config, "suite.yaml")
    assert message in str(err.value)
    assert "suite.yaml" in str(err.value)


def test_yaml_syntax_error_names_file_and_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("repeats: 3\ncases:\n  - framework: pytorch\n   model: [\n")
    with pytest.raises(ConfigError, match=r"bad.yaml:4: not valid YAML"):
        load(path)


def test_duplicate_cell_names_both_cases():
    config = minimal()
    config["cases"].append(dict(config["cases"][0]))
    with pytest.raises(ConfigError, match=r"cases\[0\] and cases\[1\]: .* `variant`"):
        validate(config)
    config["cases"][1]["variant"] = "current"  # e.g. the same cell at another release
    ids = [spec.id for spec in Suite(validate(config)).cell_specs()]
    assert ids == [
        "pytorch.resnet50.fp32.noxla.b8.1n1g",
        "pytorch.resnet50.fp32.noxla.b8-current.1n1g",
    ]


def test_a_release_beside_the_v1_pin_is_named_by_its_variant():
    """What the duplicate-cell error (and the README) advise for an upstream source, whose
    releases are the reason to measure one cell twice: the v1.0 pin's case, and `variant: current`
    beside `options: {release: current}`. A variant naming no release the case runs stays refused."""
    pinned = {"framework": "ngc_pytorch", "model": "bert_base", "batch_size": [96]}
    pinned["layouts"] = ["1n8g"]
    current = pinned | {"variant": "current", "options": {"release": "current"}}
    config = {"backend": "slurm", "cases": [pinned, current]}
    with pytest.raises(ConfigError, match=r"cases\[0\] and cases\[1\]: .* `variant: current`"):
        validate({"backend": "slurm", "cases": [pinned, pinned | {"options": current["options"]}]})
    ids = [spec.id for spec in Suite(validate(config)).cell_specs()]
    assert ids == [
        "ngc_pytorch.bert_base.fp32.noxla.b96.1n8g",
        "ngc_pytorch.bert_base.fp32.noxla.b96-current.1n8g",
    ]
    with pytest.raises(ConfigError, match=r"cases\[0\]\.variant: .* not 'current'"):
        validate({"backend": "slurm", "cases": [pinned | {"variant": "current"}]})


def test_schema_framework_enum_matches_registry(root):
    from dlperf.adapters import REGISTRY
    from dlperf.schemacheck import schema

    assert schema()["$defs"]["case"]["properties"]["framework"]["enum"] == list(REGISTRY)


def test_a_default_is_read_from_the_schema_that_fills_it(root):
    """Issue 16: code handed an unvalidated dict reads a default from the schema, the one owner;
    it is the value validation fills in, through the site's $ref too."""
    from dlperf.defaults import suite_default

    filled = validate(minimal())
    assert suite_default("variance", "max_cv_pct") == filled["variance"]["max_cv_pct"] == 5
    assert suite_default("site", "environments", "root") == ".dlperf/envs"
    assert suite_default("site", "nodes") == filled["site"]["nodes"] == 0
    assert suite_default("cases", "precision") == filled["cases"][0]["precision"] == ["fp32"]
    with pytest.raises(KeyError, match="adaptive_repeats.max no default"):
        suite_default("adaptive_repeats", "max")
    with pytest.raises(KeyError, match="no key variance.max_cv\\b"):
        suite_default("variance", "max_cv")


# --- errors say where: the file and line, or --config, and the key ------------------------------


def write(path, text):
    path.write_text(text)
    return path


SUITE_TEXT = """\
name: mine
cases:
  - framework: pytorch
    model: resnet50
    batch_size: [8]
    layouts: [1n1g]
    options:
      threads: {threads}
"""


def test_error_names_the_file_and_line_of_the_key(tmp_path):
    path = write(tmp_path / "mine.yaml", SUITE_TEXT.format(threads="abc"))
    with pytest.raises(ConfigError) as err:
        load(path)
    assert f"{path}:8: cases[0].options.threads: 'abc' is not of type 'integer'" in str(err.value)


def test_error_in_a_later_layer_names_that_layer(tmp_path):
    from dlperf.config import snakemake_config

    suite = write(tmp_path / "mine.yaml", SUITE_TEXT.format(threads=1))
    site = write(tmp_path / "site.yaml", "backend: slurm\nsite:\n  nodes_max: 0\n")
    with pytest.raises(ConfigError, match=rf"{site}:3: site.nodes_max: 0 is less than"):
        snakemake_config({"suite": str(suite)}, [site], {"suite": str(suite)})
    with pytest.raises(ConfigError, match=r"--config: repeats: 0 is less than the minimum"):
        snakemake_config({"suite": str(suite), "repeats": 0}, [], {"suite": "x", "repeats": 0})


def test_every_option_has_a_declared_type_checked_before_anything_runs():
    config = minimal()
    config["cases"][0]["options"] = {"threads": "abc"}
    with pytest.raises(ConfigError, match=r"cases\[0\]\.options\.threads: 'abc' is not of type"):
        validate(config)
    config["cases"][0]["options"] = {"memory_limit_gb": 2.5, "amp_on_cpu": "run"}
    validate(config)
    config["cases"][0]["options"] = {"amp_on_cpu": "always"}
    with pytest.raises(ConfigError, match=r"options\.amp_on_cpu: 'always' is not one of"):
        validate(config)


def test_a_newline_cannot_end_an_id_part():
    """Python's `$` matches before a final newline; the schema's patterns mean the end (ECMA)."""
    config = minimal()
    config["cases"][0]["variant"] = "noclip\n"
    with pytest.raises(ConfigError, match=r"cases\[0\]\.variant: 'noclip\\n' does not match"):
        validate(config)
    config["cases"][0]["layouts"] = ["1n1g\n"]
    config["cases"][0]["variant"] = "noclip"
    with pytest.raises(ConfigError, match=r"cases\[0\]\.layouts\[0\]"):
        validate(config)


# --- one plan for one file -------------------------------------------------------------------


def test_a_suite_is_what_the_user_wrote_plus_the_schema_defaults(tmp_path, root):
    """The default suite (repeats: 3) is never merged under a suite of the user's own."""
    from dlperf.config import snakemake_config

    suite = write(tmp_path / "mine.yaml", SUITE_TEXT.format(threads=1))
    checked = load(suite)
    for given in (
        snakemake_config({"suite": str(suite)}, [], {"suite": str(suite)}, [root]),
        snakemake_config(yaml.safe_load(suite.read_text()), [suite], {}, [root]),
    ):
        assert given == checked
        assert given["repeats"] == 7 and len(given["cases"]) == 1
    default = snakemake_config({}, [], {}, [root])
    assert default == load(root / "config/config.yaml") and default["repeats"] == 3


def test_an_empty_suite_setting_is_an_error_not_the_default_suite(tmp_path):
    """Issue 20.11: `--config suite=` ran the default suite."""
    from dlperf.config import snakemake_config

    with pytest.raises(ConfigError, match="suite= names no file"):
        snakemake_config({"suite": ""}, [], {"suite": ""}, search=[tmp_path])


@pytest.mark.parametrize(
    "argv, message",
    [
        (["diff", "a", "b", "--alpha", "2"], "--alpha: 2 must be between 0 and 1"),
        (["diff", "a", "b", "--threshold", "-1"], "--threshold: -1 is below 0"),
        (["diff", "a", "b", "--threshold", "nan"], "--threshold: 'nan' is not a finite number"),
        (
            ["plan", "s.yaml", "--results", "/nonexistent"],
            "--results: /nonexistent: no such folder",
        ),
        (["plan", "s.yaml", "--time-limit-s", "-5"], "--time-limit-s: -5 must be above 0"),
    ],
)
def test_cli_refuses_out_of_range_arguments_with_exit_2(argv, message, capsys):
    from dlperf.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_run_cell_takes_its_repeat_from_the_manifest_folder_and_refuses_another(tmp_path, capsys):
    """The manifest path names the cell and the repeat (dlperf.paths): no second copy of either."""
    from dlperf.cli import main

    argv = ["run-cell", "--measure", "{}", "--harness", "{}", "--manifest"]
    assert main([*argv, str(tmp_path / "manifest.json")]) == 2
    assert f"{tmp_path / 'manifest.json'}: not in a run's folder" in capsys.readouterr().err


def test_a_binary_suite_or_table_is_an_error_naming_the_file(tmp_path, capsys):
    """Issue 20.9: `check`, `plan` and `report` ended in a traceback on a binary file."""
    from dlperf.cli import main

    noise = tmp_path / "noise.yaml"
    noise.write_bytes(bytes(range(128, 256)) * 8)
    table = tmp_path / "noise.tsv"
    table.write_bytes(noise.read_bytes())
    for argv in (["check", str(noise)], ["plan", str(noise)]):
        assert main(argv) == 2
        assert f"{noise}: not a text file" in capsys.readouterr().err
    assert main(["report", str(table), "--out", str(tmp_path / "out")]) == 2
    assert f"{table}: not a readable table" in capsys.readouterr().err


# --- a key given twice is an error, not the last one silently ----------------------------------

DUPLICATE_SUITE = """\
repeats: 2
cases:
  - framework: pytorch
    model: resnet50
    batch_size: [8]
    layouts: [1n1g]
{more}"""


@pytest.mark.parametrize(
    ("more", "message"),
    [
        # a second case list dropped the first
        (
            "cases:\n  - {framework: pytorch, model: bert_base, batch_size: [4], layouts: [1n1g]}\n",
            "dup.yaml:7: cases: duplicate key 'cases' (first at line 2)",
        ),
        ("repeats: 5\n", "dup.yaml:7: repeats: duplicate key 'repeats' (first at line 1)"),
        (
            "window: {measure: 5, measure: 1}\n",
            "dup.yaml:7: window.measure: duplicate key 'measure' (first at line 7)",
        ),
        (
            "    options: {threads: 1}\n    options: {threads: 2}\n",
            "dup.yaml:8: cases[0].options: duplicate key 'options' (first at line 7)",
        ),
    ],
)
def test_a_duplicate_key_names_the_file_both_lines_and_the_key(tmp_path, more, message):
    path = write(tmp_path / "dup.yaml", DUPLICATE_SUITE.format(more=more))
    with pytest.raises(ConfigError) as err:
        load(path)
    assert f"{tmp_path}/{message}" in str(err.value)


def test_every_yaml_dlperf_reads_refuses_a_duplicate_key(tmp_path, capsys):
    """The suite, a site file merged over it (`dlperf check SUITE SITE`, Snakemake's
    --configfile), `--config suite=FILE`, `dlperf plan` and `dlperf gpu-proof --suite` all read
    YAML with one loader."""
    from dlperf.cli import main
    from dlperf.config import snakemake_config

    suite = write(tmp_path / "mine.yaml", DUPLICATE_SUITE.format(more=""))
    site = write(tmp_path / "site.yaml", "backend: slurm\nsite:\n  qos: a\n  qos: b\n")
    message = f"{site}:4: site.qos: duplicate key 'qos' (first at line 3)"
    assert main(["check", str(suite), str(site)]) == 2
    assert message in capsys.readouterr().err
    for files in ([site], [suite, site]):
        with pytest.raises(ConfigError, match=re.escape(message)):
            snakemake_config({}, files, {}, [tmp_path])
    dup = write(tmp_path / "dup.yaml", DUPLICATE_SUITE.format(more="repeats: 5\n"))
    with pytest.raises(ConfigError, match=re.escape(f"{dup}:7: repeats: duplicate key")):
        snakemake_config({"suite": str(dup)}, [], {"suite": str(dup)}, [tmp_path])
    assert main(["plan", str(dup)]) == 2
    assert f"{dup}:7: repeats: duplicate key 'repeats' (first at line 1)" in capsys.readouterr().err
    work = ["--out", str(tmp_path / "out"), "--work", str(tmp_path / "work")]
    assert main(["gpu-proof", "--suite", str(dup), *work]) == 2
    assert f"{dup}:7: repeats: duplicate key" in capsys.readouterr().err


def test_yaml_merge_keys_and_aliases_are_not_duplicates(tmp_path):
    """An override beside `<<: *anchor` is YAML's way to change one key of a shared block."""
    path = write(
        tmp_path / "anchors.yaml",
        "cases:\n"
        "  - &base {framework: pytorch, model: resnet50, batch_size: [8], layouts: [1n1g]}\n"
        "  - <<: *base\n"
        "    batch_size: [16]\n",
    )
    config = load(path)
    assert [c["batch_size"] for c in config["cases"]] == [[8], [16]]


# --- a cell id is a file name: it must fit one, with what dlperf adds to it ---------------------

LONG_SUITE = """\
max_batch_search: {{ceiling: {ceiling}}}
cases:
  - framework: pytorch
    model: {model}
    batch_size: [{batch}]
    layouts: [1n1g]
{more}"""


def long_suite(tmp_path, more, model="resnet50", batch="8", ceiling=4096):
    text = LONG_SUITE.format(more=more, model=model, batch=batch, ceiling=ceiling)
    return write(tmp_path / "long.yaml", text)


def test_a_variant_too_long_for_a_file_name_names_the_file_line_key_and_limit(tmp_path, capsys):
    """It passed `dlperf check`, then Snakemake failed: OSError [Errno 36] File name too long."""
    from dlperf.cli import main

    path = long_suite(tmp_path, f"    variant: {'v' * 300}\n")
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:7: cases[0].variant: cell id 'pytorch.resnet50.fp32.noxla.b8-vvv" in err
    assert "is 336 bytes" in err and "at most 255 bytes, so it may be at most 250" in err
    assert "shorten the variant" in err


def test_the_longest_cell_id_that_fits_is_250_bytes():
    from dlperf.config import CELL_ID_MAX

    config = minimal()
    fixed = len("pytorch.resnet50.fp32.noxla.b8-.1n1g")
    config["cases"][0]["variant"] = "v" * (CELL_ID_MAX - fixed)
    (spec,) = Suite(validate(copy.deepcopy(config))).cell_specs()
    assert len(spec.id) == CELL_ID_MAX == 250
    config["cases"][0]["variant"] += "v"
    with pytest.raises(ConfigError, match=r"cases\[0\]\.variant: cell id .* is 251 bytes"):
        validate(config, "suite.yaml")


def test_a_swept_value_too_long_for_a_file_name_names_the_sweep_key(tmp_path):
    path = long_suite(
        tmp_path, f"    sweep:\n      vocab_size: [3200000, {'9' * 240}]\n", "wide_deep"
    )
    with pytest.raises(ConfigError) as err:
        load(path)
    assert f"{path}:8: cases[0].sweep.vocab_size: cell id 'pytorch.wide_deep" in str(err.value)
    assert "at most 250: shorten the sweep.vocab_size" in str(err.value)


@pytest.mark.parametrize(
    ("more", "model", "batch", "probe"),
    [  # the id fits; its probe at the search's ceiling (max -> 1000000000) would not
        ("    variant: {v}\n", "resnet50", "max", "b1000000000-vvv"),
        (
            "    variant: {v}\n    sweep: {{num_classes: [max]}}\n"
            "    max_search: {{ceiling: 1000000000}}\n",
            "insightface",
            "8",
            "num_classes_1000000000.1n1g",
        ),
    ],
)
def test_a_max_cells_probe_ids_must_fit_a_file_name_too(tmp_path, more, model, batch, probe):
    fixed = len(f"pytorch.{model}.fp32.noxla.b{batch}-.1n1g")
    swept = len("_num_classes_max") if "sweep" in more else 0
    variant = "v" * (250 - fixed - swept)  # the cell id itself is 250 bytes
    path = long_suite(tmp_path, more.format(v=variant), model, batch, 1_000_000_000)
    with pytest.raises(ConfigError) as err:
        load(path)
    message = str(err.value)
    assert f"{path}:7: cases[0].variant: cell id" in message
    assert "(its probe cell '" in message and probe in message
    assert "is 257 bytes" in message and "at most 250" in message
    assert "shorten the variant (or lower the search's ceiling)" in message


def test_a_cell_named_twice_by_one_case_says_why():
    """Two sweep values that give one id part, or a value repeated in a list: the error says
    which, not "comes from both cases[0] and cases[0]"."""
    case = {"framework": "ngc_pytorch", "model": "resnet50", "batch_size": [8], "layouts": ["1n1g"]}
    swept = dict(case, sweep={"python": ["pythön3", "pythén3"]})
    with pytest.raises(ConfigError, match=r"cases\[0\]\.sweep: \{'python': 'pythön3'\} and "):
        validate({"cases": [swept]})
    twice = dict(case, layouts=["1n1g", "1n1g"])
    with pytest.raises(ConfigError, match=r"cases\[0\]\.layouts: names the cell .*1n1g twice"):
        validate({"cases": [twice]})
    with pytest.raises(ConfigError, match=r"comes from both cases\[0\] and cases\[1\]"):
        validate({"cases": [case, case]})


def test_a_cell_named_twice_names_the_file_and_line(tmp_path):
    """Review: the duplicate-cell errors named no file or line, and not the list at fault."""
    path = write(
        tmp_path / "s.yaml",
        "cases:\n  - framework: pytorch\n    model: resnet50\n    batch_size: [8]\n"
        "    layouts: [1n1g, 1n2g, 1n1g]\n",
    )
    with pytest.raises(ConfigError, match=rf"^{path}:5: cases\[0\]\.layouts: names the cell "):
        load(path)


def test_check_places_every_cell_as_the_workflow_would(tmp_path, capsys):
    """Review: `dlperf check` accepted layouts no run could get (2n1g on the local backend,
    99999999999999999999n1g on a site of 64 nodes); every run then failed at submission. It
    places the cells as the workflow does, on the backend the files give."""
    from dlperf.cli import main

    case = "cases:\n  - {{framework: pytorch, model: resnet50, batch_size: [8], layouts: [{}]}}\n"
    local = write(tmp_path / "local.yaml", "device: cpu\n" + case.format("2n1g"))
    assert main(["check", str(local)]) == 2
    assert f"dlperf: {local}: cell pytorch.resnet50.fp32.noxla.b8.2n1g: layout 2n1g spans 2 " in (
        capsys.readouterr().err
    )
    huge = write(tmp_path / "huge.yaml", case.format("99999999999999999999n1g"))
    site = write(tmp_path / "site.yaml", "backend: slurm\n")
    assert main(["check", str(huge), str(site)]) == 2
    assert "needs 99999999999999999999 nodes; site.nodes_max is 64" in capsys.readouterr().err
    fits = write(tmp_path / "fits.yaml", case.format("4n8g"))
    assert main(["check", str(fits), str(site)]) == 0
    assert "1 cells x 7 repeats = 7 runs (4n8g: 7)" in capsys.readouterr().out
    # review: wider than the campaign's nodes (dlperf plan refused it, the workflow ran it)
    two = write(tmp_path / "two.yaml", "backend: slurm\nsite: {nodes: 2}\n")
    assert main(["check", str(fits), str(two)]) == 2
    assert "layout 4n8g needs 4 nodes; site.nodes is 2" in capsys.readouterr().err
    # gpus_per_node_max 0: no limit (it refused every layout, even on a CPU partition)
    cpu = write(
        tmp_path / "cpu.yaml", "backend: slurm\nsite: {gpus_per_node_max: 0, request_gpus: false}\n"
    )
    assert main(["check", str(fits), str(cpu)]) == 0


def _noclip_suite(tmp_path, **more):
    case = {"framework": "pytorch", "model": "bert_base", "batch_size": [8], "layouts": ["1n1g"]}
    case |= {"variant": "noclip", **more}
    return load(write(tmp_path / "noclip.yaml", yaml.safe_dump({"cases": [case]})))


def test_a_noclip_case_trains_without_clipping_swept_or_not_and_its_record_says_so(tmp_path):
    """Review: `variant: noclip` with a sweep (cell variant noclip_seq_len_64) trained with
    --clip-grad-norm 1.0 under a noclip id, and even a plain noclip run's measure recorded 1.0
    while it ran 0. The variant's option is the cell's: in its command and in its record."""
    from dlperf.adapters import TaskContext, get_adapter
    from dlperf.launch.measured import measure_of

    config = _noclip_suite(tmp_path, sweep={"seq_len": [64, 128]})
    adapter = get_adapter("pytorch")
    for spec in Suite(config).cell_specs():
        assert spec.cell.variant.startswith("noclip_seq_len_")
        assert measure_of(spec, config)["options"]["clip_grad_norm"] == 0
        options = adapter.resolved_options(spec.options)
        ctx = TaskContext(spec.cell, options, 10, "cpu", 0, 0, 1, 1, "127.0.0.1", 1, tmp_path)
        command = adapter.command(ctx)
        assert command[command.index("--clip-grad-norm") + 1] == "0"
    (plain,) = Suite(_noclip_suite(tmp_path)).cell_specs()
    assert measure_of(plain, _noclip_suite(tmp_path))["options"]["clip_grad_norm"] == 0


@pytest.mark.parametrize(
    "more, message",
    [
        (
            {"options": {"clip_grad_norm": 1.0}},
            "options.clip_grad_norm: variant noclip sets it to 0",
        ),
        (
            {"precision_options": {"fp32": {"seq_len": 64}}, "sweep": {"seq_len": [64, 128]}},
            "sweep.seq_len: also set in precision_options.fp32; sweep it or set it, not both",
        ),
    ],
)
def test_an_option_the_variant_or_a_sweep_also_sets_is_an_error(tmp_path, more, message):
    """Review: a precision_options key also swept was dropped silently (the sweep won)."""
    with pytest.raises(ConfigError, match=re.escape(message)):
        _noclip_suite(tmp_path, **more)


def test_an_extra_sbatch_option_dlperf_sets_itself_is_refused(tmp_path, capsys):
    """Review: site.extra_args {time: "00:05:00", gpus-per-node: 2} passed, and submitit let them
    replace the job's --time (limit + 5 min) and its allocation, which the plan and the records
    assume."""
    from dlperf.cli import main

    suite = write(
        tmp_path / "s.yaml",
        "cases:\n  - {framework: pytorch, model: resnet50, batch_size: [8], layouts: [1n8g]}\n",
    )
    for key, why in (
        ("time", "dlperf sets it from the layout and time_limit_min"),
        ("gpus_per_node", "dlperf sets it from the layout and time_limit_min"),
        ("mem", "set site.mem_gb"),
        ("qos", "set site.qos"),
    ):
        site = write(tmp_path / "site.yaml", f"backend: slurm\nsite:\n  extra_args: {{{key}: x}}\n")
        assert main(["check", str(suite), str(site)]) == 2
        assert f"site.extra_args.{key}: not an extra option: {why}" in capsys.readouterr().err
    site = write(
        tmp_path / "site.yaml",
        "backend: slurm\nsite:\n  extra_args: {reservation: r, requeue: true}\n",
    )
    assert main(["check", str(suite), str(site)]) == 0


def test_a_site_interpreter_for_no_framework_is_an_error_naming_it(tmp_path):
    """Review: `environments.python: {pytorhc: ...}` passed, and dlperf built its own
    environment for pytorch, ignoring the site's interpreter without a word."""
    path = write(
        tmp_path / "s.yaml",
        "cases:\n  - {framework: pytorch, model: resnet50, batch_size: [8], layouts: [1n1g]}\n"
        "site:\n  environments:\n    python: {pytorhc: /opt/py/bin/python}\n",
    )
    with pytest.raises(
        ConfigError, match=rf"{path}:5: site.environments.python: 'pytorhc' is not one of"
    ):
        load(path)


def test_cases_in_two_files_are_an_error_naming_both(tmp_path):
    """Review: `--configfile A.yaml B.yaml` with cases in both planned B's cells alone, and A's
    vanished without a word (lists are replaced when files are merged)."""
    case = "cases:\n  - {framework: pytorch, model: resnet50, batch_size: [8], layouts: [1n1g]}\n"
    a, b = write(tmp_path / "a.yaml", case), write(tmp_path / "b.yaml", "repeats: 2\n" + case)
    with pytest.raises(ConfigError, match=rf"^{b}:2: cases: {a}:1 has cases too"):
        load(a, b)


def test_an_option_search_that_inherits_a_ceiling_below_its_start_is_refused(tmp_path):
    """Review: an InsightFace case's max_search {start: 100000} took max_batch_search's ceiling
    (4096, a batch size's): one probe, reported as '≥ 100,000'."""
    case = (
        "name: t\ncases:\n  - framework: pytorch\n    model: insightface\n    batch_size: [8]\n"
        "    layouts: [1n1g]\n    sweep: {num_classes: [max]}\n"
        "    max_search: {start: 100000, granularity: 100000}\n"
    )
    path = write(tmp_path / "face.yaml", case)
    with pytest.raises(ConfigError) as err:
        load(path)
    assert f"{path}:8: cases[0].max_search: ceiling 4096 (max_batch_search's: give the " in str(
        err.value
    )
    write(path, case.replace("granularity: 100000", "granularity: 100000, ceiling: 800000"))
    assert load(path)["cases"][0]["max_search"]["ceiling"] == 800000


@pytest.mark.parametrize(
    ("lines", "line", "key", "value"),
    [
        ("    batch_size: [16.0]\n", 5, r"batch_size\[0\]", "16.0"),
        ("    batch_size: [16]\n    sweep: {num_classes: [max]}\n"
         "    max_search: {ceiling: 6.4e+7}\n", 7, r"max_search\.ceiling", "64000000.0"),
        ("    batch_size: [16]\n    sweep: {vocab_size: [1000, 3.2e+6]}\n", 6,
         r"sweep\.vocab_size", "3200000.0"),
        ("    batch_size: [16]\n    options: {hidden_size: 64.0}\n", 6, r"options\.hidden_size",
         "64.0"),
    ],
)  # fmt: skip
def test_an_integer_written_with_a_fraction_names_its_key(tmp_path, lines, line, key, value):
    """Review: JSON Schema's integer accepts 2000.0 (YAML's 6.4e+7 is one). A batch of 16.0 made
    the cell id b16.0 (no cell id: no rule matched it); a swept 3.2e+6 the id vocab_size_3200000p0
    and the workload's --vocab-size 3200000.0, which argparse refused: every run failed; a search
    ceiling of 6.4e+7 probed num_classes 64000000.0, failed, and ended the search."""
    model = "insightface" if "num_classes" in lines else "wide_deep"
    text = f"cases:\n  - framework: pytorch\n    model: {model}\n    layouts: [1n1g]\n{lines}"
    path = write(tmp_path / "s.yaml", text)
    with pytest.raises(ConfigError, match=rf"{path}:{line}: cases\[0\]\.{key}: {value} is not"):
        load(path)


def test_shipped_files_name_a_slurm_suite_by_config_suite(root):
    """`snakemake --profile slurm --configfile SUITE` runs SUITE without the site: a --configfile on
    the command line replaces the profile's `configfiles` (slurm/site.yaml), so backend is local
    (config/dlperf_v1.yaml's own comment said to run it so, and failed: 'this machine has 0 GPUs
    for the local backend ... use --profile slurm'). What the shipped files advise must work."""
    shipped = [*root.glob("config/*.yaml"), *root.glob("slurm/*.yaml"), *root.glob("docs/*.md")]
    advised = [
        f"{path.relative_to(root)}:{number}"
        for path in shipped
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if "--profile slurm" in line and "--configfile" in line
    ]
    assert advised == []
    for name in ("dlperf_v1", "dlperf_v1_special"):
        text = (root / "config" / f"{name}.yaml").read_text()
        assert f"snakemake --profile slurm --config suite=config/{name}.yaml" in text
        assert f"dlperf check config/{name}.yaml slurm/site.yaml" in text
