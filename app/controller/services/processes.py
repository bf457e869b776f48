"""Stopping the loopback services a local run starts (moto, the supplier API)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Sequence

STOP_TIMEOUT_SECONDS = 5.0


def stop_processes(processes: Sequence[subprocess.Popen[bytes] | None]) -> None:
    """Asks every service to stop at once, then waits for each; one that has not stopped
    within the timeout is killed."""
    running = [p for p in processes if p is not None and p.poll() is None]
    for process in running:
        process.terminate()
    deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
    for process in running:
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def stop_process(process: subprocess.Popen[bytes] | None) -> None:
    """Asks a service to stop, and kills it if it has not within the timeout."""
    stop_processes([process])
