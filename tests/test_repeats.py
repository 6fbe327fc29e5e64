"""Adaptive repeats: the decision after k runs of a cell (dlperf.measure.repeats.decide)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_tables import WINDOW, rank_log, write_run

from dlperf.config import load
from dlperf.errors import ConfigError
from dlperf.measure.decision import wants_more
from dlperf.measure.repeats import adaptive_manifests, decide
from dlperf.paths import RunPaths

CELL_ID = "pytorch.resnet50.fp32.noxla.b4.1n2g"


def runs(tmp_path, seconds):
    """Runs of two ranks x 4 samples per step: throughput 8 / s each."""
    return [
        write_run(
            tmp_path,
            {"rank0.log": rank_log(0, step_s=s), "rank1.log": rank_log(1, step_s=s)},
            repeat=k,
        )
        for k, s in enumerate(seconds, 1)
    ]


def test_more_while_the_median_ci_is_wider_than_the_target(tmp_path):
    manifests = runs(tmp_path, [8 / 100, 8 / 110, 8 / 90])  # 100, 110, 90 samples/s
    # n = 3 at level 0.5: order statistics 1 and 3 -> (90, 110), coverage 0.75; width 20 %
    wide = decide(CELL_ID, manifests, WINDOW, {"max": 5, "ci_width_pct": 10, "level": 0.5})
    assert wide.more and wide.runs == 3 and wide.ok_runs == 3
    assert wide.rel_ci_width == pytest.approx(0.2, rel=1e-4)
    assert wide.ci_level == pytest.approx(0.75)
    assert "CI width 20.00% of the median > target 10.00%" == wide.reason
    narrow = decide(CELL_ID, manifests, WINDOW, {"max": 5, "ci_width_pct": 25, "level": 0.5})
    assert not narrow.more and "<= target 25.00%" in narrow.reason


def test_never_beyond_max_and_never_for_a_cell_without_ok_runs(tmp_path):
    manifests = runs(tmp_path, [8 / 100, 8 / 110, 8 / 90])
    capped = decide(CELL_ID, manifests, WINDOW, {"max": 3, "ci_width_pct": 1, "level": 0.5})
    assert not capped.more and "the most adaptive_repeats.max allows" in capped.reason
    for manifest in manifests:
        data = json.loads(manifest.read_text()) | {"status": "oom"}
        manifest.write_text(json.dumps(data))
    none_ok = decide(CELL_ID, manifests, WINDOW, {"max": 9, "ci_width_pct": 1})
    assert not none_ok.more and none_ok.ok_runs == 0 and "no ok run" in none_ok.reason


def test_max_below_repeats_is_a_config_error_naming_the_key(tmp_path):
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "repeats: 5\nadaptive_repeats: {max: 3, ci_width_pct: 5}\n"
        "cases: [{framework: pytorch, model: resnet50, batch_size: [2], layouts: [1n1g]}]\n"
    )
    with pytest.raises(
        ConfigError, match=r"suite.yaml:2: adaptive_repeats.max: 3 is below repeats"
    ):
        load(suite)
    suite.write_text(suite.read_text().replace("max: 3", "max: 5"))
    assert load(suite)["adaptive_repeats"] == {"max": 5, "ci_width_pct": 5, "level": 0.95}


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"more": ', "unreadable repeat decision"),
        ('{"runs": 2}', "unreadable repeat decision"),
        ('{"more": "yes"}', "the decision's more is 'yes', not true or false"),
    ],
)
def test_a_decision_that_cannot_be_read_names_its_file(tmp_path, text, message):
    """Read while Snakemake walks a cell's decisions: a truncated one was a JSONDecodeError
    traceback from the rule file."""
    path = tmp_path / "after_r2.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=message) as err:
        wants_more(path)
    assert str(err.value).startswith(f"{path}: ")
    path.write_text(json.dumps({"more": False}))
    assert wants_more(path) is False


@pytest.mark.parametrize(
    "repeats, runs, why",
    [
        ([1, 2, 3], 3, ""),
        ([1, 3], 2, "a run left out"),
        ([1, 2], 3, "a count the list does not hold"),
        ([2, 3, 4], 3, "not from r1"),
    ],
)
def test_the_tables_take_a_cells_adaptive_runs_only_as_every_run_from_r1(
    tmp_path, repeats, runs, why
):
    """The runs an adaptive cell got (its runs.json) are all its runs: one edited by hand to
    leave a run out would pick the median; it is refused naming the file."""
    cell_dir = tmp_path / "repeats" / CELL_ID
    cell_dir.mkdir(parents=True)
    listed = [str(RunPaths(CELL_ID, k, tmp_path).manifest) for k in repeats]
    path = cell_dir / "runs.json"
    path.write_text(json.dumps({"cell_id": CELL_ID, "runs": runs, "manifests": listed}))
    if not why:
        assert adaptive_manifests([path]) == ([Path(m) for m in listed], {CELL_ID: 3})
        return
    with pytest.raises(ValueError, match=f"{path}: not every run of {CELL_ID} from r1"):
        adaptive_manifests([path])


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('{"cell_id": "x", "runs": 3, "manif', "JSONDecodeError('Unterminated string"),
        ("[1, 2]", "TypeError("),
        ('{"runs": 3}', "KeyError('manifests')"),
    ],
)
def test_an_unreadable_list_of_adaptive_runs_names_its_file(tmp_path, text, error):
    """Review: a truncated runs.json ended the tables rule in a JSONDecodeError traceback,
    "Unterminated string starting at: line 1 column 31", naming no file."""
    path = tmp_path / "repeats" / CELL_ID / "runs.json"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    with pytest.raises(ValueError) as err:
        adaptive_manifests([path])
    assert str(err.value).startswith(f"{path}: unreadable list of the cell's runs ({error}")
    assert str(err.value).endswith("delete it and the workflow lists them again")
    assert path.read_text() == text
