"""Stopping the loopback services a local run starts (moto, the supplier API)."""

from __future__ import annotations

import subprocess

STOP_TIMEOUT_SECONDS = 5.0


def stop_process(process: subprocess.Popen[bytes] | None) -> None:
    """Asks a service to stop, and kills it if it has not within the timeout."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=STOP_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
