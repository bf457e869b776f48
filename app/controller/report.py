"""The recommendation report, and the scans that keep the supplier key out of the run's files."""

from __future__ import annotations

import os
from pathlib import Path

from app.controller.case import Case
from app.controller.gates import Recommendation


class KeyLeak(RuntimeError):
    """The supplier key's bytes were found in a document or a file: the run stops."""


def render_recommendation(case: Case, supplier_id: str, answer: Recommendation) -> bytes:
    """The report: the headline from the gate-checked id, then the model's own analysis."""
    entry = case.supplier(supplier_id)
    head = (
        "# Procurement recommendation\n\n"
        f"**Case:** {case.case_id}, {case.title}\n\n"
        f"**Recommended supplier:** {entry.name} (`{entry.id}`)\n\n"
    )
    return (head + answer.analysis.strip() + "\n").encode("utf-8")


def scan_documents(documents: dict[str, bytes], key: bytes) -> None:
    """Looks for the key's bytes in each document before any of them is written."""
    if not key:
        raise ValueError("the supplier key to scan for is empty")
    leaked = [name for name, data in documents.items() if key in data]
    if leaked:
        raise KeyLeak(
            f"the supplier key appears in {', '.join(sorted(leaked))}; nothing was written"
        )


def write_scanned(directory: Path, documents: dict[str, bytes], key: bytes) -> None:
    """Scans every document, then writes the very same bytes: nothing re-encodes in between."""
    scan_documents(documents, key)
    for name, data in documents.items():
        (directory / name).write_bytes(data)


def scan_directory(directory: Path, key: bytes) -> list[str]:
    """Reads back every file under directory and looks for the key; returns the files it read.

    The list comes from the same walk that did the reading, so the count it reports is the
    count of files scanned. A file that cannot be read raises: a scan that could not read a
    candidate must not report success.
    """
    if not key:
        raise ValueError("the supplier key to scan for is empty")
    scanned: list[str] = []
    leaked: list[str] = []
    for root, dirs, files in os.walk(directory, onerror=_raise):
        dirs.sort()
        for name in sorted(files):
            path = Path(root) / name
            relative = str(path.relative_to(directory))
            if key in path.read_bytes():
                leaked.append(relative)
            scanned.append(relative)
    if leaked:
        raise KeyLeak(f"the supplier key appears in {', '.join(leaked)}")
    return sorted(scanned)


def _raise(error: OSError) -> None:
    raise error
