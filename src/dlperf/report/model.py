"""The report's data model: built once from the tables and manifests (dlperf.report.build),
rendered in every language.

Everything here is data (numbers already formatted, ids, raw evidence); every word a reader sees is
a catalog key (`Phrase`) filled in at render time, so the languages cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dlperf.i18n import Text
from dlperf.matrix import Layout
from dlperf.report.caveats import Caveat
from dlperf.report.latency import LatencyTable
from dlperf.report.planinfo import PlanInfo
from dlperf.report.provenance import ModelConfig, NodeEnv
from dlperf.report.special import ABSENT as ABSENT
from dlperf.report.special import Table as SpecialTable


@dataclass(frozen=True)
class Column:
    """One column of a results table: a framework's cells from one source, at one setting."""

    framework: str
    source: str  # "measured" or a baseline's name
    label: Text  # the framework's name with DLPerf's marks (w/XLA, bsz=, [baseline])
    xla: bool = False
    variant: str = "default"
    batch_size: str = ""
    notes: tuple[int, ...] = ()  # footnotes on the whole column (a published remark, a fallback)


@dataclass(frozen=True)
class TableCell:
    cell_id: str
    status: str  # a cell status, or "absent"
    throughput: str  # formatted median ('' unless ok)
    speedup: str  # formatted speedup, "n/a" without a 1n1g baseline
    notes: tuple[int, ...]


@dataclass(frozen=True)
class Row:
    nodes: int
    devices: int
    layout: str
    cells: tuple[TableCell, ...]  # one per column


@dataclass(frozen=True)
class Detail:
    """The spread behind one table figure, and the newer figures where the table has them."""

    column: Text
    layout: str
    cell_id: str
    status: str
    runs: str  # "ok/done/planned"
    median: str
    min_max: str
    cv: str
    ci: str
    ci_level: str
    speedup: str
    efficiency: str
    speedup_baseline_cell: str
    methods: tuple[str, ...]
    figures: tuple[str, ...] = ()  # one per key of Group.figure_keys
    flags: Text = ""  # why the cell is unstable, which runs are outliers (dlperf.report.reasons)


@dataclass(frozen=True)
class Footnote:
    number: int
    kind: str  # "status": why no figure; "config": report.footnotes; "note": a table's remark;
    # "fallback": a smaller batch size shown because the table's ran out of memory; "doubt":
    # figures with a caveat in "Read this first"
    status: str
    cell_ids: tuple[str, ...]
    text: Text  # the runs' reasons, or configured or published text ('' when none was recorded)
    # kind "fallback": the table's batch size ran out of memory, this one is shown instead
    oom_batch: str = ""
    shown_batch: str = ""
    layouts: tuple[str, ...] = ()


@dataclass(frozen=True)
class PlotPoint:
    column: Text  # its Column's label
    layout: str  # 1n2g
    throughput: float
    speedup: float  # nan without a baseline
    low: float = float("nan")  # min of the runs (nan: one run or none recorded)
    high: float = float("nan")  # max of the runs
    ceiling: float = float("nan")  # communication ceiling of the speedup (nan: not measured)
    doubted: bool = False  # its figure has a caveat in "Read this first" (caveats.DOUBT_KINDS)

    @property
    def devices(self) -> int:
        return Layout.parse(self.layout).devices


@dataclass(frozen=True)
class Group:
    """One results table: a model, precision and batch size; rows are layouts, columns are
    frameworks (with XLA, variant and a fallback batch size as DLPerf's tables show them)."""

    slug: str
    model: str
    model_name: str
    precision: str
    precision_name: str
    xla: bool
    batch_size: str
    variant: str
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]
    details: tuple[Detail, ...]
    footnotes: tuple[Footnote, ...]
    points: tuple[PlotPoint, ...]
    figure_keys: tuple[str, ...] = ()  # extra figure columns of the details (FIGURES keys)


