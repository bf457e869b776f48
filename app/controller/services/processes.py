"""The loopback services a local run starts (moto, the supplier API): their common shape, and
stopping them."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path

from app.core.errors import RunStopped

STOP_TIMEOUT_SECONDS = 5.0


class ServiceFailed(RunStopped):
    """A service the run started died or was stopped while the run used it: whatever check or
    tool met it first, the fault is the service's, named as such (exit 1)."""


def service_fault(name: str, process: subprocess.Popen[bytes] | None) -> str | None:
    """Why ``name`` cannot be serving now (it exited, or is stopped), or None while it runs."""
    if process is None:
        return None
    code = process.poll()
    if code is not None:
        how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"status {code}"
        return f"{name} ended ({how}) while the run used it"
    try:
        state = Path(f"/proc/{process.pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return None
    if state in ("T", "t"):
        return f"{name} is stopped (SIGSTOP or a debugger) and answers nothing"
    return None


def stop_processes(processes: Sequence[subprocess.Popen[bytes] | None]) -> None:
    """Asks every service to stop at once, then waits for each; one that has not stopped
    within the timeout is killed."""
    running = [p for p in processes if p is not None and p.poll() is None]
    for process in running:
        process.terminate()
        # A stopped service (SIGSTOP) would hold the signal until the kill below: it is let go
        # on, to end as asked.
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGCONT)
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


class LoopbackService(ABC):
    """One loopback service's process, stopped when its ``with`` block ends, however it ends."""

    @abstractmethod
    def running(self) -> subprocess.Popen[bytes] | None:
        """The service's process while this object holds it."""

    @abstractmethod
    def detach(self) -> subprocess.Popen[bytes] | None:
        """Hands over the service's process for the caller to stop (the run stops both
        services together, so that each one's exit overlaps the other's)."""

    def fault(self, name: str) -> str | None:
        """Why this service cannot be serving now, or None (service_fault)."""
        return service_fault(name, self.running())

    @property
    def pid(self) -> int | None:
        """The service's process id while it runs."""
        process = self.running()
        return None if process is None else process.pid

    def stop(self) -> None:
        stop_process(self.detach())

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
