"""The scans that keep every secret out of the run's files: each document before it is written,
and every file of the run directory read back after the last write."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from app.core.errors import RunStopped


class KeyLeak(RunStopped):
    """A secret's bytes were found in a document or a file: the run stops."""


def _check_secrets(secrets: Mapping[str, bytes]) -> None:
    # An empty value is in every byte string: it would make every file a leak, or, checked
    # the other way round, hide a missing key. Refuse it outright.
    empty = [name for name, value in secrets.items() if not value]
    if not secrets or empty:
        raise ValueError(f"nothing to scan for: {', '.join(empty) or 'no secrets given'}")


def _leaks(data: bytes, secrets: Mapping[str, bytes]) -> list[str]:
    return [name for name, value in secrets.items() if value in data]


def scan_documents(documents: Mapping[str, bytes], secrets: Mapping[str, bytes]) -> None:
    """Looks for every secret's bytes in each document before any of them is written."""
    _check_secrets(secrets)
    leaked = [
        f"{', '.join(found)} in {name}"
        for name, data in sorted(documents.items())
        if (found := _leaks(data, secrets))
    ]
    if leaked:
        raise KeyLeak(f"{'; '.join(leaked)}: nothing was written")


def write_scanned(
    directory: Path, documents: Mapping[str, bytes], secrets: Mapping[str, bytes]
) -> None:
    """Scans every document, then writes the very same bytes: nothing re-encodes in between."""
    scan_documents(documents, secrets)
    for name, data in documents.items():
        (directory / name).write_bytes(data)


def scan_directory(directory: Path, secrets: Mapping[str, bytes]) -> list[str]:
    """Reads back every file under directory and looks for each secret; returns the files read.

    The list comes from the same walk that did the reading, so the count it reports is the
    count of files scanned. A file that cannot be read raises: a scan that could not read a
    candidate must not report success.
    """
    _check_secrets(secrets)
    scanned: list[str] = []
    leaked: list[str] = []
    for root, dirs, files in os.walk(directory, onerror=_raise):
        dirs.sort()
        for name in sorted(files):
            path = Path(root) / name
            relative = str(path.relative_to(directory))
            if found := _leaks(path.read_bytes(), secrets):
                leaked.append(f"{', '.join(found)} in {relative}")
            scanned.append(relative)
    if leaked:
        raise KeyLeak("; ".join(leaked))
    return sorted(scanned)


def _raise(error: OSError) -> None:
    raise error
