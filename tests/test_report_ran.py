"""What the report says ran, from the runs' own records: the node's GPUs and the workload's
stack as a reader reads them, each upstream release with the cells it ran, and what each ran in.
The records are modelled on the first H100 run's manifests (2026-11-27, local backend, no
container)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dlperf.launch.record import RunRecord
from dlperf.report.provenance import model_configs, node_environments

H100_NODE = {
    "host": "vm",
    "cpu_model": "Intel(R) Xeon(R) Processor",
    "cpus_usable": 16,
    "cuda_driver_version": "13.0",
    "gpus": ["NVIDIA H100 80GB HBM3, 81559 MiB, 580.159.04"],
    "memory_gb": 125.9,
    "os": "Linux-6.18.44-fc-v657-gpu-x86_64-with-glibc2.39",
    "packages": {"torch": "2.11.0", "transformers": "5.17.0"},
    "python": "3.12.3",
    "topology": None,
}
BERT_CONFIG_LINE = (
    "dlperf-config model=bert_base params=110106428 device=cuda amp_dtype=float16 world_size=1 "
    "sharding=none compile=reduce-overhead torch=2.11.0+cu130 cuda=13.0 cudnn=91900 "
    'nccl=2.28.9 gpu=NVIDIA_H100_80GB_HBM3 model_config={"model_type":"bert"}'
)


def write_run(
    root: Path,
    cell_id: str,
    adapter: dict[str, str],
    options: dict[str, Any],
    log_lines: tuple[str, ...] = (),
    site: dict[str, Any] | None = None,
    measure: dict[str, Any] | None = None,
    environment: dict[str, Any] | None = None,
) -> RunRecord:
    """A run folder under `root` as the local backend left it on the H100, read back."""
    from dlperf.matrix import Cell

    cell = Cell.parse(cell_id).key()
    run_dir = root / "results/runs" / cell_id / "r1"
    run_dir.mkdir(parents=True)
    log = "node0.log" if adapter["launcher"] == "per_node" else "rank0.log"
    (run_dir / log).write_text("".join(f"{line}\n" for line in log_lines))
    manifest = {
        "adapter": adapter,
        "backend": "local",
        "cell": cell,
        "environment": environment,
        "measure": {"cell": cell, "device": "cuda", "options": options, "steps": 122}
        | (measure or {}),
        "nodes": {"vm#node0": H100_NODE},
        "repeat": 1,
        "site": site or {"environments": {"python": {}, "root": ".dlperf/envs"}, "env": {}},
        "status": "ok",
        "tasks": [{"task": 0, "log": log, "status": "ok", "exit_code": 0}],
    }
    path = run_dir / "manifest.json"
    path.write_text(json.dumps(manifest))
    return RunRecord.read(path)


BUILTIN = {"launcher": "per_device", "name": "pytorch", "version": "dlperf workload"}
BERT = "pytorch.bert_base.amp.xla.b256-cudagraphs.1n1g"


def test_the_environment_shows_the_gpu_and_the_workloads_cudnn_as_a_reader_reads_them(tmp_path):
    """The H100's facts showed the raw nvidia-smi line ("NVIDIA H100 80GB HBM3, 81559 MiB,
    580.159.04") and the config line's cudnn=91900; the report says them as proof.md does."""
    record = write_run(tmp_path, BERT, BUILTIN, {}, (BERT_CONFIG_LINE,))
    (node,) = node_environments({"m": record})
    assert node.gpus == ("NVIDIA H100 80GB HBM3, 81,559 MiB, driver 580.159.04",)
    (config,) = model_configs({"m": record})
    facts = dict(config.facts)
    assert facts["cudnn"] == "9.19.0"
    assert facts["gpu"] == "NVIDIA H100 80GB HBM3"
    assert facts["torch"] == "2.11.0+cu130" and facts["params"] == "110106428"


# The H100's pytorch/examples run: release `current`, launched by the local backend with the
# source's `python3`, no container; the manifest of then named the release's NGC image anyway.
EXAMPLES_CURRENT = {
    "environment": "nvcr.io/nvidia/pytorch:25.12-py3",
    "launcher": "per_node",
    "name": "pytorch_examples",
    "release": "current",
    "version": "PyTorch 2.10.0a0 (NGC 25.12); pytorch/examples 77f55b9",
}
EXAMPLES_OPTIONS = {"python": "python3", "release": "current", "sources_dir": "/work/.dlperf/sources",
                    "workers": 8, "max_batch_size": {"resnet50": {"fp32": 128}}}  # fmt: skip
EXAMPLES = "pytorch_examples.resnet50.fp32.noxla.b128.1n1g"
EXAMPLES_CURRENT_BESIDE_V1 = "pytorch_examples.resnet50.fp32.noxla.b128-current.1n1g"


