"""Where a run's report files go (``--out``): checked before anything starts, claimed for the run,
and filled all at once.

The target must be new, or an existing empty folder (which the run then fills). The files are
written into a staging folder beside it, on the same filesystem, synced, and the staging folder
is renamed onto the target in one step: the target holds either nothing of the run or the whole
report, whatever fails and whenever. A run claims its target by holding a lock on its staging
folder, so a second run given the same ``--out`` is refused at once while the first one runs,
and finds the folder full after.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final

from app.core.errors import BadInput, RunStopped, shown

STAGING_MARK: Final = ".partial-"
OPTION: Final = "--out"


class OutUnusable(BadInput):
    """The report folder cannot be used; the message names it and the fix."""


class OutNotWritten(RunStopped):
    """The report files could not be put in place; nothing of them is in the report folder."""


@dataclass(frozen=True)
class OutTarget:
    """A checked report folder. ``create_parent``: the parent is the run's own default (runs/
    or the demo's folder) and may be made; a parent the user named must exist."""

    path: Path
    create_parent: bool

    def staging_for(self, run_id: str) -> Path:
        return self.path.parent / f".{self.path.name}{STAGING_MARK}{run_id}"


def _refuse(path: Path, problem: str, remedy: str) -> OutUnusable:
    return OutUnusable(f"{OPTION} {shown(path)}: {problem}", remedy)


def _check_text(path: Path) -> None:
    if not str(path).isprintable():
        raise _refuse(
            path,
            "holds a control or invisible character (or bytes that are not UTF-8): the run's "
            "last lines name the report's files, one line each",
            "pass a path of printable characters",
        )


def check_target(path: Path, *, create_parent: bool) -> OutTarget:
    """Refuses a report folder that is a file, a link, a mount point or not empty, whose parent
    is missing, or whose name a line of output cannot carry; creates nothing."""
    _check_text(path)
    path = Path(os.path.abspath(path))
    try:
        st: os.stat_result | None = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as error:
        problem = f"cannot be examined ({error.strerror})"
        raise _refuse(path, problem, "pass another folder") from None
    remedy = "pass a new folder, or an existing empty one"
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            raise _refuse(path, "is a symbolic link", "pass the folder itself, or a new one")
        if not stat.S_ISDIR(st.st_mode):
            raise _refuse(path, "is a file, not a folder", remedy)
        _require_empty(path, remedy)
        if os.stat(path.parent).st_dev != st.st_dev:
            # A rename cannot replace a mount point: the report could not be put in place.
            raise _refuse(path, "is a mount point", "pass a new folder inside it")
    parent = path.parent
    if not create_parent and not parent.is_dir():
        raise _refuse(path, f"its parent {parent} is not an existing folder", "create it first")
    return OutTarget(path, create_parent)


def check_parent(path: Path) -> None:
    """A folder the run makes its report folders in (runs/, the demo's --out): if it exists,
    it must be a folder."""
    _check_text(path)
    path = Path(os.path.abspath(path))
    for step in [*reversed(path.parents), path]:
        if step.exists() and not step.is_dir():
            raise _refuse(path, f"{step} is a file, not a folder", "pass a folder, or a new path")


def check_apart(out: Path, work_base: Path) -> None:
    """Refuses a report folder (or the demo's folder of them) and a work directory that are the
    same folder or one inside the other: a run's tree in the report folder would be published
    with it (or keep it from being published), and a report in the work directory would sit
    among the run trees a later run sweeps."""
    report = PurePosixPath(os.path.realpath(out))
    work = PurePosixPath(os.path.realpath(work_base))
    if report == work:
        relation = "is the work directory itself"
    elif work in report.parents:
        relation = "lies inside the work directory"
    elif report in work.parents:
        relation = "holds the work directory"
    else:
        return
    raise _refuse(
        out,
        f"{relation} (--workdir {shown(work_base)})",
        "give the report files and the run's private directories separate folders",
    )


