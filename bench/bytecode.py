"""Every figure is taken with the checkout's modules byte-compiled first, and its report page's
templates compiled, as the image ships them (Dockerfile.analyst compiles both at build).

Without this, a shell that sets PYTHONDONTWRITEBYTECODE (as the image's own environment does)
makes every case compile the controller's modules from source again: here some 150 ms of CPU
at each start, a cost that grows with the size of the code rather than with what a run does,
and which would make two checkouts of different sizes differ by more than their runs do."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Final

# What a case imports from a checkout: its own packages (site-packages compile at install).
COMPILED: Final = ("app", "bench")
TEMPLATES: Final = Path("app", "controller", "report_templates.py")


def byte_compile(root: Path) -> None:
    """Compiles ``root``'s packages and templates with this interpreter; what is already
    current is left as it is."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "-j", "0", *COMPILED],
        cwd=root,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    # A checkout from before the report page has no templates to compile.
    if (root / TEMPLATES).is_file():
        subprocess.run(
            [sys.executable, "-m", "app.controller.report_templates"],
            cwd=root,
            check=True,
            stdout=subprocess.DEVNULL,
        )
