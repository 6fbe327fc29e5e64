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
