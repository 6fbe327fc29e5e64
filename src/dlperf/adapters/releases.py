"""What an upstream source's releases are: DLPerf v1.0's pin (`DEFAULT_RELEASE`, the adapter's
class attributes) and the others an adapter declares (`Release`), each with the evidence of what
it has run on here (`Evidence`: in CI, once by hand, or never)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from dlperf.adapters.base import ModelSource
from dlperf.i18n import Phrase, Text, english, recorded
from dlperf.parse.upstream import Parser

DEFAULT_RELEASE = "dlperf_v1"  # the sources as DLPerf v1.0 ran them (the class attributes)
GPU_RECORD = 'docs/upstream-releases.md, "Sources run on a GPU"'  # the GPU runs' evidence


class Ran(StrEnum):
    """Whether a source's code has run here for real, through its adapter's own command()."""

    CI = "ci"  # in CI, on every change: `Evidence.on` names the test
    ONCE = "once"  # once, by hand: `Evidence.on` names the record in docs/upstream-releases.md
    NEVER = "never"  # never: its command and log lines were read from its code


@dataclass(frozen=True)
class Evidence:
    """What a release's adapter has been proven on (`dlperf adapters` and the report say it).
    `on` is the release's own note, shown as recorded text; "" says the catalog's default (its
    command and log lines were read from its code)."""

    ran: Ran = Ran.NEVER
    on: str = ""

    def phrase(self) -> Phrase:
        on: Text = recorded(self.on) if self.on else Phrase.of("adapter.evidence_read")
        return Phrase.of(f"adapter.evidence_{self.ran}", on=on)

    def __str__(self) -> str:
        return english(self.phrase())


@dataclass(frozen=True)
class Release:
    """A version of an upstream source other than DLPerf v1.0's, chosen by option `release`.

    `models` lists every model the release runs, at its commit; `entry`, `parsers`, `launch` and
    `source_root` replace the adapter's own where given (empty: the same as DLPerf v1.0's).
    `unverified` says what has not been checked against a real run of this release.
    """

    version: str  # framework and source versions, as the report shows them
    environment: str  # the container image (or envs/ file) the release runs in
    models: Mapping[str, ModelSource]
    entry: Mapping[str, str] = field(default_factory=dict)
    parsers: Mapping[str, Parser] = field(default_factory=dict)
    launch: str = ""
    source_root: str = ""
    unverified: str = ""
    evidence: Evidence = field(default_factory=Evidence)
