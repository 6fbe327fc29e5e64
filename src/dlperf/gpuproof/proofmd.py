"""proof.md: what a GPU proof found (dlperf.gpuproof.summary's proof) as Markdown: the node, the
issues' targets, the cells with their figures, the device-clock checks, what was not done."""

from __future__ import annotations

import math
from typing import Any

from dlperf.gpuproof.summary import DEVICE_CLOCK_TOLERANCE_PCT
from dlperf.status import Status


def markdown(proof: dict[str, Any]) -> str:
    """proof.md: the node, the cells with their figures, the checks, what was not done."""
    node = proof["node"]
    versions = proof["versions"]
    lines = [
        f"# dlperf GPU proof: {', '.join(node.get('gpus') or ['no GPU'])}",
        "",
        f"- host {node.get('host')}, CPU {node.get('cpu_model')}, "
        f"CUDA supported by the driver {node.get('cuda_driver_version')}",
        "- built-in run's stack: "
        + (", ".join(f"{k} {v}" for k, v in versions.items() if k != "from") or "not seen"),
        f"- window: skip {proof['window']['warmup']}, measure {proof['window']['measure']} steps; report {proof['report']}",
        "- MFU = samples/s x FLOPs per sample (counted by torch's FlopCounterMode: matrix products "
        "and convolutions, forward + backward) / the datasheet's dense peak for the precision the "
        "products run in",
        "",
        "## Targets",
        "",
        "| what | measured | target | met |",
        "| --- | --- | --- | --- |",
    ]
    for t in proof["targets"]:
        measured = "not measured" if t["measured"] is None else f"{t['measured']:.4g}"
        met = {None: "n/a", True: "yes", False: "no"}[t["met"]]
        if t.get("flags"):
            met = f"not judged: `{t['cell']}` is flagged ({t['flags']})"
        lines.append(f"| {t['what']} | {measured} | {t['target']:g} | {met} |")
    lines += [
        "",
        "## Cells",
        "",
        "| case | cell | status | samples/s | CV | MFU % | peak MiB | J/sample | W | plain loop | ratio | flags |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for case in proof["cases"]:
        reference = case.get("reference") or {}
        for cell, row in case["cells"].items():
            ref = reference.get("throughput_samples_per_s")
            ratio = (case.get("vs_reference") or {}).get("ratio")
            lines.append(
                f"| {case['number']} ({case['state']}) | `{cell}` | {row.get('statuses') or row.get('status')} "
                f"| {_f(row.get('throughput_median'))} | {_f(row.get('throughput_cv'))} "
                f"| {_f(row.get('mfu_pct'))} | {_f(row.get('peak_mem_mib'))} "
                f"| {_f(row.get('energy_j_per_sample'))} | {_f(row.get('power_w_per_device'))} "
                f"| {_f(ref) if ref else reference.get('status', '')} | {_f(ratio)} "
                f"| {row.get('flags') or ''} |"
            )
    checks = [c for case in proof["cases"] for c in case["device_clock"]]
    lines += [
        "",
        f"## Host timestamps against CUDA events (tolerance {DEVICE_CLOCK_TOLERANCE_PCT}%)",
        "",
        "| cell | run | host samples/s | CUDA-event samples/s | difference % |",
        "| --- | --- | --- | --- | --- |",
    ]
    lines += [
        f"| `{c['cell']}` | {c['run']} | {c['host_samples_per_s']:.1f} | {c['device_samples_per_s']:.1f} | {c['difference_pct']:+.3f} |"
        for c in checks
    ] or ["| none: no run on CUDA | | | | |"]
    for case in proof["cases"]:
        for cell, search in (case.get("max_batch") or {}).items():
            lines += [
                "",
                f"## batch_size: max of `{cell}`",
                "",
                f"{search['status']}: {search.get('batch_size')} ({search.get('detail')}); "
                f"probes {' '.join(search.get('probes', []))}",
            ]
    not_done = [c for c in proof["cases"] if c["state"] != "done"]
    lines += ["", "## Not done", ""]
    lines += [
        f"- case {c['number']} ({', '.join(c['cells'])}): {c['state']}, {c['detail']}"
        for c in not_done
    ]
    lines += [
        f"- case {c['number']} `{r['cell']}` {r['run']}: {r['status']}, {r['detail'] or 'no detail'}"
        for c in proof["cases"]
        for r in c.get("runs_not_ok", [])
    ]
    if lines[-1] == "":
        lines.append("- nothing: every case ran and every run ended ok")
    lines += [
        f"- `{s['cell']}` {s['run']}: {s['skips']} graphs ran without CUDA graphs (TORCH_LOGS="
        "cudagraphs says why): its figure is compile's default mode, not CUDA graphs"
        for case in proof["cases"]
        for s in case.get("cuda_graphs_skipped", [])
    ]
    for case in proof["cases"]:
        reference = case.get("reference")
        if reference and reference.get("status") != Status.OK:
            lines.append(
                f"- plain loop of case {case['number']}: {reference['status']}, {reference.get('detail')}"
            )
    if proof.get("topology"):
        lines += ["", "## nvidia-smi topo -m", "", "```", proof["topology"], "```"]
    return "\n".join(lines) + "\n"


def _f(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)
