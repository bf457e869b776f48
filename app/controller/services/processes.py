"""The loopback services a local run starts (moto, the supplier API): their common shape, and
stopping them."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence

STOP_TIMEOUT_SECONDS = 5.0


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

    @property
    def pid(self) -> int | None:
        """The service's process id while it runs."""
        process = self.running()
        return None if process is None else process.pid

    def stop(self) -> None:
        stop_process(self.detach())

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
