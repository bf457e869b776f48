"""What one run's tool processes have used so far, counted as they start and as they are reaped:
the run owns it (Run.tool_counts), the launchers add to it and the phase clock reads it.

Counts are taken from several threads at once (checks made at once), so each is kept under a
lock. The phase table reads them as differences, as it reads getrusage.
"""

from __future__ import annotations

import threading


class ToolCounts:
    """The tool processes a run started, and the CPU time of those a process of the
    controller's own reaped (a nono launch process: app/tools/nono/launch_pool.py) while that
    process still runs: the controller's RUSAGE_CHILDREN counts it only once that process is
    reaped too, so the phase table adds it to its children's CPU."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._starts = 0
        self._unreaped_by_pid: dict[int, float] = {}

    def started(self) -> None:
        """One more tool process was started, confined or as the unconfined control."""
        with self._lock:
            self._starts += 1

    @property
    def starts(self) -> int:
        return self._starts

    def unreaped(self, pid: int, seconds: float) -> None:
        """``pid``, still running, has reaped tool processes that used ``seconds`` of CPU."""
        with self._lock:
            self._unreaped_by_pid[pid] = seconds

    def reaped(self, pid: int) -> None:
        """``pid`` was reaped: RUSAGE_CHILDREN holds its children's time now."""
        with self._lock:
            self._unreaped_by_pid.pop(pid, None)

    def unreaped_cpu_seconds(self) -> float:
        with self._lock:
            return sum(self._unreaped_by_pid.values())
