"""The controller's process made non-dumpable, first of all, so that no other process at its uid
can read its memory, its environment or its descriptors.

In the cluster the tools run at the controller's own uid: every path a process at that uid has
into another (``/proc/<pid>/mem`` and ``environ``, ``process_vm_readv``, ``pidfd_getfd``,
ptrace) is then open to it by the uid alone, and only the kernel's dumpable flag closes them:
the kernel gives a non-dumpable process's /proc files to root and refuses a ptrace-mode access
to it by anyone without CAP_SYS_PTRACE. The layers already refuse every tool process all of
these; this closes them to anything else at the uid as well. The flag belongs to the address
space, so every thread has it; a tool process starts with its own, since exec resets it for a
program its uid may read. The attacks section proves it (app/tools/undumpable_checks.py).
"""

from __future__ import annotations

import ctypes
from typing import Final

from app.core.errors import RunStopped

_PR_GET_DUMPABLE: Final = 3
_PR_SET_DUMPABLE: Final = 4
_libc = ctypes.CDLL(None, use_errno=True)
_libc.prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
_libc.prctl.restype = ctypes.c_int


def make_undumpable() -> None:
    """Clears this process's dumpable flag, and reads it back; raises RunStopped if it stays."""
    if _libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        number = ctypes.get_errno()
        raise RunStopped(f"prctl(PR_SET_DUMPABLE, 0) failed: errno {number}")
    if _libc.prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise RunStopped("the controller is still dumpable after prctl(PR_SET_DUMPABLE, 0)")
