"""The run's private directories and the unprivileged identity its tool processes run as.

Layout of one run, under a base directory outside any checkout (so a 0700 home directory
never hides the worker code or a role's files from the tool's uid):

    <base>/<run_id>/              0711, the controller's
        code/analyst_loader.py    the launcher's first code in every tool process (its limits)
        code/analyst_worker/      the staged worker, read-only for everyone else
        control/                  the unconfined control's own copy of the worker, from the
                                  controller's package; no tool process is given it
        secrets/                  local mode only: the supplier key and the AWS credentials,
                                  0700 root:root (files 0440 root:<tool gid>): root's alone
        decoys/                   a decoy of each, same name, owner and mode, in 0750
                                  root:<tool gid>: what a nono role and a secret's control see at
                                  secrets/ (app/tools/decoy_view.py)
        profiles/                 nono profiles, written where no role can write
        run/                      the run directory proper: every file here is scanned for the
                                  supplier key after the last write
            <role>/in             the controller's, read-only for the role
            <role>/out            the role's, owned by the tool uid, holding the role's
                                  OUTPUT_FILES (the only files it may write)
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from app.core.roles import ROLES, Role

# The uid/gid a tool process runs as when the controller is root. 1000 is what the cluster's
# containers run as, so local and cluster runs show the same numbers.
UNPRIVILEGED_ID = 1000

WORKER_SOURCE = Path(__file__).resolve().parents[1] / "tools" / "worker"
WORKER_PACKAGE = "analyst_worker"
# The launcher's first code in every tool process (app/tools/loader.py), staged beside the
# worker's package and not in it.
LOADER_SOURCE = Path(__file__).resolve().parents[1] / "tools" / "loader.py"
LOADER_MODULE = "analyst_loader"
# The system interpreter: the worker is stdlib-only, so a tool process needs /usr and nothing
# from a home directory (a non-root uid cannot read an interpreter under root's home).
INTERPRETER = "/usr/bin/python3"
# How every tool process starts the worker. -S: the worker is stdlib-only, so the interpreter
# skips `site`: no site-packages directory on sys.path and no .pth file run in a tool process.
# -c rather than -m: runpy, and the importlib and contextlib it loads, cost 2.5 ms of a start
# that is otherwise some 10 ms. Both put the working directory first on sys.path, so each
# layer starts the worker in a directory no role can write.
# The loader runs first (app/tools/loader.py): the limits are in force before the worker's
# package is imported.
WORKER_ENTRY: Final = (
    f"import {LOADER_MODULE}; {LOADER_MODULE}.apply(); "
    f"from {WORKER_PACKAGE}.__main__ import run; run()"
)
WORKER_COMMAND: Final = (INTERPRETER, "-S", "-c", WORKER_ENTRY)

# The files each role may write. The controller creates them, empty, before any tool starts;
# a role can create nothing else, so all it can put on disk is these files, each held to
# MAX_OUTPUT_FILE_BYTES by the kernel (RLIMIT_FSIZE).
CHECK_FILE = "check.txt"
OUTPUT_FILES: dict[Role, tuple[str, ...]] = {
    "reader": (CHECK_FILE,),
    "evaluator": ("comparison.json", CHECK_FILE),
    "writer": ("comparison.json", "draft.txt", CHECK_FILE),
}
MAX_OUTPUT_FILE_BYTES = 1024 * 1024

DECOYS_DIR: Final = "decoys"
# What each decoy holds: nothing any scan or any service takes for a secret.
DECOY_TEXT: Final = b"a decoy: the real secret is readable by root alone\n"


@dataclass(frozen=True)
class ToolIdentity:
    """Who a tool process runs as on the host, before any namespace maps it."""

    uid: int
    gid: int

    @classmethod
    def for_this_controller(cls) -> ToolIdentity:
        # A root controller drops its tools to an unprivileged uid; a non-root controller (the
        # cluster's uid 1000) cannot change uid, so its tools run as itself.
        if os.geteuid() == 0:
            return cls(UNPRIVILEGED_ID, UNPRIVILEGED_ID)
        return cls(os.geteuid(), os.getegid())

    def process_identity(self) -> dict[str, Any]:
        """subprocess arguments that start a child as this identity, with no supplementary
        groups; empty for a non-root controller, which cannot change uid (its tools run as it)."""
        if os.geteuid() != 0:
            return {}
        return {"user": self.uid, "group": self.gid, "extra_groups": []}


@dataclass(frozen=True)
class RoleWorkspace:
    role: Role
    root: Path

    @property
    def input(self) -> Path:
        return self.root / "in"

    @property
    def output(self) -> Path:
        return self.root / "out"


@dataclass(frozen=True)
class RunPaths:
    run_id: str
    top: Path

    @property
    def code(self) -> Path:
        return self.top / "code"

    @property
    def control_code(self) -> Path:
        """The unconfined control's own copy of the worker (stage_control_probe)."""
        return self.top / "control"

    @property
    def secrets(self) -> Path:
        return self.top / "secrets"

    @property
    def decoys(self) -> Path:
        """What the tools see at ``secrets`` (create_secrets_dir, app/tools/decoy_view.py)."""
        return self.top / DECOYS_DIR

    @property
    def profiles(self) -> Path:
        return self.top / "profiles"

    @property
    def run(self) -> Path:
        return self.top / "run"

    @property
    def attacks(self) -> Path:
        """Where the attacks section puts the unix socket it aims the tools at."""
        return self.top / "attacks"

    @property
    def attack_socket(self) -> Path:
        return self.attacks / "controller.sock"

    def sockets(self) -> tuple[Path, ...]:
        """Every unix socket path the run binds, for the length check made before it starts."""
        return (self.attack_socket,)

    def workspace(self, role: Role) -> RoleWorkspace:
        return RoleWorkspace(role, self.run / role)


