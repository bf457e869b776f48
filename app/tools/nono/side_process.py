"""What each of the controller's own nono processes (the proxy host, the launch processes) does
first: it dies with the controller, and no process at its uid can read it or take its
descriptors.

In the cluster a tool runs at the controller's uid: a dumpable proxy host would give it the
real key, a dumpable launch process its socket, through which any command runs unconfined.
Standard library only.
"""

from __future__ import annotations

import ctypes
import os
import signal
from typing import Final

PR_SET_PDEATHSIG: Final = 1
PR_SET_DUMPABLE: Final = 4


def tie_to_controller(parent: int) -> None:
    """SIGKILL when the thread that started this process ends, not dumpable, and an exit at
    once if ``parent`` had ended before the request was made."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE)")
    if os.getppid() != parent:
        raise SystemExit(1)  # the controller is gone already
