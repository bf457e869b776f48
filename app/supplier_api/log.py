"""The request log: one JSON line for every request that reaches the server, bounded by design.

Bounded three ways. Each field is capped (a method, a path, a version, a request id), and a
value that was cut says so in the entry's ``cut`` object with the length it had. Each file is
rotated when it passes MAX_FILE_BYTES (the previous one kept as ``.1``), so the log never holds
more than two files' worth. And the traffic the controller correlates cannot be pushed out by
anyone else's: a request goes to the attributed log when it carried the key, or carries the
request id prefix of a run that has sent the key; every other request (no key, a garbage
request line, a refused framing) goes to the other log, rotated on its own. GET /_log serves
the attributed log, so correlation works for the current run however much noise the server
has taken from clients without the key.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

MAX_FIELD_CHARS: Final = {"method": 32, "path": 256, "version": 16, "request_id": 128}
# Two files of each log, at most: 4 MiB served by GET /_log, under the controller's 8 MiB read.
MAX_FILE_BYTES: Final = 2 * 1024 * 1024
# The runs whose prefix attributes a request without the key (the 401 controls): key holders
# alone add to it, the oldest goes first.
MAX_KNOWN_RUNS: Final = 1024


@dataclass(frozen=True)
class Logged:
    """What a request said about itself, before any cap; text decoded one byte per character."""

    method: str
    path: str
    version: str
    status: int
    request_id: str | None
    authenticated: bool
    # The bytes of body the server read (a refused request's unread body is not counted).
    body_bytes: int = 0


def _run_prefix(request_id: str) -> str:
    """A run's request ids are ``<run id>-<n>``: the part before the last hyphen."""
    return request_id.rpartition("-")[0] or request_id


class _Rotating:
    """One append-only JSON-lines file, moved to ``.1`` when it passes MAX_FILE_BYTES.

    Written with one unbuffered write per entry: a write that fails (a full disk) leaves nothing
    of the entry behind, neither in a buffer to be flushed later as if it had been logged, nor
    half a line in the file (what part of it landed is cut off again)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.previous = path.with_name(path.name + ".1")
        self._fd = self._open()

    def _open(self) -> int:
        # O_APPEND: every write lands at the end, whoever else has the file open.
        return os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)

    def write(self, line: str) -> None:
        data = (line + "\n").encode("ascii")
        size = os.fstat(self._fd).st_size
        try:
            written = os.write(self._fd, data)
            if written != len(data):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, size)
            raise
        if size + written > MAX_FILE_BYTES:
            os.close(self._fd)
            os.replace(self.path, self.previous)
            self._fd = self._open()

    def lines(self) -> list[str]:
        found: list[str] = []
        for path in (self.previous, self.path):
            try:
                found += path.read_text(encoding="ascii").splitlines()
            except FileNotFoundError:
                continue
        return found

    def close(self) -> None:
        # Nothing is buffered, so closing cannot fail for want of space.
        with contextlib.suppress(OSError):
            os.close(self._fd)


class RequestLog:
    """Appends entries under a lock so concurrent handler threads never interleave lines."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.other_path = path.with_name(f"{path.stem}.other{path.suffix}")
        self._lock = threading.Lock()
        self._attributed = _Rotating(path)
        self._other = _Rotating(self.other_path)
        self._known: OrderedDict[str, None] = OrderedDict()

    def append(self, request: Logged) -> None:
        entry: dict[str, Any] = {"time": datetime.now(UTC).isoformat(timespec="milliseconds")}
        cut: dict[str, int] = {}
        fields = {
            "method": request.method,
            "path": request.path,
            "version": request.version,
            "request_id": request.request_id,
        }
        for name, value in fields.items():
            limit = MAX_FIELD_CHARS[name]
            if value is not None and len(value) > limit:
                cut[name] = len(value)
                value = value[:limit]
            entry[name] = value
        entry["status"] = request.status
        entry["body_bytes"] = request.body_bytes
        if cut:
            entry["cut"] = cut
        line = json.dumps(entry, separators=(",", ":"), ensure_ascii=True)
        request_id = entry["request_id"]
        with self._lock:
            prefix = _run_prefix(request_id) if request_id else None
            if request.authenticated and prefix is not None:
                self._known[prefix] = None
                self._known.move_to_end(prefix)
                while len(self._known) > MAX_KNOWN_RUNS:
                    self._known.popitem(last=False)
            attributed = request.authenticated or (prefix is not None and prefix in self._known)
            (self._attributed if attributed else self._other).write(line)

    def entries(self) -> list[dict[str, Any]]:
        """The attributed log read back from disk, so what is served is what is on disk."""
        with self._lock:
            lines = self._attributed.lines()
        return [json.loads(line) for line in lines if line.strip()]

    def close(self) -> None:
        with self._lock:
            self._attributed.close()
            self._other.close()
