"""The staged worker and loader, and the control's own copy, byte-compiled by the interpreter
that runs them, once per run.

A tool process may not write bytecode (the code directory is read-only to it, and its
environment sets PYTHONDONTWRITEBYTECODE), so without this every one of a run's tool processes
compiles the worker's modules from source again. The system interpreter compiles them itself,
so the files carry its own cache tag and magic number; it runs beside the services' start, and
the run waits for it before its first tool process.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Final

from app.controller.services.die_with_controller import dying_with_controller
from app.core.errors import RunStopped
from app.core.run_tree import INTERPRETER

COMPILE_TIMEOUT_SECONDS: Final = 60


class WorkerBytecode:
    """``compileall`` of the staged code directories, started at once; ``wait`` before any
    tool runs."""

    def __init__(self, *code_dirs: Path) -> None:
        self.code_dirs = code_dirs
        self._process: subprocess.Popen[bytes] | None = subprocess.Popen(
            # -I: nothing from the environment or a site directory changes what is compiled.
            # Tied to the controller's life, so it never writes into a tree being removed.
            dying_with_controller(
                [INTERPRETER, "-I", "-m", "compileall", "-q", *map(str, code_dirs)]
            ),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd="/",
        )

    def wait(self) -> None:
        """Waits for the compile; leaves the bytecode readable by the tool's uid, or raises."""
        process, self._process = self._process, None
        if process is None:
            return
        try:
            output, _ = process.communicate(timeout=COMPILE_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            output = b"timed out"
        if process.returncode != 0:
            said = output.decode("utf-8", "replace").strip()[-500:]
            raise RunStopped(
                f"{INTERPRETER} could not compile the staged worker in "
                f"{', '.join(map(str, self.code_dirs))}: "
                f"{said or f'exit {process.returncode}'}",
                "the system interpreter must run the worker's code; check it is Python 3.11+",
            )
        # The same modes stage_worker gives the sources: whatever the umask made of them.
        for code_dir in self.code_dirs:
            for cache in code_dir.rglob("__pycache__"):
                os.chmod(cache, 0o755)
                for compiled in cache.iterdir():
                    os.chmod(compiled, 0o644)

    def close(self) -> None:
        """Stops a compile still running (the run ended before its first tool process)."""
        process, self._process = self._process, None
        if process is not None:
            process.kill()
            process.communicate()
