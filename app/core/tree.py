"""Reading a tree that tool processes have written to: every entry as what it is, never
followed, with bounded effort.

A role owns its output directory, and the unconfined control runs at the tool's uid, so the run
directory may hold anything such a process can make: FIFOs, sockets, links (to /dev/zero, to
nothing), files and folders without permissions, folders nested a thousand deep, names with
newlines and escape sequences in them. The walk goes one folder at a time from an explicit list
(no recursion), opening each entry relative to its folder without following links, so no path
is ever too long; a regular file is read only up to MAX_FILE_BYTES. Everything else is an entry
of its kind, with its name: the caller decides what it means.
"""

from __future__ import annotations

import enum
import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from app.core.files import read_at_most

# The largest file a scan reads. The run directory's largest file is evidence.json (51 KiB in
# the sample case); a role's output files are held to 1 MiB by the kernel, a case's documents
# to 256 KiB each: sixteen times the largest file a run can write.
MAX_FILE_BYTES: Final = 16 * 1024 * 1024
# The most entries a scan lists (the sample case's run directory holds 18), and the deepest it
# goes (4 levels: <role>/in/proposals/<id>.json).
MAX_ENTRIES: Final = 10_000
MAX_DEPTH: Final = 32
_OPEN_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_FOLDER_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class Kind(enum.Enum):
    """What an entry is, as a scan reports it."""

    FILE = "a regular file"
    FOLDER = "a folder"
    LINK = "a symbolic link"
    FIFO = "a FIFO"
    SOCKET = "a socket"
    DEVICE = "a device"
    TOO_LARGE = f"a regular file larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB"
    UNREADABLE = "an entry that cannot be read"
    TOO_DEEP = f"a folder nested more than {MAX_DEPTH} deep"
    TOO_MANY = f"a folder past the first {MAX_ENTRIES} entries"


@dataclass(frozen=True)
class Entry:
    """One entry below the top: its path relative to the top, its kind, and what was read of
    it (a regular file's bytes, a link's target; empty otherwise)."""

    relative: str
    kind: Kind
    data: bytes = b""
    reason: str = ""

    @property
    def described(self) -> str:
        said = f" ({self.reason})" if self.reason else ""
        return f"{self.relative}: {self.kind.value}{said}"


def _kind(mode: int) -> Kind:
    if stat.S_ISREG(mode):
        return Kind.FILE
    if stat.S_ISDIR(mode):
        return Kind.FOLDER
    if stat.S_ISLNK(mode):
        return Kind.LINK
    if stat.S_ISFIFO(mode):
        return Kind.FIFO
    if stat.S_ISSOCK(mode):
        return Kind.SOCKET
    return Kind.DEVICE


def _read_file(folder: int, name: str) -> tuple[Kind, bytes, str]:
    """A regular file's bytes, opened without following a link and without waiting (a FIFO
    put there between the listing and the open is seen as one, not waited on)."""
    try:
        fd = os.open(name, _OPEN_FLAGS, dir_fd=folder)
    except OSError as error:
        if error.errno == errno.ELOOP:
            return Kind.LINK, b"", "it became one while the tree was read"
        return Kind.UNREADABLE, b"", error.strerror or str(error)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return _kind(st.st_mode), b"", ""
        if st.st_size > MAX_FILE_BYTES:
            return Kind.TOO_LARGE, b"", f"{st.st_size} bytes"
        data = read_at_most(fd, MAX_FILE_BYTES)
        if data is None:
            return Kind.TOO_LARGE, b"", "it grew while it was read"
        return Kind.FILE, data, ""
    except OSError as error:
        return Kind.UNREADABLE, b"", error.strerror or str(error)
    finally:
        os.close(fd)


def walk(top: Path) -> Iterator[Entry]:
    """Every entry below ``top`` (a folder), folders before what they hold, names in order.
    A regular file comes with its bytes and a link with its target; a folder that cannot be
    listed, and anything past MAX_DEPTH or MAX_ENTRIES, comes as an entry of that kind."""
    seen = 0
    pending: list[tuple[str, int]] = []  # folders still to list: path below top, and depth
    root = os.open(top, _FOLDER_FLAGS)
    try:
        pending.append(("", 0))
        while pending:
            relative, depth = pending.pop()
            try:
                folder = os.open(relative or ".", _FOLDER_FLAGS, dir_fd=root)
            except OSError as error:
                yield Entry(relative, Kind.UNREADABLE, reason=error.strerror or str(error))
                continue
            try:
                try:
                    with os.scandir(folder) as listing:
                        names = sorted(entry.name for entry in listing)
                except OSError as error:
                    yield Entry(relative, Kind.UNREADABLE, reason=error.strerror or str(error))
                    continue
                below: list[str] = []
                for name in names:
                    path = f"{relative}/{name}" if relative else name
                    seen += 1
                    if seen > MAX_ENTRIES:
                        yield Entry(relative, Kind.TOO_MANY)
                        return
                    entry = _entry(folder, name, path)
                    yield entry
                    if entry.kind is Kind.FOLDER:
                        below.append(path)
                for path in reversed(below):
                    if depth + 1 >= MAX_DEPTH:
                        yield Entry(path, Kind.TOO_DEEP)
                    else:
                        pending.append((path, depth + 1))
            finally:
                os.close(folder)
    finally:
        os.close(root)


def _entry(folder: int, name: str, path: str) -> Entry:
    try:
        st = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except OSError as error:
        return Entry(path, Kind.UNREADABLE, reason=error.strerror or str(error))
    kind = _kind(st.st_mode)
    if kind is Kind.FILE:
        kind, data, reason = _read_file(folder, name)
        return Entry(path, kind, data, reason)
    if kind is Kind.LINK:
        try:
            target = os.readlink(name, dir_fd=folder)
        except OSError as error:
            return Entry(path, Kind.LINK, reason=error.strerror or str(error))
        return Entry(path, Kind.LINK, os.fsencode(target), f"to {target}")
    return Entry(path, kind)