RUN_ID_CHARS: Final = 32
# unix(7): a socket's path fits in sun_path's 108 bytes with its terminating NUL.
MAX_SOCKET_PATH_BYTES: Final = 107


def new_run_id() -> str:
    return secrets.token_hex(RUN_ID_CHARS // 2)


def longest_socket_path(base: Path) -> Path:
    """The longest unix socket path a run under ``base`` binds: every run id has the same
    length, so this is computed from the layout, for any run."""
    run_id = "0" * RUN_ID_CHARS
    return max(RunPaths(run_id, base / run_id).sockets(), key=lambda p: len(os.fsencode(p)))


def _mkdir(path: Path, mode: int, owner: ToolIdentity | None = None) -> None:
    path.mkdir(mode=mode)
    os.chmod(path, mode)  # mkdir's mode is filtered by the umask; the layout is not
    if owner is not None and os.geteuid() == 0:
        os.chown(path, owner.uid, owner.gid)


def create_run(base: Path, tool: ToolIdentity, run_id: str | None = None) -> RunPaths:
    """Creates a fresh, private run tree; an existing run id is refused, never reused."""
    if not base.exists():
        # A base someone else made (the pod's volume) keeps its modes; one made here must be
        # traversable by the tool's uid whatever the umask.
        base.mkdir(parents=True)
        os.chmod(base, 0o755)
    rid = run_id or new_run_id()
    paths = RunPaths(rid, base / rid)
    _mkdir(paths.top, 0o711)
    _mkdir(paths.run, 0o755)
    _mkdir(paths.profiles, 0o755)
    for role in ROLES:
        ws = paths.workspace(role)
        _mkdir(ws.root, 0o755)
        _mkdir(ws.input, 0o755)
        _mkdir(ws.output, 0o700, owner=tool)
        for name in OUTPUT_FILES[role]:
            _create_output(ws.output / name, tool)
    stage_worker(paths.code)
    stage_control_probe(paths)
    return paths


def _create_output(path: Path, tool: ToolIdentity) -> None:
    """An empty output file, the tool's own (mode 0600), for the role to fill."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    os.close(fd)
    os.chmod(path, 0o600)
    if os.geteuid() == 0:
        os.chown(path, tool.uid, tool.gid)


def stage_worker(code_dir: Path) -> Path:
    """Copies the stdlib-only worker, and the loader that starts it, where the tool's uid can
    read them, whatever the checkout; returns the worker's package."""
    return _copy_worker(code_dir)


def stage_control_probe(paths: RunPaths) -> Path:
    """The unconfined control's program: the worker as the controller's package holds it, in a
    directory of its own that no tool process is given, never the tools' staged code."""
    return _copy_worker(paths.control_code)


def _copy_worker(code_dir: Path) -> Path:
    target = code_dir / WORKER_PACKAGE
    target.mkdir(parents=True)
    # File by file rather than copytree, which gathers its errors into one without an errno:
    # a full disk must surface as ENOSPC, naming the file.
    for source in sorted(WORKER_SOURCE.rglob("*")):
        relative = source.relative_to(WORKER_SOURCE)
        if "__pycache__" in relative.parts or source.suffix == ".pyc":
            continue
        if source.is_dir():
            (target / relative).mkdir()
        else:
            shutil.copyfile(source, target / relative)
    shutil.copyfile(LOADER_SOURCE, code_dir / f"{LOADER_MODULE}.py")
    for path in [code_dir, *code_dir.rglob("*")]:
        mode = 0o755 if path.is_dir() else 0o644
        os.chmod(path, mode)
    return target


def create_secrets_dir(paths: RunPaths, tool: ToolIdentity) -> Path:
    """The local stand-in for the pod's secret mounts, mounted nowhere: only root may enter it;
    beside it the decoys that every tool process sees in its place (app/tools/decoy_view.py)."""
    _mkdir(paths.secrets, 0o700)
    _mkdir(paths.decoys, 0o750)
    if os.geteuid() == 0:
        os.chown(paths.secrets, 0, 0)
        os.chown(paths.decoys, 0, tool.gid)
    return paths.secrets


def write_secret_file(path: Path, data: bytes, tool: ToolIdentity) -> None:
    """Mode 0440, group of the tool's gid: the same shape as the pod's Secret mount. Its decoy,
    of the same name, owner and mode, goes in the decoys directory beside the secrets one."""
    _write_readonly(path, data, tool)
    _write_readonly(path.parent.with_name(DECOYS_DIR) / path.name, DECOY_TEXT, tool)


def _write_readonly(path: Path, data: bytes, tool: ToolIdentity) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o440)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    if os.geteuid() == 0:
        os.chown(path, 0, tool.gid)
    os.chmod(path, stat.S_IRUSR | stat.S_IRGRP)


def stage_file(path: Path, data: bytes, tool: ToolIdentity, *, tool_owned: bool) -> None:
    """Stages a file for a role: readable by the tool's uid, written only by the controller.

    ``tool_owned`` gives the file to the tool's uid, so that a refused write through the role's
    input is the confinement's doing and not the file's mode.
    """
    path.write_bytes(data)
    os.chmod(path, 0o644)
    if tool_owned and os.geteuid() == 0:
        os.chown(path, tool.uid, tool.gid)


def blocking_directory(path: Path, tool: ToolIdentity) -> Path | None:
    """The first directory on the way to ``path`` that the tool's uid/gid may not enter."""
    for directory in [*reversed(path.parents), path]:
        st = directory.stat()
        if st.st_uid == tool.uid:
            search = stat.S_IXUSR
        elif st.st_gid == tool.gid:
            search = stat.S_IXGRP
        else:
            search = stat.S_IXOTH
        if not st.st_mode & search:
            return directory
    return None
