"""Committed policy files: write what a generator renders, or report where the files drifted."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path


def write_files(directory: Path, files: dict[str, str]) -> list[Path]:
    """Writes each rendered file; returns the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in files.items():
        path = directory / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def drifted_files(directory: Path, files: dict[str, str]) -> list[Path]:
    """The committed files that are missing or differ from what the generator renders."""
    return [
        directory / name
        for name, text in files.items()
        if not (directory / name).is_file()
        or (directory / name).read_text(encoding="utf-8") != text
    ]


def render_main(
    argv: list[str] | None,
    *,
    module: str,
    description: str | None,
    default_dir: Path,
    render: Callable[[], dict[str, str]],
    what: str,
) -> int:
    """The shared `python -m <module> [--check] [--dir D]` command of each layer's renderer."""
    parser = argparse.ArgumentParser(prog=f"python -m {module}", description=description)
    parser.add_argument(
        "--check", action="store_true", help="exit 1, naming each file that differs"
    )
    parser.add_argument("--dir", type=Path, default=default_dir, help=f"default: {default_dir}")
    options = parser.parse_args(argv)
    if options.check:
        bad = drifted_files(options.dir, render())
        for path in bad:
            print(f"{path}: differs from the generator; run python -m {module}", file=sys.stderr)
        if not bad:
            print(f"the {what} in {options.dir} match the generator")
        return 1 if bad else 0
    for path in write_files(options.dir, render()):
        print(f"wrote {path}")
    return 0
