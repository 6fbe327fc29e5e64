"""The job's node names, node 0 first: from the task, or Slurm's compressed host list."""

from __future__ import annotations

import os
import re

from dlperf.adapters.base import TaskContext


def node_hosts(ctx: TaskContext) -> list[str]:
    """Host names of the job's nodes, node 0 first.

    From the task context when it carries them (`hosts`), else the master alone on one node, else
    Slurm's node list (SLURM_JOB_NODELIST, in node order).
    """
    hosts = list(ctx.hosts)
    if hosts:
        return hosts[: ctx.nodes]
    if ctx.nodes == 1:
        return [ctx.master_addr]
    nodelist = os.environ.get("SLURM_JOB_NODELIST") or os.environ.get("SLURM_NODELIST") or ""
    hosts = expand_hostlist(nodelist)
    if len(hosts) < ctx.nodes:
        raise RuntimeError(
            f"{ctx.nodes} nodes but the host list is {hosts or 'unknown'} "
            "(no SLURM_JOB_NODELIST on this node)"
        )
    return hosts[: ctx.nodes]


def expand_hostlist(text: str) -> list[str]:
    """Slurm's compressed host list (`gpu[01-03,07],login1`) as names, in order."""
    hosts: list[str] = []
    for item in _split_top(text.strip()):
        hosts.extend(_expand_one(item))
    return hosts


def _split_top(text: str) -> list[str]:
    items, depth, current = [], 0, ""
    for char in text:
        if char == "," and depth == 0:
            items.append(current)
            current = ""
            continue
        depth += {"[": 1, "]": -1}.get(char, 0)
        current += char
    if current:
        items.append(current)
    return [i for i in items if i]


def _expand_one(item: str) -> list[str]:
    match = re.search(r"\[([^\]]*)\]", item)
    if not match:
        return [item]
    head, tail = item[: match.start()], item[match.end() :]
    names = []
    for part in match.group(1).split(","):
        lo, _, hi = part.partition("-")
        width = len(lo)
        for n in range(int(lo), int(hi or lo) + 1):
            names.extend(_expand_one(f"{head}{n:0{width}d}{tail}"))
    return names