def _require_empty(path: Path, remedy: str) -> None:
    try:
        with os.scandir(path) as entries:
            occupied = next(entries, None) is not None
    except OSError as error:
        raise _refuse(path, f"cannot be listed ({error.strerror})", remedy) from None
    if occupied:
        raise _refuse(path, "is not empty; a run never mixes its files with others'", remedy)


class OutClaim:
    """The run's hold on its report folder: the staging folder beside it, locked for the run's
    life and removed at the end unless ``publish`` renamed it onto the target."""

    def __init__(self, target: OutTarget, run_id: str) -> None:
        self.target = target
        self.staging = target.staging_for(run_id)
        self._lock: int | None = None
        self._published = False

    def __enter__(self) -> OutClaim:
        path, parent = self.target.path, self.target.path.parent
        try:
            if self.target.create_parent:
                parent.mkdir(parents=True, exist_ok=True)
            parent_fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as error:
            raise _refuse(
                path, f"cannot use {parent} ({error.strerror})", "pass another folder"
            ) from None
        try:
            # Claims in this folder are decided one at a time: two runs never both see it free.
            fcntl.flock(parent_fd, fcntl.LOCK_EX)
            self._refuse_a_live_claim()
            check_target(path, create_parent=False)  # it may have been filled since the check
            try:
                self.staging.mkdir(mode=0o755)
            except OSError as error:
                raise _refuse(
                    path,
                    f"cannot create a folder in {parent} ({error.strerror})",
                    "pass a folder on a filesystem this user can write",
                ) from None
            self._lock = os.open(self.staging, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(parent_fd)
        return self

    def _refuse_a_live_claim(self) -> None:
        """Another run's staging folder for the same target: refused if that run is alive, and
        removed if it died without cleaning up."""
        parent, prefix = self.target.path.parent, f".{self.target.path.name}{STAGING_MARK}"
        with os.scandir(parent) as entries:
            claims = [Path(e.path) for e in entries if e.name.startswith(prefix) and e.is_dir()]
        for claim in claims:
            fd = os.open(claim, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise _refuse(
                    self.target.path,
                    "another run is writing its report there now",
                    "give each run its own --out",
                ) from None
            finally:
                os.close(fd)
            shutil.rmtree(claim, ignore_errors=True)

    def publish(self, files: Mapping[str, Path], *, kept_elsewhere: str | None) -> Path:
        """Copies the files into the staging folder, syncs them, and renames the folder onto the
        target in one step. Raises OutNotWritten, leaving the target as it was, and saying where
        else the report lasts (``kept_elsewhere``: the cluster's store, a kept work tree), or
        that it lasts nowhere (None: the local store ends with the run)."""
        try:
            for name, source in files.items():
                _copy_synced(source, self.staging / name)
            _sync(self.staging)
            os.rename(self.staging, self.target.path)
            self._published = True
            _sync(self.target.path.parent)
        except OSError as error:
            if error.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
                problem = "was filled or replaced by something else while the run ran"
            else:
                problem = f"the report could not be written ({error.strerror})"
            if kept_elsewhere is None:
                raise OutNotWritten(
                    f"{OPTION} {self.target.path}: {problem}; nothing of this run is in it, and "
                    "the local store ends with the run, so this report is kept nowhere",
                    "free space or pass another --out, and run the case again",
                ) from error
            raise OutNotWritten(
                f"{OPTION} {self.target.path}: {problem}; nothing of this run is in it",
                f"{kept_elsewhere}; free space or pass another --out for the next run",
            ) from error
        return self.target.path

    def __exit__(self, *exc_info: object) -> None:
        if not self._published:
            shutil.rmtree(self.staging, ignore_errors=True)
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None


def _copy_synced(source: Path, target: Path) -> None:
    with source.open("rb") as reader, target.open("xb") as writer:
        shutil.copyfileobj(reader, writer)
        writer.flush()
        os.fsync(writer.fileno())
    os.chmod(target, 0o644)


def _sync(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
