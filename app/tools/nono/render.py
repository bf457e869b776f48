"""Writes the committed nono profiles under policies/nono/, or with --check reports drift."""

from __future__ import annotations

import sys
from pathlib import Path

from app.tools.committed import drifted_files, render_main, write_files
from app.tools.nono.policy import COMMITTED_DIR, Widening, committed_profiles, to_json


def rendered(widening: Widening | None = None) -> dict[str, str]:
    """File name → the exact text the generator produces for it."""
    profiles = committed_profiles(widening or Widening())
    return {f"{role}.json": to_json(profile) for role, profile in profiles.items()}


def write(directory: Path, widening: Widening | None = None) -> list[Path]:
    return write_files(directory, rendered(widening))


def drifted(directory: Path, widening: Widening | None = None) -> list[Path]:
    """The committed files that are missing or differ from what the generator renders."""
    return drifted_files(directory, rendered(widening))


def main(argv: list[str] | None = None) -> int:
    return render_main(
        argv,
        module="app.tools.nono.render",
        description=__doc__,
        default_dir=COMMITTED_DIR,
        render=rendered,
        what="nono profiles",
    )


if __name__ == "__main__":
    sys.exit(main())