def test_a_run_without_a_container_never_claims_the_releases_image(tmp_path):
    from dlperf.i18n import english
    from dlperf.report.frameworks import ran_in_text

    record = write_run(tmp_path, EXAMPLES, EXAMPLES_CURRENT, EXAMPLES_OPTIONS)
    ran = record.ran_in
    assert (ran.container, ran.environment, ran.python) == ("", "", "python3")
    assert ran.intended == "nvcr.io/nvidia/pytorch:25.12-py3" and not ran.in_intended
    assert english(ran_in_text(ran)) == (
        "no container: python3 on the node (node facts: torch 2.11.0, transformers 5.17.0); "
        "not in nvcr.io/nvidia/pytorch:25.12-py3, which its source names"
    )
    # on Slurm in the release's own image (the site's container), it says so, and no more
    slurm = write_run(
        tmp_path / "slurm", EXAMPLES, EXAMPLES_CURRENT, EXAMPLES_OPTIONS,
        measure={"container": "nvcr.io/nvidia/pytorch:25.12-py3"},
    )  # fmt: skip
    assert slurm.ran_in.in_intended
    assert english(ran_in_text(slurm.ran_in)) == (
        "the release's image nvcr.io/nvidia/pytorch:25.12-py3"
    )


def _report(tmp_path: Path, records: dict[str, RunRecord], cases: list[dict[str, Any]]):
    import pandas as pd

    from dlperf.config import validate
    from dlperf.measure.runs import RUN_COLUMNS
    from dlperf.measure.tables import CELL_TABLE_COLUMNS
    from dlperf.report.build import build_report
    from dlperf.report.render import render_text

    config = validate({"name": "h100", "cases": cases, "baselines": []})
    data = build_report(
        config,
        pd.DataFrame(columns=CELL_TABLE_COLUMNS),
        pd.DataFrame(columns=RUN_COLUMNS),
        records,
        "t",
    )
    texts = [render_text(data, lang, "md", {}, tmp_path) for lang in ("en", "zh")]
    return data, *texts


CASE = {"framework": "pytorch_examples", "model": "resnet50", "precision": ["fp32"],
        "batch_size": [128], "layouts": ["1n1g"]}  # fmt: skip


def test_the_frameworks_table_names_the_release_each_cell_ran_at(tmp_path):
    """The H100 report said "PyTorch 1.6.0; pytorch/examples 4b119d7 / envs/pytorch_examples.yaml"
    (DLPerf v1.0's pins) for a run at release current (77f55b9, in no container). Each release
    that ran is a row of its own, with what its runs recorded, and its cells beside it."""
    current = write_run(tmp_path, EXAMPLES_CURRENT_BESIDE_V1, EXAMPLES_CURRENT, EXAMPLES_OPTIONS)
    v1_adapter = {"launcher": "per_node", "name": "pytorch_examples", "version": "PyTorch 1.6.0; pytorch/examples 4b119d7"}  # fmt: skip
    v1 = write_run(tmp_path, EXAMPLES, v1_adapter, {"python": "python3"})
    cases = [CASE | {"variant": "current", "options": {"release": "current"}}, CASE]
    data, en, zh = _report(tmp_path, {"a": current, "b": v1}, cases)
    rows = {row.release: row for row in data.frameworks}
    assert set(rows) == {"current", ""}
    assert rows["current"].version == "PyTorch 2.10.0a0 (NGC 25.12); pytorch/examples 77f55b9"
    (model, source) = rows["current"].models[0]
    assert "pytorch/examples/imagenet@77f55b9" in source
    assert rows["current"].cells == (EXAMPLES_CURRENT_BESIDE_V1,) and rows[""].cells == (EXAMPLES,)
    assert "4b119d7" in rows[""].version and "@4b119d7" in rows[""].models[0][1]
    line = next(
        x
        for x in en.splitlines()
        if x.startswith("| PyTorch (`pytorch_examples`), release `current` |")
    )
    assert "| PyTorch 2.10.0a0 (NGC 25.12); pytorch/examples 77f55b9 |" in line
    assert "no container: python3 on the node (node facts: torch 2.11.0" in line
    assert "4b119d7" not in line and "envs/pytorch\\_examples.yaml" not in line
    assert f"- PyTorch, release `current`: cells `{EXAMPLES_CURRENT_BESIDE_V1}`" in en
    assert f"- PyTorch, release `dlperf_v1`: cells `{EXAMPLES}`" in en
    assert "| PyTorch (`pytorch_examples`)，版本 `current` |" in zh
    assert "未使用容器：节点上的 python3（节点信息中为 torch 2.11.0" in zh


def test_a_run_on_the_sites_interpreter_says_so():
    """A measure whose environment is the site's interpreter (environments.identity of a `site`
    record) ran with that interpreter, not in an environment of dlperf's, nor in the image its
    release names."""
    from dlperf.environments import identity
    from dlperf.i18n import english
    from dlperf.launch.ranin import RanIn
    from dlperf.report.frameworks import ran_in_text

    site = identity({"key": "site", "python": "/opt/site/bin/python"})
    assert site is not None
    ran = RanIn("", site, "", "/opt/site/bin/python", (("torch", "2.11.0"),), "nvcr.io/x:1")
    said = english(ran_in_text(ran))
    assert "the site's interpreter /opt/site/bin/python" in said
    assert "torch 2.11.0" in said and "nvcr.io/x:1" in said
    own = RanIn("", "abc123", "envs/pytorch.txt", "", (), "envs/pytorch.txt")
    assert "the site's interpreter" not in english(ran_in_text(own))
