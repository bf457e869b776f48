"""Reading a file the controller did not write itself, and the one JSON form of its documents."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from app.core.errors import RunStopped


class UnsafeFile(RunStopped):
    """A file a role left for the controller is not a regular file of bounded size."""


def read_regular(path: Path, limit: int) -> bytes:
    """Reads a regular file without following a final symlink, refusing anything larger than
    ``limit`` before reading it.

    A role owns its output directory: a symlink, a FIFO or a device it planted there must
    neither redirect nor hang the controller (O_NONBLOCK opens a FIFO without waiting).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as error:
        raise UnsafeFile(f"{path}: cannot open it as a regular file ({error.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            raise UnsafeFile(f"{path}: not a regular file of at most {limit} bytes")
        data = read_at_most(fd, limit)
        if data is None:
            raise UnsafeFile(f"{path}: grew past {limit} bytes while it was read")
        return data
    finally:
        os.close(fd)


def read_at_most(fd: int, limit: int) -> bytes | None:
    """Everything left in ``fd`` if it is at most ``limit`` bytes; None if there is more. Never
    reads more than ``limit + 1`` bytes, whatever the file's size said when it was opened."""
    chunks: list[bytes] = []
    remaining = limit + 1
    while remaining > 0 and (chunk := os.read(fd, remaining)):
        chunks.append(chunk)
        remaining -= len(chunk)
    data = b"".join(chunks)
    return data if len(data) <= limit else None


def json_bytes(document: Any) -> bytes:
    """The run's JSON documents: indented, sorted keys, UTF-8, one trailing newline."""
    return (json.dumps(document, indent=2, sort_keys=True) + "\n").encode("utf-8")