@dataclass(frozen=True)
class HeadlineRow:
    group_slug: str
    model_name: str
    precision_name: str
    batch_size: str
    column: Text
    layout: str
    devices: int
    status: str
    throughput: str
    speedup: str
    efficiency: str
    figures: tuple[str, ...]  # one per Headline.figure_keys
    doubted: bool = False  # its figure has a caveat in "Read this first" (caveats.DOUBT_KINDS)


@dataclass(frozen=True)
class Headline:
    """The answer first (dlperf.report.headline): each column at its largest layout."""

    rows: tuple[HeadlineRow, ...] = ()
    figure_keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunEntry:
    cell_id: str
    repeat: str
    status: str
    throughput: str
    window: str  # "first-last" measured iterations
    p50_ms: str
    p95_ms: str
    traces: tuple[str, ...]  # "log:first-last" per rank
    manifest: str
    detail: Text  # why it gave no figure, or why it is an outlier
    outlier: bool = False


@dataclass(frozen=True)
class FrameworkRow:
    framework: str
    display_name: Text
    version: str
    launcher: str
    environment: Text  # what its runs ran in (frameworks.ran_in_text), or the adapter's own
    features: tuple[str, ...]
    models: tuple[tuple[str, str], ...]  # (model name, source)
    # (model name, why) for the suite's models this framework does not run (its adapter's lacks)
    lacking: tuple[tuple[str, Text], ...] = ()
    # (model name, why) for the suite's models it trains without sharding: fsdp only (fsdp_lacks)
    unsharded: tuple[tuple[str, Text], ...] = ()
    # (release, where it has run for real) for each upstream release the suite's cases use
    ran: tuple[tuple[str, Text], ...] = ()
    release: str = ""  # the upstream release its runs ran at ("": DLPerf v1.0's, or none)
    # its release's name and cells, where the framework ran at several releases (a row each)
    cells_release: str = ""
    cells: tuple[str, ...] = ()


@dataclass(frozen=True)
class Baseline:
    name: str
    path: str
    cells: int


@dataclass(frozen=True)
class Options:
    warmup: int
    measure: int
    precisions: tuple[str, ...]
    batch_sizes: tuple[str, ...]
    layouts: tuple[str, ...]
    xla: tuple[bool, ...]
    variants: tuple[str, ...]
    backend: str
    device: str
    time_limit_min: str
    median: Text  # how a cell's runs are counted: the method's sentence (adaptive repeats' rule)
    repeats_value: Text  # the options table's repeats per cell


@dataclass(frozen=True)
class Explained:
    """How the explaining figures were taken, as the measured tables state it (empty: not shown)."""

    flops_methods: tuple[str, ...] = ()
    peak_sources: tuple[str, ...] = ()
    memory: bool = False
    energy_details: tuple[str, ...] = ()
    ceiling_models: tuple[str, ...] = ()


@dataclass(frozen=True)
class Summary:
    cells: int
    runs: int
    runs_ok: int
    frameworks: tuple[Text, ...]
    models: tuple[str, ...]
    statuses: tuple[tuple[str, int], ...]  # cell status -> count, worst first after ok
    methods: tuple[str, ...]
    # why runs did not succeed: (status, reason, runs), the most frequent first
    failures: tuple[tuple[str, Text, int], ...] = ()


@dataclass(frozen=True)
class ReportData:
    title: str
    suite: str
    generated_at: str
    summary: Summary
    environment: tuple[NodeEnv, ...]
    frameworks: tuple[FrameworkRow, ...]
    baselines: tuple[Baseline, ...]
    options: Options | None
    model_configs: tuple[ModelConfig, ...]
    groups: tuple[Group, ...]
    runs: tuple[RunEntry, ...]
    headline: Headline = field(default_factory=Headline)
    caveats: tuple[Caveat, ...] = ()
    latency: tuple[LatencyTable, ...] = ()
    plan: PlanInfo | None = None
    explained: Explained = field(default_factory=Explained)
    special: tuple[SpecialTable, ...] = ()  # DLPerf's special cases (W&D, GPT), where measured
