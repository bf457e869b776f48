"""The scans that keep every secret out of the run's files: each document before it is written,
and every file of the run directory read back after the last write."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from app.core.errors import RunStopped
from app.core.tree import Kind, walk


class KeyLeak(RunStopped):
    """A secret's bytes were found in a document or a file: the run stops."""


class ScanIncomplete(RunStopped):
    """The scan met entries it could not read as regular files: the run stops, naming them."""


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
    """Reads back every entry under ``directory`` and looks for each secret in its bytes, its
    name and a link's target; returns the regular files read.

    The list comes from the same walk that did the reading (app/core/tree.py), so the count it
    reports is the count of files scanned. Anything that is not a regular file the walk could
    read whole (a FIFO, a link, a device, a file too large or closed to it, a folder too deep)
    raises ScanIncomplete naming each: a scan that could not read a candidate must not report
    success. Secrets found raise KeyLeak first.
    """
    _check_secrets(secrets)
    scanned: list[str] = []
    leaked: list[str] = []
    unread: list[str] = []
    for entry in walk(directory):
        if found := _leaks(os.fsencode(entry.relative), secrets):
            leaked.append(f"{', '.join(found)} in the name {entry.relative}")
        if found := _leaks(entry.data, secrets):
            place = entry.relative
            if entry.kind is Kind.LINK:
                place = f"the target of the link {place}"
            leaked.append(f"{', '.join(found)} in {place}")
        if entry.kind is Kind.FILE:
            scanned.append(entry.relative)
        elif entry.kind is not Kind.FOLDER:
            unread.append(entry.described)
    if leaked:
        raise KeyLeak("; ".join(leaked))
    if unread:
        raise ScanIncomplete(
            f"not regular files the scan could read, so not scanned: {'; '.join(unread)}"
        )
    return sorted(scanned)
