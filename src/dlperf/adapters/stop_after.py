"""Run a benchmark script that has no step limit and stop it once it has logged enough steps.

    python -m dlperf.adapters.stop_after --pattern REGEX --step N --lines K -- command ...

Every output line of the command is passed through unchanged (the log keeps the script's own
timestamps). A line matching REGEX whose `step` group is >= N counts; after K such lines (one per
rank that prints) the command's process group is terminated and this exits 0. A command that ends
on its own keeps its exit status (128 + the signal, as a shell's, when a signal ended it).
SIGTERM/SIGINT to this process are passed on to the command.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
from types import FrameType

STOP_GRACE_S = 30.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dlperf.adapters.stop_after")
    parser.add_argument(
        "--pattern", required=True, help="progress line regex with a (?P<step>...) group"
    )
    parser.add_argument("--step", type=int, required=True, help="stop once this step is logged")
    parser.add_argument(
        "--lines", type=int, default=1, help="progress lines at that step to wait for"
    )
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given after --")
    pattern = re.compile(args.pattern)
    if "step" not in pattern.groupindex:
        parser.error("--pattern needs a named group `step`")

    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )

    def forward(signum: int, frame: FrameType | None) -> None:
        _signal_group(proc, signum)
        raise SystemExit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, forward)

    assert proc.stdout is not None
    out = sys.stdout.buffer
    seen = 0
    for raw in iter(proc.stdout.readline, b""):
        out.write(raw)
        out.flush()
        match = pattern.search(raw.decode(errors="replace"))
        if match and int(match.group("step")) >= args.step:
            seen += 1
            if seen >= args.lines:
                _stop(proc)
                print(
                    f"dlperf-stop-after: stopped the workload after step {args.step} was logged",
                    flush=True,
                )
                return 0
    code = proc.wait()
    return 128 - code if code < 0 else code  # sys.exit(-9) would exit 247


def _stop(proc: subprocess.Popen) -> None:
    _signal_group(proc, signal.SIGTERM)
    try:
        proc.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        _signal_group(proc, signal.SIGKILL)
        proc.wait()


def _signal_group(proc: subprocess.Popen, signum: int) -> None:
    try:
        os.killpg(proc.pid, signum)
    except ProcessLookupError:
        pass


if __name__ == "__main__":
    sys.exit(main())
