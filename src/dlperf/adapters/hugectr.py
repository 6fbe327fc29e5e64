"""NVIDIA HugeCTR's Wide & Deep (DLPerf's W&D special case): v2.2's huge_ctr with a JSON as DLPerf
v1.0 ran it, and release `current`, v24.06.00's Python W&D sample in merlin-hugectr:24.06.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

from dlperf.adapters.base import ModelSource, TaskContext
from dlperf.adapters.releases import Release
from dlperf.adapters.upstream import UpstreamAdapter, upstream_options
from dlperf.errors import ConfigError
from dlperf.matrix import Cell
from dlperf.parse.upstream import Parser
from dlperf.parse.upstream.hugectr import parse_hugectr, parse_hugectr_current

# HugeCTR's release v24.06.00 and the last HugeCTR image on NGC: from v25.03.00 (March 2025) on
# HugeCTR ships only a Dockerfile, and v25.03.00's samples/wdl, src/pybind/model.cpp and
# core23/logger.cpp are v24.06.00's unchanged. NVIDIA-Merlin/Merlin v24.06.00's
# docker/dockerfile.ctr builds the image's HugeCTR with -DSM="60;61;70;75;80;90" (Hopper).
HUGECTR_CURRENT = "a89cf40460b3e73d77a8d84264a001c253730576"
NGC_HUGECTR = "nvcr.io/nvidia/merlin/merlin-hugectr:24.06"


class HugeCTR(UpstreamAdapter):
    """NVIDIA HugeCTR Wide & Deep (DLPerf's W&D special case), one process per node.

    HugeCTR takes its batch size and iterations from a JSON file: the adapter writes
    `hugectr_<cell>.json` in the run folder from option config_template (DLPerf's wdl_7x1024.json
    or similar, with the data paths) with the batch size (global), iterations, GPUs per node and
    mixed precision filled in; `mpirun` on node 0 starts one `huge_ctr` per node over ssh.
    """

    name: ClassVar[str] = "hugectr"
    display_name: ClassVar[str] = "HugeCTR"
    version: ClassVar[str] = "HugeCTR v2.2"
    launch: ClassVar[str] = "mpirun"
    models: ClassVar[dict[str, ModelSource]] = {
        "wide_deep": ModelSource("NVIDIA/HugeCTR", "samples/wdl", "v2.2")
    }
    entry: ClassVar[dict[str, str]] = {"wide_deep": "huge_ctr"}
    parsers: ClassVar[dict[str, Parser]] = {"wide_deep": parse_hugectr}
    environment: ClassVar[str] = "nvcr.io/nvidia/hugectr:v2.2"
    features: ClassVar[tuple[str, ...]] = (
        "model-parallel embedding",
        "MPI multi-node",
        "mixed precision",
    )
    synthetic_models: ClassVar[frozenset[str]] = frozenset(
        {"wide_deep"}
    )  # the data is in the template
    options: ClassVar[dict[str, Any]] = upstream_options(
        mpi=True,
        max_batch_size={"wide_deep": 16384},
        binary="huge_ctr",
        config_template="",  # the W&D JSON (layers, data paths); required
        loss_scale=1024,  # solver.mixed_precision for amp (release current: CreateSolver's scaler)
        # DLPerf's vocabulary sweep (HugeCTR/scripts/gen_hugectr_conf_json.py): both embeddings'
        # max_vocabulary_size_per_gpu; 0 = the template's. Release dlperf_v1 only.
        vocab_size=0,
        # the deep embedding's embedding_vec_size (and reshape1's leading_dim); 0 = the
        # template's. Release dlperf_v1 only.
        deep_embedding_vec_size=0,
    )
    releases: ClassVar[dict[str, Release]] = {
        # The Python API's W&D sample, samples/wdl/wdl_8gpu.py: one process drives a node's GPUs
        # (CreateSolver's vvgpu, one list per node), several nodes under mpirun as
        # samples/dcn/README.md runs dcn_2node_8gpu.py. The script takes no arguments: the task
        # runs a copy of it with this cell's values (see current_edits), as DLPerf v1.0's
        # HugeCTR took them from a JSON file. Its data are the Parquet files of the sample's
        # preprocess.sh (option data_dir: the folder it calls criteo_data).
        "current": Release(
            version=f"HugeCTR 24.06 (v24.06.00 {HUGECTR_CURRENT[:7]}, merlin-hugectr:24.06)",
            environment=NGC_HUGECTR,
            models={
                "wide_deep": ModelSource("NVIDIA-Merlin/HugeCTR", "samples/wdl", HUGECTR_CURRENT)
            },
            entry={"wide_deep": "wdl_8gpu.py"},
            parsers={"wide_deep": parse_hugectr_current},
            source_root="/hugectr",  # samples/wdl/README.md mounts the checkout there
            unverified="not run: no GPU or container here; the script, its solver and fit "
            "arguments and the log line read from HugeCTR v24.06.00 (samples/wdl/wdl_8gpu.py, "
            "include/pybind/solver_wrapper.hpp, include/pybind/model_wrapper.hpp, "
            "src/pybind/model.cpp, core23/logger.cpp)",
        ),
    }

    def measured_options(self, cell: Cell, options: dict[str, Any]) -> dict[str, Any]:
        """As every upstream adapter's, less vocab_size and deep_embedding_vec_size at 0 (the
        template's): cells that do not set them measure (and stay fresh) as before they existed."""
        measured = super().measured_options(cell, options)
        for key in JSON_ONLY_OPTIONS:
            if not measured.get(key):
                measured.pop(key, None)
        return measured

    def check_case(self, case: dict[str, Any]) -> None:
        super().check_case(case)
        blocks = [case.get("options", {}), *case.get("precision_options", {}).values()]
        for options in blocks:
            if self.release_name(options) != "current":
                continue
            for key in JSON_ONLY_OPTIONS:
                if options.get(key) or key in case.get("sweep", {}):
                    raise ConfigError(
                        f".options.{key}: HugeCTR release current takes its vocabulary and "
                        "embedding sizes from its script, not from this option (dlperf_v1 only)"
                    )

    def skip_reason(self, cell: Cell, options: dict[str, Any]) -> str | None:
        if self.release_name(options) == "current":
            if not options.get("data_dir"):
                return (
                    "HugeCTR's W&D sample reads the Criteo Parquet files of its preprocess.sh: "
                    "set option data_dir to that folder (criteo_data, with train/ and val/)"
                )
            return None
        if not options.get("config_template"):
            return (
                "HugeCTR needs option config_template (a W&D JSON such as DLPerf's wdl_7x1024.json)"
            )
        return None

    def procs_per_node(self, ctx: TaskContext) -> int:
        return 1

    def program(self, ctx: TaskContext) -> list[str]:
        if self.release_name(ctx.options) == "current":
            return [str(ctx.options["python"]), str(self.write_script(ctx))]
        return [str(ctx.options["binary"]), "--train", str(self.write_config(ctx))]

    def current_edits(self, ctx: TaskContext) -> list[tuple[str, str]]:
        """Release current: the lines of samples/wdl/wdl_8gpu.py (v24.06.00) that hold the batch
        size (global), GPUs, data paths and iterations, and what this cell puts there. Mixed
        precision is CreateSolver's use_mixed_precision with scaler (include/pybind/
        solver_wrapper.hpp); fit's eval_interval and snapshot 0 turn evaluation and snapshots off
        (src/pybind/model.cpp tests `> 0`); display 1 logs every iteration, as DLPerf v1.0 did."""
        o = ctx.options
        total = self.batch_size(ctx.cell, o) * ctx.nodes * ctx.gpus_per_node
        vvgpu = [list(range(ctx.gpus_per_node))] * ctx.nodes
        solver = f"    vvgpu={vvgpu},\n"
        if ctx.cell.precision == "amp":
            solver += f"    use_mixed_precision=True,\n    scaler={float(o['loss_scale'])},\n"
        data = str(o["data_dir"]).rstrip("/")
        return [
            ("    batchsize=16384,\n", f"    batchsize={total},\n"),
            ("    vvgpu=[[0, 1, 2, 3, 4, 5, 6, 7]],\n", solver),
            (
                'source=["./criteo_data/train/_file_list.txt"],',
                f"source=[{data + '/train/_file_list.txt'!r}],",
            ),
            (
                'eval_source="./criteo_data/val/_file_list.txt",',
                f"eval_source={data + '/val/_file_list.txt'!r},",
            ),
            (
                "model.fit(max_iter=2300, display=200, eval_interval=1000, snapshot=1000000, "
                'snapshot_prefix="wdl")',
                f"model.fit(max_iter={ctx.steps}, display=1, eval_interval=0, snapshot=0, "
                'snapshot_prefix="wdl")',
            ),
        ]

    def write_script(self, ctx: TaskContext) -> Path:
        """Release current: `hugectr_<cell>.py` in the run folder, which reads the upstream script
        on the node, makes current_edits (each old text must be there exactly once, else it stops
        naming it) and runs the result as the script itself."""
        script = self.script(ctx.cell.model, ctx.options)
        path = Path(ctx.run_dir) / f"hugectr_{ctx.cell.id}.py"
        path.write_text(HUGECTR_RUNNER.format(script=script, edits=self.current_edits(ctx)))
        return path

    def script_args(self, ctx: TaskContext) -> list[str]:
        return []

    def write_config(self, ctx: TaskContext) -> Path:
        """The run's HugeCTR JSON: the template with this cell's batch, steps, GPUs and precision."""
        o = ctx.options
        conf = json.loads(Path(o["config_template"]).read_text())
        solver = conf.setdefault("solver", {})
        devices = list(range(ctx.gpus_per_node))
        solver["batchsize"] = self.batch_size(ctx.cell, o) * ctx.nodes * ctx.gpus_per_node
        solver["max_iter"] = ctx.steps
        solver["display"] = 1
        solver["eval_interval"] = ctx.steps + 1000
        solver["snapshot"] = 10 * ctx.steps + 1000000
        solver["gpu"] = [devices] * ctx.nodes if ctx.nodes > 1 else devices
        if ctx.cell.precision == "amp":
            solver["mixed_precision"] = int(o["loss_scale"])
        else:
            solver.pop("mixed_precision", None)
        set_embedding_sizes(
            conf, int(o.get("vocab_size", 0)), int(o.get("deep_embedding_vec_size", 0))
        )
        path = Path(ctx.run_dir) / f"hugectr_{ctx.cell.id}.json"
        path.write_text(json.dumps(conf, indent=2))
        return path


JSON_ONLY_OPTIONS = ("vocab_size", "deep_embedding_vec_size")


def set_embedding_sizes(conf: dict[str, Any], vocab_size: int, vec_size: int) -> None:
    """DLPerf's vocabulary and embedding-width settings in a HugeCTR v2.2 W&D JSON, as its
    HugeCTR/scripts/gen_hugectr_conf_json.py wrote them: the vocabulary (the sweep's value, not
    divided by the GPUs) in both embeddings' max_vocabulary_size_per_gpu (`sparse_embedding2`:
    wide, `sparse_embedding1`: deep); the width in the deep embedding's embedding_vec_size and in
    `reshape1`'s leading_dim (width x the deep slots: the data layer's `deep_data` slot_num, 26 in
    DLPerf's template). 0 leaves the template's value."""
    if not vocab_size and not vec_size:
        return
    layers = {layer.get("name"): layer for layer in conf.get("layers", [])}

    def layer(name: str) -> dict[str, Any]:
        if name not in layers:
            raise ConfigError(
                f".options.config_template: no layer {name!r} in the HugeCTR JSON (the vocabulary "
                "and embedding options follow DLPerf's wdl_7x1024.json layer names)"
            )
        return layers[name]

    if vocab_size:
        for name in ("sparse_embedding2", "sparse_embedding1"):
            hparam = layer(name).setdefault("sparse_embedding_hparam", {})
            hparam["max_vocabulary_size_per_gpu"] = vocab_size
    if vec_size:
        layer("sparse_embedding1").setdefault("sparse_embedding_hparam", {})[
            "embedding_vec_size"
        ] = vec_size
        slots = next(
            (
                int(sparse.get("slot_num", 26))
                for sparse in layers.get("data", {}).get("sparse", [])
                if sparse.get("top") == "deep_data"
            ),
            26,
        )
        layer("reshape1")["leading_dim"] = vec_size * slots


# Release current's runner (HugeCTR.write_script): the upstream script with the cell's edits.
HUGECTR_RUNNER = """\
# dlperf: HugeCTR's {script} with this cell's batch size, GPUs, data and iterations
import sys

SCRIPT = {script!r}
EDITS = {edits!r}
with open(SCRIPT) as f:
    text = f.read()
for old, new in EDITS:
    if text.count(old) != 1:
        sys.exit(f"dlperf: {{SCRIPT}} has {{text.count(old)}} copies of {{old!r}}, not one")
    text = text.replace(old, new)
sys.argv = [SCRIPT]
exec(compile(text, SCRIPT, "exec"), {{"__name__": "__main__", "__file__": SCRIPT}})
"""
