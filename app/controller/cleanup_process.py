"""The run's clean-up process: a small process that removes the run's secrets and unfinished
files if the controller dies without doing so itself (``kill -9``, the OOM killer, a crash).

The controller starts it with the paths to remove and keeps the write end of a pipe to it; the
process only reads that pipe. The kernel closes the pipe however the controller ends, so the
process wakes then and removes what is left. After a normal end it finds nothing to remove (the
controller cleaned up first, and waits for it). It runs in its own session, so a Ctrl-C or a
hang-up aimed at the controller's terminal does not reach it. Standard library only, run by
path with ``python -I -S``: it imports nothing of the app, and what only the controller's side
needs (subprocess, typing) is imported there, since the process starts while the run's
services do and takes the same cores.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
import time
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Sequence
    from typing import Final

PROGRAM: Final = Path(__file__).resolve()
# A process of the dead run (a tool finishing its last write) may still add a file while the
# tree is removed; a few passes a moment apart outlast it.
PASSES: Final = 5
PASS_INTERVAL_SECONDS: Final = 0.2
EXIT_TIMEOUT_SECONDS: Final = 30.0


def remove(path: Path) -> None:
    """Removes a file, a link or a whole tree; gone already is fine (the controller and the
    clean-up process may remove the same paths).

    A tree may hold whatever a tool process left there: folders nested past any recursion
    limit or path length, folders without read, write or search permission, links, FIFOs,
    devices. It is removed one folder at a time, each opened relative to the last, with only
    that folder open: nothing is followed, nothing is read but names, and going back up checks
    that the folder reached is the one that was left.
    """
    try:
        parent = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        if _unlink(parent, path.name):
            _remove_folder(parent, path.name)
    finally:
        os.close(parent)


def _unlink(folder: int, name: str) -> bool:
    """Removes ``name`` unless it is a folder (a link is removed, never followed); whether it
    is a folder still to remove."""
    for attempt in range(2):
        try:
            os.unlink(name, dir_fd=folder)
        except FileNotFoundError:
            return False
        except IsADirectoryError:
            return True
        except PermissionError:
            if attempt:
                raise
            _open_up(folder)
            continue
        return False
    return False


def _open_up(folder: int) -> None:
    """Gives the open ``folder`` back its owner's read, write and search permission, which a
    tool at the controller's uid (the cluster's) may have taken away; root needs none."""
    os.chmod(f"/proc/self/fd/{folder}", 0o700)


def _open_folder(parent: int, name: str) -> int | None:
    """``name`` in ``parent`` opened as a folder, never through a link; None if it is gone or
    is no longer a folder (then removed)."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(name, flags, dir_fd=parent)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        # Replaced meanwhile by a file, or by a link (O_NOFOLLOW on a link: ENOTDIR or ELOOP).
        _unlink(parent, name)
        return None
    except OSError as error:
        if error.errno == errno.ELOOP:
            _unlink(parent, name)
            return None
        if error.errno != errno.EACCES:
            raise
    # Unreadable: opened by path alone, which needs no permission, and opened up.
    handle = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    try:
        _open_up(handle)
    finally:
        os.close(handle)
    return os.open(name, flags, dir_fd=parent)


def _empty_of_files(folder: int) -> str | None:
    """Removes every entry of ``folder`` that is not a folder; returns a subfolder's name, if
    there is one left."""
    subfolder = None
    with os.scandir(folder) as entries:
        for entry in entries:
            # A folder, or an entry that has become one since it was listed.
            if entry.is_dir(follow_symlinks=False) or _unlink(folder, entry.name):
                subfolder = subfolder or entry.name
    return subfolder


def _identity(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def _remove_folder(parent: int, name: str) -> None:
    """Removes the folder ``name`` in ``parent`` and everything in it, at any depth, with one
    folder of it open at a time."""
    import errno

    current = _open_folder(parent, name)
    if current is None:
        return
    # The way down: each folder's name, and the identity of the folder it is in.
    down: list[tuple[str, tuple[int, int]]] = []
    try:
        while True:
            try:
                subfolder = _empty_of_files(current)
            except PermissionError:
                _open_up(current)
                continue
            if subfolder is not None:
                inner = _open_folder(current, subfolder)
                if inner is not None:
                    down.append((subfolder, _identity(current)))
                    os.close(current)
                    current = inner
                continue
            if not down:
                break
            emptied, identity = down.pop()
            up = os.open("..", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=current)
            os.close(current)
            current = up
            if _identity(current) != identity:
                raise OSError(errno.ESTALE, f"a folder of {name} was moved while it was removed")
            _remove_empty(current, emptied)
    finally:
        os.close(current)
    _remove_empty(parent, name)


def _remove_empty(parent: int, name: str) -> None:
    try:
        os.rmdir(name, dir_fd=parent)
    except FileNotFoundError:
        pass
    except PermissionError:
        _open_up(parent)
        os.rmdir(name, dir_fd=parent)


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

    def __exit__(self, *exc_info: object) -> None:
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
