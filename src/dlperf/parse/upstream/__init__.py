"""Parsers of the upstream benchmark sources' logs (what DLPerf drove), one per source.

Each parser lives in its source's module (dlperf.parse.upstream.megatron's parse_megatron, ...).
An upstream adapter imports it from there and binds each of its models (and each release's) to it
(`UpstreamAdapter.parsers`, `Release.parsers`); that binding is the one table of parsers:
dlperf.adapters.upstream_parsers() lists those in use by name. This package holds only what they
share: the `Parser` type and RunFacts.

Every parser is `parse_<source>(logs: list[Path], facts: RunFacts) -> ParseResult`: `logs` are the
run's task logs (one per rank, or one per node for per-node launchers), `facts` the run's batch
size and layout (see RunFacts). Lines may carry Horovod/MPI (`[1,3]<stdout>:`), torchrun
(`[default3]:`), absl and Python logging prefixes; unrelated lines are skipped; a progress line that
cannot be read raises ParseError naming file:line (a last line cut off without a newline is skipped
with a note). Each result records its Method and notes on what a record covers.

Each parser's docstring ends with its `Method:` paragraph: how it times records, whether a record
is job-wide (rank -1) or one rank's own, and what one record covers.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from dlperf.parse.records import ParseResult
from dlperf.parse.upstream.ranks import RunFacts

Parser = Callable[[list[Path], RunFacts], ParseResult]

__all__ = ["Parser", "RunFacts"]
