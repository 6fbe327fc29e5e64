"""What the built-in workloads share: one task per device, one CLI, the `dlperf-step` log format."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path
from typing import Any, ClassVar

from dlperf.adapters.base import Adapter, Launcher, TaskContext
from dlperf.errors import ConfigError
from dlperf.i18n import Phrase, Text, english
from dlperf.matrix import Cell, expand_case
from dlperf.parse.builtin import parse_builtin_logs
from dlperf.parse.records import ParseError, ParseResult
from dlperf.vocabulary import display_name
from dlperf.workloads import code_digest
from dlperf.workloads.options import EVERY, OPTIONS, Option, command_flags


def cpu_has_native_bf16() -> bool:
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def has_cuda_hint() -> bool:
    return shutil.which("nvidia-smi") is not None


def reaches(option: Option, cell: Cell) -> bool:
    """Whether an option makes a difference to a cell (workloads.options.Option.reaches)."""
    reached = {"": True, "xla": cell.xla, "amp": cell.precision == "amp"}
    reached["max"] = cell.batch_size == "max"
    return reached[option.reaches]


# What the workloads without the special-case models say of them (dlperf adapters, the report)
SPECIAL_CASES_LACKED: dict[str, Phrase] = {
    model: Phrase.of("adapter.lacks_not_written", model=display_name(model))
    for model in ("wide_deep", "insightface")
}
# The tiny configuration of the workloads whose model_config takes transformers' names and
# translates them to their library's (PaddlePaddle's PaddleNLP, MindSpore's MindFormers)
TINY_IN_TRANSFORMERS_NAMES: dict[str, dict[str, Any]] = {
    "resnet50": {"image_size": 32, "num_classes": 10, "threads": 1},  # all 50 layers
    "bert_base": {
        "seq_len": 16, "max_predictions": 3, "threads": 1,
        "model_config": {
            "num_hidden_layers": 1, "hidden_size": 32, "num_attention_heads": 2,
            "intermediate_size": 64, "vocab_size": 512,
        },
    },
    "gpt": {
        "seq_len": 32, "threads": 1,
        "model_config": {"n_layer": 2, "n_embd": 64, "n_head": 4, "vocab_size": 1000},
    },
}  # fmt: skip


class BuiltinWorkload(Adapter):
    """A workload module of dlperf.workloads run with the same flags by every built-in adapter."""

    launcher: ClassVar[Launcher] = Launcher.PER_DEVICE
    epoch_step_stamps: ClassVar[bool] = True  # workloads.common.step_clock
    module: ClassVar[str]  # e.g. dlperf.workloads.torch_train
    # The pinned pip requirements (envs/*.txt) of the workload's own virtual environment, built by
    # the workflow the first time a cell needs it, and so its `environment` too (set from it by
    # __init_subclass__); None: it runs in dlperf's own environment, which it names.
    requirements: ClassVar[str | None] = None
    # The models' library in the report's name of the workload ("" for none): KerasHub models
    models_library: ClassVar[str] = ""
    # why amp is skipped on a CPU without bf16 units: a detail.amp_note.* phrase of the catalog
    amp_on_cpu_note: ClassVar[Phrase]
    options: ClassVar[dict[str, Any]] = {o.name: o.default for o in OPTIONS}
    option_types: ClassVar[dict[str, dict[str, Any]]] = {o.name: o.schema for o in OPTIONS}
    sharded_models: ClassVar[frozenset[str]] = frozenset()  # models it trains with sharding: fsdp
    # model -> why it trains that model with ddp only, for a model whose sharding a suite may
    # want (GPT) and this framework's workload does not shard (dlperf adapters, the report)
    fsdp_lacks: ClassVar[dict[str, Phrase]] = {}
    # The tiny configuration, per model it trains: the options (image or sequence size, a few
    # narrow layers through model_config, threads) that make a run of a few steps take seconds
    # on a CPU. Declared once here; the shared workload contract test
    # (tests/test_workload_contract.py) runs every model of every built-in adapter at it, and the
    # framework's own tests read it from here.
    tiny: ClassVar[dict[str, dict[str, Any]]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A workload with requirements of its own has them as its environment: stated once."""
        super().__init_subclass__(**kwargs)
        if cls.requirements:
            if "environment" in vars(cls):
                raise TypeError(
                    f"{cls.__name__}: its environment is its requirements ({cls.requirements}); "
                    "state requirements only"
                )
            cls.environment = cls.requirements

    def title(self) -> Text:
        if self.models_library:
            return Phrase.of(
                "adapter.builtin_models", framework=self.display_name, models=self.models_library
            )
        return Phrase.of("adapter.builtin", framework=self.display_name)

    def check_case(self, case: dict[str, Any]) -> None:
        super().check_case(case)
        ddp = self.options["sharding"]  # the option's default (dlperf.workloads.options)
        sharding = {case.get("options", {}).get("sharding", ddp)}
        sharding |= {o.get("sharding", ddp) for o in case.get("precision_options", {}).values()}
        sharding |= set(case.get("sweep", {}).get("sharding", []))
        if "fsdp" in sharding and case["model"] not in self.sharded_models:
            why = english(self.why_ddp_only(case["model"]))
            raise ConfigError(
                f".options.sharding: {self.name} trains {case['model']} with ddp only: {why}"
            )
        blocks = {"options": case.get("options", {})} | {
            f"precision_options.{p}": o for p, o in case.get("precision_options", {}).items()
        }
        for where, options in blocks.items():
            problem = self.model_config_problem(case["model"], options.get("model_config", {}))
            if problem:
                raise ConfigError(f".{where}.model_config: {problem}")
        swept = [o for o in EVERY if o.name in case.get("sweep", {})]
        cells = [spec.cell for spec in expand_case(case)] if swept else []
        for cell, option in itertools.product(cells, swept):
            if not reaches(option, cell):  # each value would name one run, at the default
                raise ConfigError(
                    f".sweep.{option.name}: it makes a difference to {option.reaches} cells "
                    f"alone, and {cell.id} is none (its runs would train at the default under "
                    f"each value's name): sweep it in a case of {option.reaches} cells"
                )

    def model_config_problem(self, model: str, overrides: dict[str, Any]) -> str | None:
        """Why `overrides` is no model_config of `model`, where the workload's own rule can say so
        without its framework (None: it is one, or only the workload can tell: the fields of
        transformers' or PaddleNLP's config classes are found when the run starts)."""
        return None

    def why_ddp_only(self, model: str) -> Phrase:
        """Why this workload refuses `sharding: fsdp` for `model`."""
        if model in self.fsdp_lacks:
            return self.fsdp_lacks[model]
        if not self.sharded_models:
            return Phrase.of("adapter.fsdp_none")
        return Phrase.of("adapter.fsdp_only", models=", ".join(sorted(self.sharded_models)))

    def describe(self) -> dict[str, Any]:
        return super().describe() | {"fsdp_lacks": dict(self.fsdp_lacks)}

    def code_digest(self) -> str | None:
        return code_digest(self.module)

    def node_skip_reason(self, cell: Cell, options: dict[str, Any]) -> str | None:
        if (
            cell.precision == "amp"
            and options["amp_on_cpu"] != "run"
            and not has_cuda_hint()
            and not cpu_has_native_bf16()
        ):
            return english(Phrase.of("detail.amp_on_cpu", note=self.amp_on_cpu_note))
        return None

    def measured_options(self, cell: Cell, options: dict[str, Any]) -> dict[str, Any]:
        """An option that does not reach the cell (workloads.options.Option.reaches: compile_mode
        in an eager cell, amp_on_cpu in an fp32 one) is measured at its default, whatever the
        case sets: a change of it reruns no such cell, and cells measured before it was set keep
        their digest."""
        measured = super().measured_options(cell, options)
        for option in EVERY:
            if option.name in measured and not reaches(option, cell):
                measured[option.name] = option.default
        return measured

    def batch_size(self, cell: Cell, options: dict[str, Any]) -> int:
        if cell.batch_size == "max":
            return int(options["max_batch_size"][cell.model])
        return int(cell.batch_size)

    def variant_options(self, variant: str) -> dict[str, Any]:
        return {"clip_grad_norm": 0} if variant == "noclip" else {}  # BERT as DLPerf's "noclip"

    def command(self, ctx: TaskContext) -> list[str]:
        options = ctx.options
        return [
            ctx.python, "-u", "-m", self.module,
            "--model", ctx.cell.model,
            "--batch-size", str(self.batch_size(ctx.cell, options)),
            "--precision", ctx.cell.precision,
            "--steps", str(ctx.steps),
            "--device", ctx.device,
            *command_flags(options),
            *self.extra_flags(ctx),
        ]  # fmt: skip

    def extra_flags(self, ctx: TaskContext) -> list[str]:
        return []

    def parse(
        self,
        logs: list[Path],
        cell: Cell,
        options: dict[str, Any],
        keep_iterations: int | None = None,
    ) -> ParseResult:
        """Each rank's steps; a step of another batch size than the one the rank trained (a
        hand-edited or garbled `samples=`) is a ParseError naming its line."""
        parsed = parse_builtin_logs(logs, keep_iterations)
        for record in parsed.records:
            if record.samples != cell.batch_size:
                raise ParseError(
                    f"step {record.step} of rank {record.rank} counts {record.samples:g} samples, "
                    f"but the rank trained batches of {cell.batch_size}",
                    record.path,
                    record.line,
                )
        return parsed
