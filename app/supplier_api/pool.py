"""A bounded pool of daemon threads, started as work needs them and kept."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable


class ThreadPool:
    """At most ``size`` daemon threads, started as work needs them and kept: daemons, so that a
    stop (SIGTERM) never waits on a client, whose request has its own deadline anyway."""

    def __init__(self, size: int, name: str) -> None:
        self.size = size
        self.name = name
        self._jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._started = 0
        self._idle = 0

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            grow = self._idle == 0 and self._started < self.size
            if grow:
                self._started += 1
            else:
                self._idle -= 1
        self._jobs.put(job)
        if grow:
            threading.Thread(target=self._work, name=self.name, daemon=True).start()

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            job()
            with self._lock:
                self._idle += 1

    def stop(self) -> None:
        with self._lock:
            started, self._started = self._started, self.size  # nothing starts after this
        for _ in range(started):
            self._jobs.put(None)
