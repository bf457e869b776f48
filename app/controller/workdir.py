"""The work directory (``--workdir``): checked before anything starts, and each run's claim on its
own tree in it.

A run holds an exclusive lock on ``<tree>/run.lock`` for its whole life; the kernel drops the lock
however the process ends. So a later run can tell the tree of a run whose controller died (the
lock file is there, the lock is free) and removes it, saying so. A tree kept on purpose
(``--keep-workdir``) loses its lock file when its run ends, and is left alone, as is anything
else in the directory. Creating a tree and sweeping both hold a lock on the directory itself, so
a sweep never sees a tree half made.

Which directory: ``--workdir``, else ``ANALYST_WORKDIR``, else each user's own default,
``$XDG_RUNTIME_DIR/analyst`` (a user's runtime directory, when it is theirs and private) or
``/var/tmp/analyst-<uid>``. A base the run makes is 0700 (0711 for a root controller, whose
tools run at another uid and must pass through it to their own folders); the default, in a
folder every user may write, is refused when it is not this user's or others may write it.
`doctor` and `run` choose and check it with the same functions, in the same words.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import stat
import tempfile
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final

from app.controller.cleanup_process import remove
from app.core.errors import BadInput, shown
from app.core.roles import Layer
from app.core.run_tree import (
    MAX_SOCKET_PATH_BYTES,
    RUN_ID_CHARS,
    RunPaths,
    ToolIdentity,
    create_run,
    longest_socket_path,
)
from app.tools.registry import answers

RUN_LOCK: Final = "run.lock"
OPTION: Final = "--workdir"
VARIABLE: Final = "ANALYST_WORKDIR"
SHARED_DEFAULT: Final = "/var/tmp/analyst-<uid>"
_RUN_ID: Final = re.compile(rf"^[0-9a-f]{{{RUN_ID_CHARS}}}$")


class WorkdirUnusable(BadInput):
    """The work directory cannot hold a run; the message names it and the fix."""


def _refuse(path: Path, problem: str, remedy: str, named: str = OPTION) -> WorkdirUnusable:
    return WorkdirUnusable(f"{named} {shown(path)}: {problem}", remedy)


@dataclass(frozen=True)
class WorkBase:
    """The work directory a run uses, and where it came from: ``named`` is how a message
    names it; ``own`` marks the per-user default, which must be this user's alone."""

    path: Path
    named: str = OPTION
    own: bool = False


def local_default(environ: Mapping[str, str], euid: int) -> Path:
    """This user's own default: ``$XDG_RUNTIME_DIR/analyst`` when that directory is theirs and
    private (never for root, whose tools run at another uid and could not pass through it),
    else ``/var/tmp/analyst-<uid>``."""
    runtime = environ.get("XDG_RUNTIME_DIR", "")
    if euid != 0 and runtime and os.path.isabs(runtime):
        try:
            st = os.stat(runtime)
        except OSError:
            st = None
        private = st is not None and stat.S_ISDIR(st.st_mode) and not st.st_mode & 0o077
        if private and st is not None and st.st_uid == euid:
            return Path(runtime) / "analyst"
    return Path(f"/var/tmp/analyst-{euid}")


def choose_work_base(
    given: Path | None, environ: Mapping[str, str], mode_default: Path | None
) -> WorkBase:
    """``--workdir``, else ``ANALYST_WORKDIR``, else the mode's (the cluster's run volume), else
    this user's own default."""
    if given is not None:
        return WorkBase(given)
    if environ.get(VARIABLE):
        return WorkBase(Path(environ[VARIABLE]), f"{VARIABLE}=")
    if mode_default is not None:
        return WorkBase(mode_default, "the work directory")
    return WorkBase(local_default(environ, os.geteuid()), "the default work directory", own=True)


def check_chosen(base: WorkBase, layers: Collection[Layer]) -> Path:
    """check_work_base for a chosen base, named as it was chosen."""
    return check_work_base(base.path, layers, named=base.named, own=base.own)


