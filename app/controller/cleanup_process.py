"""The run's clean-up process: a small process that removes the run's secrets and unfinished
files if the controller dies without doing so itself (``kill -9``, the OOM killer, a crash).

The controller starts it with the paths to remove and keeps the write end of a pipe to it; the
process only reads that pipe. The kernel closes the pipe however the controller ends, so the
process wakes then and removes what is left. After a normal end it finds nothing to remove (the
controller cleaned up first, and waits for it). It runs in its own session, so a Ctrl-C or a
hang-up aimed at the controller's terminal does not reach it. Standard library only, run by
path with ``python -I -S``: it imports nothing of the app, and what only the controller's side
or a removal needs (subprocess, shutil, typing) is imported there, since the process starts
while the run's services do and takes the same cores.
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Sequence
    from types import TracebackType
    from typing import Final

PROGRAM: Final = Path(__file__).resolve()
# A process of the dead run (a tool finishing its last write) may still add a file while the
# tree is removed; a few passes a moment apart outlast it.
PASSES: Final = 5
PASS_INTERVAL_SECONDS: Final = 0.2
EXIT_TIMEOUT_SECONDS: Final = 30.0


def remove(path: Path) -> None:
    """Removes a file or a whole tree (never following a link out of it); gone already is fine."""
    try:
        if path.is_dir() and not path.is_symlink():
            import shutil

            shutil.rmtree(path)
        else:
            path.unlink()
    except FileNotFoundError:
        pass


def remove_all(paths: Sequence[Path]) -> list[str]:
    """Removes each path, in order; returns what could not be removed, after every pass."""
    failures: list[str] = []
    for attempt in range(PASSES):
        failures = []
        for path in paths:
            try:
                remove(path)
            except OSError as error:
                failures.append(f"{path}: {error.strerror}")
        if not failures:
            break
        if attempt + 1 < PASSES:
            time.sleep(PASS_INTERVAL_SECONDS)
    return failures


def main(argv: list[str]) -> int:
    for stop in (signal.SIGINT, signal.SIGHUP):
        signal.signal(stop, signal.SIG_IGN)
    # Blocks until the controller's end of the pipe is closed: at its exit, or by its death.
    while sys.stdin.buffer.read(4096):
        pass
    failures = remove_all([Path(arg) for arg in argv[1:]])
    for failure in failures:
        print(f"analyst clean-up process: could not remove {failure}", file=sys.stderr)
    return 1 if failures else 0


class CleanupProcess:
    """The controller's side: starts the clean-up process for ``paths``; at the end, lets it go."""

    def __init__(self, paths: Sequence[Path]) -> None:
        self.paths = list(paths)
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def __enter__(self) -> CleanupProcess:
        import subprocess

        self._process = subprocess.Popen(
            [sys.executable, "-I", "-S", str(PROGRAM), *map(str, self.paths)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        assert process.stdin is not None
        process.stdin.close()
        import subprocess

        try:
            process.wait(timeout=EXIT_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
