"""The run's own clock: wall time, CPU and tool processes per phase, kept in evidence.json, so
that a slow run names the phase that slowed it (`make bench` prints the same table).

A phase is one of the orchestrator's steps before the checks begin (the case and options, the
services, preflight) or a section of the check log (layer, files, network, ...), entered when
the log begins it. Each row holds what the phase cost:

- ``wall_ms``: elapsed time;
- ``controller_cpu_ms``: this process, every thread included (nono's proxies run here);
- ``child_cpu_ms``: the processes it started and has waited for (tool processes, bwrap, the
  probes of preflight): the kernel adds a child's CPU to its parent's only once it is reaped;
- ``service_cpu_ms``: the local services (moto, the supplier API), read from their /proc;
- ``tool_processes``: the worker processes started, confined or as the unconfined control.

The tool processes and the CPU of those a launch process reaped are the run's own
(Run.tool_counts, which the clock is given once the run is built); getrusage is process-wide
(it cannot tell runs apart), so a row is exact for a process that runs one case at a time, as
the controller does.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Final

from app.core.tool_counts import ToolCounts

_TICKS_PER_SECOND: Final = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Reading:
    """The counters at one instant."""

    wall: float
    controller_cpu: float
    child_cpu: float
    service_cpu: float
    tool_processes: int


def service_cpu_seconds(pid: int) -> float:
    """utime + stime of a running process (its reaped children aside); 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            text = stat.read()
    except OSError:
        return 0.0
    # The command name (field 2) may hold spaces: fields are counted after its closing ")".
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS_PER_SECOND


@dataclass
class PhaseRow:
    phase: str
    wall_ms: float = 0.0
    controller_cpu_ms: float = 0.0
    child_cpu_ms: float = 0.0
    service_cpu_ms: float = 0.0
    tool_processes: int = 0

    def add(self, start: Reading, end: Reading) -> None:
        self.wall_ms += (end.wall - start.wall) * 1000
        self.controller_cpu_ms += (end.controller_cpu - start.controller_cpu) * 1000
        self.child_cpu_ms += (end.child_cpu - start.child_cpu) * 1000
        self.service_cpu_ms += (end.service_cpu - start.service_cpu) * 1000
        self.tool_processes += end.tool_processes - start.tool_processes

    def as_json(self) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "wall_ms": round(self.wall_ms, 1),
            "controller_cpu_ms": round(self.controller_cpu_ms, 1),
            "child_cpu_ms": round(self.child_cpu_ms, 1),
            "service_cpu_ms": round(self.service_cpu_ms, 1),
            "tool_processes": self.tool_processes,
        }


@dataclass
class PhaseClock:
    """Times the phase it is in; ``enter`` ends it and starts the next."""

    service_pids: Callable[[], Sequence[int]] = tuple
    # The run's, once it is built (app/controller/run.py): no tool process starts before.
    tool_counts: ToolCounts = field(default_factory=ToolCounts)
    rows: dict[str, PhaseRow] = field(default_factory=dict)
    _current: str | None = None
    _since: Reading | None = None

    def read(self) -> Reading:
        own = resource.getrusage(resource.RUSAGE_SELF)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        counts = self.tool_counts
        return Reading(
            wall=time.monotonic(),
            controller_cpu=own.ru_utime + own.ru_stime,
            child_cpu=children.ru_utime + children.ru_stime + counts.unreaped_cpu_seconds(),
            service_cpu=sum(service_cpu_seconds(pid) for pid in self.service_pids()),
            tool_processes=counts.starts,
        )

    def enter(self, phase: str) -> None:
        """Ends the current phase and starts ``phase``; entering the current one again is a
        no-op, and a phase entered twice adds up in its first row."""
        if phase == self._current:
            return
        now = self.read()
        if self._current is not None and self._since is not None:
            self.rows.setdefault(self._current, PhaseRow(self._current)).add(self._since, now)
        self._current, self._since = phase, now
        self.rows.setdefault(phase, PhaseRow(phase))

    @contextmanager
    def aside(self, phase: str) -> Iterator[None]:
        """Times the block as ``phase`` of its own, then returns to the phase it interrupted:
        a step inside a section whose cost is wanted apart (the report page's render)."""
        interrupted = self._current
        self.enter(phase)
        try:
            yield
        finally:
            if interrupted is not None:
                self.enter(interrupted)

    def stop(self) -> None:
        """Ends the current phase, so that the table holds it too."""
        if self._current is not None and self._since is not None:
            self.rows[self._current].add(self._since, self.read())
        self._current = self._since = None

    def table(self) -> list[dict[str, Any]]:
        """Every phase ended so far, in the order first entered; the current one is left out
        (its work is not done)."""
        return [row.as_json() for name, row in self.rows.items() if name != self._current]
