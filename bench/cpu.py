"""All the CPU a group of processes used, whoever reaped them: a cgroup of their own.

getrusage cannot give it: the kernel adds a process's CPU to its parent's only when the parent
waits for it, and bwrap never waits for the init of the tool's pid namespace, so a bubblewrap
run's tool processes are missing from its RUSAGE_CHILDREN. A cgroup counts every process that
ran in it. The group is made under the cgroup v2 hierarchy, each measured process is moved into
it before it execs, and it is removed once empty; a process still in it then is reported.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType


def _cgroup2_root() -> Path | None:
    with open("/proc/self/mounts", encoding="utf-8") as mounts:
        for line in mounts:
            fields = line.split()
            if len(fields) > 2 and fields[2] == "cgroup2":
                return Path(fields[1])
    return None


class CpuGroup:
    """A cgroup for the processes of one measurement; ``unavailable`` says why there is none
    (then ``seconds`` is None and the caller says so)."""

    def __init__(self, name: str) -> None:
        self.path: Path | None = None
        self.unavailable = ""
        root = _cgroup2_root()
        if root is None:
            self.unavailable = "no cgroup v2 hierarchy is mounted"
            return
        path = root / f"analyst-bench-{os.getpid()}-{name}"
        try:
            path.mkdir()
        except OSError as error:
            self.unavailable = f"cannot make a cgroup in {root}: {error.strerror}"
            return
        self.path = path

    def join(self) -> None:
        """Moves the calling process into the group: a subprocess's preexec_fn, before exec."""
        if self.path is not None:
            with open(self.path / "cgroup.procs", "w", encoding="ascii") as procs:
                procs.write(str(os.getpid()))

    def seconds(self) -> float | None:
        """CPU time (user and system) of every process that has run in the group."""
        if self.path is None:
            return None
        with open(self.path / "cpu.stat", encoding="ascii") as stat:
            for line in stat:
                key, value = line.split()
                if key == "usage_usec":
                    return int(value) / 1e6
        return None

    def left(self) -> list[int]:
        """Processes still in the group: a run that left something behind."""
        if self.path is None:
            return []
        text = (self.path / "cgroup.procs").read_text(encoding="ascii")
        return [int(pid) for pid in text.split()]

    def __enter__(self) -> CpuGroup:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.path is not None and not self.left():
            self.path.rmdir()
