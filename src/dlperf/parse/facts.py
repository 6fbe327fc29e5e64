"""The built-in workloads' lines beside their steps (dlperf.logline): memory, FLOPs, the measured
peak, the all-reduce probe and NVML power samples, each kept with the log line it came from."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from dlperf import logline
from dlperf.parse.records import ParseError

KINDS = (logline.MEMORY, logline.FLOPS, logline.PEAK, logline.COMM, logline.POWER)


@dataclass(frozen=True)
class Fact:
    kind: str
    fields: dict[str, str]
    path: str
    line: int

    @property
    def where(self) -> str:
        return f"{Path(self.path).name}:{self.line}"

    def number(self, key: str) -> float | None:
        """A field as a number; None when the line does not have it."""
        text = self.fields.get(key)
        if text is None:
            return None
        try:
            return float(text)
        except ValueError:
            raise ParseError(
                f"dlperf-{self.kind} field {key}={text!r} is not a number", self.path, self.line
            ) from None


@dataclass
class RunFacts:
    facts: list[Fact] = field(default_factory=list)

    def of(self, kind: str) -> list[Fact]:
        return [f for f in self.facts if f.kind == kind]

    def first(self, kind: str) -> Fact | None:
        return next(iter(self.of(kind)), None)


def parse_facts(logs: list[Path]) -> RunFacts:
    """Every memory/flops/peak/comm/power line of these logs (none: an empty RunFacts). Streams:
    memory holds the facts only, and other lines (steps above all) cost a prefix test each."""
    facts = []
    for path in logs:
        name = str(path)
        try:
            with open(path, errors="replace") as f:
                for lineno, line in enumerate(f, 1):
                    if not line.startswith(logline.PREFIX) or line.startswith(logline.STEP_PREFIX):
                        continue
                    parsed = logline.parse_line(line)
                    if parsed and parsed[0] in KINDS:
                        facts.append(Fact(parsed[0], parsed[1], name, lineno))
        except OSError:
            continue  # a missing log is the step parser's to report
    return RunFacts(facts)
