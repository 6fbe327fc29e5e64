"""The `dlperf-<kind> key=value ...` lines: written by the built-in workloads and the harness, read
by the built-in parser and the report. The one module that knows their format.

    dlperf-step rank=0 step=12 samples=32 start=1763780000.123456 end=1763780000.234567 loss=6.9
    dlperf-config model=resnet50 params=25557032 ... model_config={"depths":[3,4,6,3],...}
    dlperf-skip reason=amp on a CPU without native bf16 ...
    dlperf-memory rank=0 peak_rss_mb=812.4 peak_allocated_mb=9120.0 device_used_mb=10240.0
    dlperf-flops rank=0 per_sample=2.45e10 math=tf32 method=counted formula=2.45e10
    dlperf-peak rank=0 math=tf32 measured_tflops=412.3 gemm=8192 gpu=NVIDIA_H100_80GB_HBM3
    dlperf-comm rank=0 backend=nccl world=8 bytes=102228128 time_per_op_s=0.0021 busbw_gb_s=85.1
    dlperf-power rank=0 gpu=0 t=1763780000.5 watts=612.3 used_mb=10240.0
    dlperf-power rank=0 gpu=none reason=no NVML on this host (a CPU run)
    dlperf-harness task=1 never reported: job ended as FAILED before every task reported

Values are single words, except the last field of a kind in TRAILING: it runs to the end of the
line (JSON, or a sentence). Stdlib only: workloads import it in their own environments.
"""

from __future__ import annotations

import re
from typing import Any

PREFIX = "dlperf-"
STEP, CONFIG, SKIP, MEMORY, HARNESS = "step", "config", "skip", "memory", "harness"
FLOPS, PEAK, COMM, POWER = "flops", "peak", "comm", "power"
# a peak line's gpu= where the framework has no API for the device's name (MXNet, MindSpore): the
# reader then takes the GPU model from the node's facts
UNNAMED_GPU = "cuda"
STEP_PREFIX = f"{PREFIX}{STEP} "  # a step line starts so: a cheap test before the parse
TRAILING = {CONFIG: "model_config", SKIP: "reason", HARNESS: "note", POWER: "reason"}
_LINE = re.compile(rf"^{PREFIX}(?P<kind>[a-z_]+) (?P<body>.*?)\s*$")
_PAIR = re.compile(r"(\w+)=(\S+)")


def format_line(kind: str, **fields: Any) -> str:
    """One line (no newline). A trailing field must come last; other values must be one word."""
    trailing = TRAILING.get(kind)
    parts = []
    for key, value in fields.items():
        text = str(value)
        if key != trailing and (not text or any(c.isspace() for c in text)):
            raise ValueError(f"{PREFIX}{kind} field {key}={text!r} must be one word")
        parts.append(f"{key}={' '.join(text.split()) if key == trailing else text}")
    if trailing in fields and list(fields)[-1] != trailing:
        raise ValueError(f"{PREFIX}{kind}: field {trailing} must come last")
    return f"{PREFIX}{kind} " + " ".join(parts)


def parse_line(line: str) -> tuple[str, dict[str, str]] | None:
    """(kind, fields) of a dlperf line, or None for any other line."""
    match = _LINE.match(line)
    if not match:
        return None
    kind, body = match["kind"], match["body"]
    trailing = TRAILING.get(kind)
    tail: dict[str, str] = {}
    if trailing:
        head, sep, rest = body.partition(f"{trailing}=")
        if sep and (not head or head.endswith(" ")):
            body, tail = head, {trailing: rest}
    return kind, dict(_PAIR.findall(body)) | tail


def emit(kind: str, **fields: Any) -> None:
    """Print one line to stdout, flushed at once (the rank's log)."""
    print(format_line(kind, **fields), flush=True)
