"""Computes a digest of what goes into an image, recorded on the image as a label.

Images are pushed by digest, without a tag (infra/components/images.py), so this is never a
registry name: it lets a reader match an image in ECR to the source it was built from.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

# What the Dockerfiles copy, besides the Dockerfile itself.
CONTEXT_PATHS = ("app", "cases", "policies", "requirements-runtime.txt", "requirements.lock")
_SKIPPED_PARTS = {"__pycache__", ".pytest_cache", ".ruff_cache"}


def context_files(root: Path, dockerfile: str) -> list[Path]:
    """The files whose contents decide an image's tag, in a stable order."""
    files: list[Path] = [root / dockerfile]
    for entry in CONTEXT_PATHS:
        path = root / entry
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            files.extend(
                p
                for p in path.rglob("*")
                if p.is_file() and not _SKIPPED_PARTS.intersection(p.parts) and p.suffix != ".pyc"
            )
    return sorted(files)


def source_digest(root: Path, files: Iterable[Path]) -> str:
    """SHA-256 over each file's relative path and bytes, in order, as 64 hex digits."""
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()
