"""The tools' decoy view: a mount namespace in which the run's secrets directory holds decoys.

Locally the controller is root and keeps the real secrets in ``secrets/``, which only root may
enter. Every nono role and every secret's control start in this view, where the same path is a
directory of decoys with the pod's owner and mode (root:<tool gid>, files 0440): a nono role's
refusal of the key (Landlock's, on a path its uid could otherwise open) is then its layer's
doing and not the directory's mode, and the unconfined control shows what a process at the
tool's uid gets from a file of that owner and mode at that path without touching the secret.
A bubblewrap role needs no view (the secrets are in none of its mount lists), nor does any other
control; started where the real files are root's alone, none of them can open one either.

The view is a copy of the controller's mounts, taken once the run tree exists, that follows the
host's (slave propagation) and adds one bind mount that never reaches the host. Each tool call
in it is made from a thread of its own that enters the view first (``start_in_view``), or by a
nono launch process that entered it when it started: the controller's threads never leave the
host's.
The namespace lives while its descriptor is open or a tool process runs in it, so nothing of
it outlasts the run, however the controller ends.

In the cluster the controller is not root and cannot make one: there the secrets are the pod's
mounts, readable at the controller's uid, which its tools share.
"""

from __future__ import annotations

import ctypes
import os
import select
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Final, TypeVar

from app.tools import waiting

T = TypeVar("T")

_CLONE_FS: Final = 0x00000200
_CLONE_NEWNS: Final = 0x00020000
_MS_BIND: Final = 4096
_MS_REC: Final = 16384
_MS_SLAVE: Final = 1 << 19
_libc = ctypes.CDLL(None, use_errno=True)
_libc.unshare.argtypes = [ctypes.c_int]
_libc.setns.argtypes = [ctypes.c_int, ctypes.c_int]
_libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_void_p]
# Threads whose filesystem attributes (root, working directory) are their own: setns(2) into a
# mount namespace refuses (EINVAL) a thread that shares them with another.
_own_fs = threading.local()


def _call(rc: int, what: str) -> None:
    if rc != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{what}: {os.strerror(number)}")


def _own_filesystem_attributes() -> None:
    if not getattr(_own_fs, "done", False):
        _call(_libc.unshare(_CLONE_FS), "unshare(CLONE_FS)")
        _own_fs.done = True


class DecoyView:
    """The mount namespace every tool process starts in (see the module's docstring)."""

    def __init__(self, namespace_fd: int, host_fd: int, secrets: Path, decoys: Path) -> None:
        self._namespace = namespace_fd
        self._host = host_fd
        self.secrets = secrets
        self.decoys = decoys

    @classmethod
    def create(cls, secrets: Path, decoys: Path) -> DecoyView:
        """A view in which ``secrets`` is ``decoys``; needs root (CAP_SYS_ADMIN)."""
        host = os.open("/proc/thread-self/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)
        made: list[int] = []
        failed: list[BaseException] = []

        def make() -> None:
            # In a thread of its own, which ends here: the controller's threads stay in the
            # host's namespace, and this one's descriptor keeps the new one alive.
            try:
                _call(_libc.unshare(_CLONE_FS | _CLONE_NEWNS), "unshare(CLONE_NEWNS)")
                # Nothing mounted here may propagate to the host; the host's own changes
                # still reach the view.
                _call(
                    _libc.mount(None, b"/", None, _MS_REC | _MS_SLAVE, None),
                    "mount --make-rslave /",
                )
                _call(
                    _libc.mount(os.fsencode(decoys), os.fsencode(secrets), None, _MS_BIND, None),
                    f"mount --bind {decoys} {secrets}",
                )
                made.append(os.open("/proc/thread-self/ns/mnt", os.O_RDONLY | os.O_CLOEXEC))
            except BaseException as error:  # handed to the caller's thread below
                failed.append(error)

        maker = threading.Thread(target=make, name="tool-view")
        maker.start()
        waiting.join(maker)
        if failed:
            os.close(host)
            raise failed[0]
        return cls(made[0], host, secrets, decoys)

    @property
    def namespace_fd(self) -> int:
        """The view's descriptor, for a process of the controller's that enters it itself (a
        nono launch process: app/tools/nono/launch_process.py)."""
        return self._namespace

    def enter_for_good(self) -> None:
        """The calling thread, one made for a single tool call, in the view until it ends. It
        must not have started a thread: one it starts shares its filesystem attributes, and
        setns(2) refuses a thread that shares them (EINVAL)."""
        _own_filesystem_attributes()
        _call(_libc.setns(self._namespace, _CLONE_NEWNS), "setns(tool view)")

    def start_in_view(
        self, start: Callable[[], subprocess.Popen[bytes]]
    ) -> subprocess.Popen[bytes]:
        """``start``'s process, started from a thread of its own inside the view that lives
        until the process ends (a process that dies with its parent, as bwrap's
        --die-with-parent, dies with the thread that forked it, not with the process), without
        reaping it: the caller waits for it as for any other."""
        started: list[subprocess.Popen[bytes]] = []
        failed: list[BaseException] = []
        ready = threading.Event()

        def made() -> None:
            ended = None
            try:
                self.enter_for_good()
                process = start()
                try:
                    # Opened before the caller has the process: it may kill and reap it at
                    # once (a stop), and a pid opened after that is no process, or another's.
                    ended = os.pidfd_open(process.pid)
                except BaseException:
                    process.kill()
                    process.wait()
                    raise
                started.append(process)
            except BaseException as error:  # handed to the caller's thread below
                failed.append(error)
            finally:
                ready.set()
            if ended is not None:
                try:
                    select.select([ended], [], [])
                finally:
                    os.close(ended)

        threading.Thread(target=made, name="tool-held", daemon=True).start()
        waiting.wait(ready)
        if failed:
            raise failed[0]
        return started[0]

    def close(self) -> None:
        for fd in (self._namespace, self._host):
            if fd >= 0:
                os.close(fd)
        self._namespace = self._host = -1
