"""Computes the image tag from the build context's contents, so a tag names exactly one build.

ECR repositories here have immutable tags: a tag must change whenever what goes into the
image changes, and must stay the same when nothing did, so an unchanged stack neither
rebuilds nor tries to overwrite a tag.
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


def content_tag(root: Path, files: Iterable[Path]) -> str:
    """`src-` and 16 hex digits of a digest over each file's relative path and bytes."""
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return f"src-{digest.hexdigest()[:16]}"
