"""What a run's detail says when its processes die."""

from __future__ import annotations

import signal
import subprocess
import sys

from dlperf.launch.outcome import first_cause
from dlperf.launch.task import exit_text


def test_a_process_ended_by_a_signal_says_which():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    proc.send_signal(signal.SIGKILL)
    assert exit_text(proc.wait()) == "killed by SIGKILL (exit code -9)"
    assert exit_text(1) == "exit code 1"


def test_a_wrapper_whose_process_a_signal_ended_says_which():
    """Review: a shell, stop_after or a launcher exits 128 + the signal that ended its workload;
    the detail said only `exit code 137`."""
    assert exit_text(137) == "killed by SIGKILL (exit code 137)"
    assert exit_text(143) == "killed by SIGTERM (exit code 143)"
    assert exit_text(255) == "exit code 255"  # 127 is no signal


def test_the_detail_names_the_rank_that_died_first():
    """Issue 20.15: rank 1 killed by SIGKILL; rank 0 then died of 'Connection reset by peer',
    which was all the detail said."""
    outcomes = {
        0: {
            "status": "failed",
            "ended_at": 1000.8,
            "detail": "exit code 1; last line: RuntimeError: Connection reset by peer",
        },
        1: {"status": "failed", "ended_at": 1000.2, "detail": "killed by SIGKILL (exit code -9)"},
    }
    assert first_cause(outcomes, "failed") == "task 1 ended first: killed by SIGKILL (exit code -9)"
    assert first_cause({0: outcomes[1]}, "failed") == "killed by SIGKILL (exit code -9)"
    assert first_cause(outcomes, "oom") == ""