def work_dir_conflicts(layers: Iterable[Layer]) -> dict[PurePosixPath, str]:
    """The host paths where a tool process of these layers sees something other than the
    controller does, each with a clause saying what: a work directory there would be hidden from
    the tools (a false FAIL) or shown to them (a real leak). Each layer reads them from its own
    policy; the first layer to name a place gives its clause."""
    conflicts: dict[PurePosixPath, str] = {}
    for layer in layers:
        for place, why in answers(layer).work_dir_conflicts().items():
            conflicts.setdefault(place, why)
    return conflicts


def check_work_base(
    base: Path, layers: Collection[Layer], *, named: str = OPTION, own: bool = False
) -> Path:
    """Refuses a work directory that any part of a run under these layers would trip over:
    relative, a file, no parent, where a tool process sees something else than the controller,
    a name a layer or a check line cannot carry, too long for the run's sockets, or not
    writable; and with ``own`` (the per-user default) one that is another user's or that
    others may write. Creates nothing: the writability probe is a folder made and removed at
    once."""
    _check_text(base, layers, named)
    if not base.is_absolute():
        raise _refuse(base, "must be an absolute path", "for example /var/tmp/work", named)
    _check_length(base, named)
    try:
        st: os.stat_result | None = os.stat(base)
    except FileNotFoundError:
        st = None
    except OSError as error:
        problem = f"cannot be examined ({error.strerror})"
        raise _refuse(base, problem, _elsewhere(), named) from None
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise _refuse(base, "is a file, not a folder", "pass a folder, or a new path", named)
    if st is None and not base.parent.is_dir():
        raise _refuse(
            base,
            f"its parent {shown(base.parent)} is not an existing folder",
            "create it first",
            named,
        )
    if own and st is not None:
        _check_own(base, st, named)
    conflicts = work_dir_conflicts(layers)
    real = PurePosixPath(os.path.realpath(base))
    for place, why in sorted(conflicts.items()):
        if real == place or place in real.parents:
            raise _refuse(
                base,
                f"{shown(real)} lies in {place}, {why}",
                f"pass a folder outside {', '.join(sorted(map(str, conflicts)))}, such as the "
                f"default {SHARED_DEFAULT}",
                named,
            )
    _check_writable(base, exists=st is not None, named=named)
    return base


def _elsewhere() -> str:
    return (
        f"pass a folder this user (uid {os.geteuid()}) can write, with {OPTION} or {VARIABLE}; "
        f"with neither, each user has their own ({SHARED_DEFAULT})"
    )


def _check_own(base: Path, st: os.stat_result, named: str) -> None:
    """The per-user default sits where every user may create folders: one made by another
    user, or open to others' writes, could hold what another put there."""
    euid = os.geteuid()
    if st.st_uid != euid:
        raise _refuse(
            base,
            f"belongs to uid {st.st_uid}, not to this user (uid {euid})",
            f"remove it, or choose another folder with {OPTION} or {VARIABLE}",
            named,
        )
    if st.st_mode & 0o022:
        raise _refuse(
            base,
            f"may be written by other users ({stat.filemode(st.st_mode)})",
            f"chmod go-w {shown(base)}, or remove it and let the run make it",
            named,
        )


def _check_text(base: Path, layers: Collection[Layer], named: str) -> None:
    text = str(base)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise _refuse(
            base,
            "is not valid UTF-8: the run's paths go into its JSON records and check lines",
            "pass a path made of UTF-8 text",
            named,
        ) from None
    if not text.isprintable():
        raise _refuse(
            base,
            "holds a control or invisible character: every check line names the run's paths, "
            "one line each",
            "pass a path of printable characters",
            named,
        )
    for layer in layers:
        refused = answers(layer).work_dir_name_refused(base)
        if refused is not None:
            problem, remedy = refused
            raise _refuse(base, problem, remedy, named)


