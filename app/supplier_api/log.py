"""The append-only request log: one JSON line per request, flushed as it is written."""

from __future__ import annotations

import json
import os
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# A request id is the caller's correlation handle, not free text: bounded so a hostile header
# cannot bloat the log, and kept as a string so the log stays one JSON object per line.
MAX_REQUEST_ID_CHARS = 200


class RequestLog:
    """Appends entries under a lock so concurrent handler threads never interleave lines."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        # O_APPEND: every write lands at the end, whoever else has the file open.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._file = os.fdopen(fd, "a", encoding="utf-8")

    def append(self, method: str, path: str, status: int, request_id: str | None) -> None:
        entry = {
            "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "method": method,
            "path": path,
            "status": status,
            "request_id": request_id[:MAX_REQUEST_ID_CHARS] if request_id is not None else None,
        }
        line = json.dumps(entry, separators=(",", ":"), ensure_ascii=True)
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()

    def entries(self) -> list[dict[str, Any]]:
        """Reads the file back, so what is served is what is on disk."""
        with self._lock, self.path.open(encoding="utf-8") as handle:
            return [json.loads(line) for line in handle if line.strip()]

    def close(self) -> None:
        with self._lock:
            self._file.close()
