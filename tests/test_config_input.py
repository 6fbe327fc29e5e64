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
    with pytest.raises(ConfigError) as err:
        load(path)
    assert f"{path}:4: cases[0].batch_size[0]: {says}" in str(err.value)