def _check_length(base: Path, named: str) -> None:
    socket_path = longest_socket_path(base)
    size = len(os.fsencode(socket_path))
    if size > MAX_SOCKET_PATH_BYTES:
        spare = size - len(os.fsencode(base))
        below_run = socket_path.relative_to(base).parts[1:]
        pattern = shown(base.joinpath("<run id>", *below_run))
        raise _refuse(
            base,
            f"is too long: a run binds a unix socket at {pattern}, {size} bytes with its "
            f"{RUN_ID_CHARS}-character run id, over the {MAX_SOCKET_PATH_BYTES} a socket's "
            "path can hold",
            f"pass a folder of at most {MAX_SOCKET_PATH_BYTES - spare} bytes, such as the "
            f"default {SHARED_DEFAULT}",
            named,
        )


def _check_writable(base: Path, *, exists: bool, named: str) -> None:
    """Makes a folder where the run will make its own (in the base, or for a new base in its
    parent) and removes it: the one test that sees read-only mounts, quotas of inodes and file
    systems such as /proc that refuse folders whatever the modes say."""
    where = base if exists else base.parent
    try:
        probe = tempfile.mkdtemp(prefix=".analyst-probe-", dir=where)
    except OSError as error:
        made = "a folder in it" if exists else "it"
        problem = f"cannot be written: creating {made} fails ({error.strerror})"
        if error.errno in (errno.EACCES, errno.EPERM):
            owner = os.stat(where).st_uid
            problem += f": {shown(where)} belongs to uid {owner}"
            raise _refuse(base, problem, _elsewhere(), named) from None
        raise _refuse(base, problem, "pass a folder on a writable filesystem", named) from None
    os.rmdir(probe)


def sweep_dead_runs(base: Path, note: Callable[[str], None]) -> None:
    """Removes each run tree under ``base`` whose lock file is there and whose lock is free."""
    with os.scandir(base) as entries:
        trees = [Path(e.path) for e in entries if _RUN_ID.fullmatch(e.name) and e.is_dir()]
    for tree in trees:
        try:
            fd = os.open(tree / RUN_LOCK, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            continue  # kept on purpose, or not a tree of this program's
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # its run is alive
            owner = os.read(fd, 64).decode("ascii", "replace").strip() or "unknown"
            try:
                remove(tree)
            except OSError as error:
                note(f"could not remove {tree}, left by a dead run: {error.strerror}")
                continue
            note(
                f"removed {tree}: the work tree of a run whose controller (pid {owner}) ended "
                "without cleaning up"
            )
        finally:
            os.close(fd)


@contextmanager
def claimed_run(
    base: Path,
    tool: ToolIdentity,
    run_id: str,
    *,
    keep: bool,
    note: Callable[[str], None],
) -> Iterator[RunPaths]:
    """Sweeps the dead runs' trees, creates this run's tree and holds its lock until the block
    ends; then removes the tree, or with ``keep`` only its lock file."""
    try:
        base.mkdir(mode=0o700)
    except FileExistsError:
        # A base someone else made keeps its modes: the pod's volume, or the base a run
        # started at the same moment made between this run's check and now.
        pass
    else:
        # One made here is this user's alone; a root controller's tools run at another uid,
        # which must pass through it (never list it) to reach their own folders.
        os.chmod(base, 0o700 if tool.uid == os.geteuid() else 0o711)
    base_fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(base_fd, fcntl.LOCK_EX)
        sweep_dead_runs(base, note)
        try:
            paths = create_run(base, tool, run_id)
            lock = os.open(
                paths.top / RUN_LOCK, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600
            )
        except BaseException:
            # A tree half made (a full disk) goes at once; it never had a lock to be swept by.
            if (base / run_id).exists():
                remove(base / run_id)
            raise
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(lock, f"{os.getpid()}\n".encode("ascii"))
    finally:
        os.close(base_fd)  # closing drops the directory's lock
    try:
        yield paths
    finally:
        try:
            if keep:
                (paths.top / RUN_LOCK).unlink(missing_ok=True)
            else:
                remove(paths.top)
        finally:
            os.close(lock)
