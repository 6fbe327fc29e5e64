"""proof.md: what a GPU proof found (dlperf.gpuproof.summary's proof) as Markdown: the node, the
issues' targets, the cells with their figures, the device-clock checks, what was not done."""

from __future__ import annotations

from typing import Any

from dlperf.gpuproof.summary import DEVICE_CLOCK_TOLERANCE_PCT
from dlperf.launch.facts import config_fact_text, gpu_text
from dlperf.report import fmt
from dlperf.report.figures import format_figure
from dlperf.status import Status

# The built-in run's stack as its config line names it, and as proof.md says it
STACK_LABELS = {
    "torch": "torch", "cuda": "CUDA", "cudnn": "cuDNN", "nccl": "NCCL", "gpu": "GPU",
    "device": "device", "amp_dtype": "AMP dtype",
}  # fmt: skip


def markdown(proof: dict[str, Any]) -> str:
    """proof.md: the node, the cells with their figures, the checks, what was not done."""
    node = proof["node"]
    versions = proof["versions"]
    lines = [
        f"# dlperf GPU proof: {'; '.join(map(gpu_text, node.get('gpus') or [])) or 'no GPU'}",
        "",
        f"- host {node.get('host')}, CPU {node.get('cpu_model')}, "
        f"CUDA supported by the driver {node.get('cuda_driver_version')}",
        f"- built-in run's stack: {_stack(versions) or 'not seen'}",
        f"- window: skip {proof['window']['warmup']}, measure {proof['window']['measure']} steps; report {proof['report']}",
        "- MFU = samples/s x FLOPs per sample / the datasheet's dense peak for the precision the "
        "products run in. FLOPs per sample (forward + backward, matrix products and convolutions) "
        "as each cell's FLOPs column says: counted_FlopCounterMode (torch's FlopCounterMode on a "
        "training step), or the formula it names (an upstream source's, which logs none)",
        "",
        "## Targets",
        "",
        "| what | measured | target | met |",
        "| --- | --- | --- | --- |",
    ]
    for t in proof["targets"]:
        measured = "not measured" if t["measured"] is None else _target(t)
        met = {None: "n/a", True: "yes", False: "no"}[t["met"]]
        if t.get("flags"):
            met = f"not judged: `{t['cell']}` is flagged ({t['flags']})"
        lines.append(f"| {t['what']} | {measured} | {t['target']:g} | {met} |")
    lines += [
        "",
        "## Cells",
        "",
        "| case | cell | status | samples/s | CV | TFLOP/s | MFU % | FLOPs | peak MiB | J/sample | W "
        "| plain loop | ratio | flags |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for case in proof["cases"]:
        reference = case.get("reference") or {}
        for cell, row in case["cells"].items():
            ref = reference.get("throughput_samples_per_s")
            ratio = (case.get("vs_reference") or {}).get("ratio")
            status = row.get("statuses") or row.get("status")
            lines.append(
                f"| {case['number']} ({case['state']}) | `{cell}` | {status} | {_figures(row)} "
                f"| {fmt.throughput(ref) if ref else reference.get('status', '')} "
                f"| {'' if ratio is None else f'{ratio:g}'} | {row.get('flags') or ''} |"
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
        f"| `{c['cell']}` | {c['run']} | {fmt.throughput(c['host_samples_per_s'])} | {fmt.throughput(c['device_samples_per_s'])} | {c['difference_pct']:+.3f} |"
        for c in checks
    ] or ["| none | | | | |"]
    checked = {c["cell"] for c in checks}
    unchecked = [
        cell
        for case in proof["cases"]
        for cell, row in case["cells"].items()
        if row.get("throughput_median") is not None and cell not in checked
    ]
    if unchecked:
        lines += [
            "",
            "Not checked, their logs having no CUDA-event times (dlperf's own workloads log them "
            f"on CUDA; an upstream source does not): {', '.join(f'`{c}`' for c in unchecked)}",
        ]
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


def _stack(versions: dict[str, str]) -> str:
    """`torch 2.11.0+cu130, CUDA 13.0, cuDNN 9.19.0, ...` from the config line's fields."""
    return ", ".join(
        f"{STACK_LABELS.get(k, k)} {config_fact_text(k, str(v))}"
        for k, v in versions.items()
        if k != "from"
    )


def _target(target: dict[str, Any]) -> str:
    """A target's figure as the report writes its kind (the ratio: its 4 significant digits)."""
    value = target["measured"]
    if target.get("figure") == "throughput_median":
        return fmt.throughput(value)
    if target.get("figure") == "mfu_pct":
        return format_figure("mfu", {"mfu_pct": value})
    return f"{value:g}"


def _figures(row: dict[str, Any]) -> str:
    """samples/s to W as the report writes them (dlperf.report.fmt, .figures): n/a for a figure
    an ok cell has not (an upstream source logs no memory or energy); blank for a cell with no
    median."""
    if row.get("throughput_median") is None:
        return " | ".join([""] * 8)
    return " | ".join(
        [
            fmt.throughput(row["throughput_median"]),
            fmt.percent(row.get("throughput_cv")),
            format_figure("tflops", row),
            format_figure("mfu", row),
            row.get("flops_method") or fmt.NA,
            format_figure("peak_mem", row),
            format_figure("energy", row),
            format_figure("power", row),
        ]
    )
