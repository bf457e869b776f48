"""Writes the committed nono profiles under policies/nono/, or with --check reports drift."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from app.tools.nono.profiles import COMMITTED_DIR, Widening, committed_profiles, to_json


def rendered(widening: Widening | None = None) -> dict[str, str]:
    """File name → the exact text the generator produces for it."""
    profiles = committed_profiles(widening or Widening())
    return {f"{role}.json": to_json(profile) for role, profile in profiles.items()}


def write(directory: Path, widening: Widening | None = None) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in rendered(widening).items():
        path = directory / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def drifted(directory: Path) -> list[Path]:
    """The committed files that are missing or differ from what the generator renders."""
    return [
        directory / name
        for name, text in rendered().items()
        if not (directory / name).is_file()
        or (directory / name).read_text(encoding="utf-8") != text
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app.tools.nono.render", description=__doc__)
    parser.add_argument(
        "--check", action="store_true", help="exit 1, naming each file that differs"
    )
    parser.add_argument("--dir", type=Path, default=COMMITTED_DIR, help="default: policies/nono")
    options = parser.parse_args(argv)
    if options.check:
        bad = drifted(options.dir)
        for path in bad:
            print(
                f"{path}: differs from the generator; run python -m app.tools.nono.render",
                file=sys.stderr,
            )
        if not bad:
            print(f"the nono profiles in {options.dir} match the generator")
        return 1 if bad else 0
    for path in write(options.dir):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
