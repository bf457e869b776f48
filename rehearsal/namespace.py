"""The rehearsal's private namespaces: nothing it mounts, binds or listens on reaches the host.

The command re-executes itself under `unshare --mount --net --pid --fork --kill-child`
(util-linux) as root, with private mount propagation: its mounts, its network (loopback and
the stand-in addresses), and its processes (moto, the agent, every container) live and die
with it, whatever signal ends it. Its state (the Secrets' values, moto's data, the volumes) is
on a tmpfs in that mount namespace, which no other process can see and the kernel frees when
the namespace goes.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import sys
from pathlib import Path
from typing import Final, NoReturn

from app.core.errors import LayerUnavailable

STATE_DIR: Final = Path("/run/rehearsal")
LIBSECCOMP: Final = "libseccomp.so.2"
UNSHARE: Final = [
    "unshare",
    "--mount",
    "--net",
    "--pid",
    "--fork",
    "--kill-child",
    "--propagation",
    "private",
    "--",
]
INSIDE: Final = "_inside"


def check_machine() -> None:
    """What the rehearsal needs before it enters its namespaces; each with its fix."""
    if os.geteuid() != 0:
        raise LayerUnavailable(
            "the rehearsal runs as root: it makes namespaces, mounts and the pods' uids",
            "run it as root (CI and the Makefile do)",
        )
    for program, package in (
        ("unshare", "util-linux"),
        ("setpriv", "util-linux"),
        ("ip", "iproute2"),
        ("bwrap", "bubblewrap"),
        ("nft", "nftables"),
    ):
        if shutil.which(program) is None:
            raise LayerUnavailable(f"{program} not found", f"apt-get install {package}")
    try:
        ctypes.CDLL(LIBSECCOMP)  # the runtime's seccomp step loads each container's profile
    except OSError as error:
        raise LayerUnavailable(
            f"{LIBSECCOMP} cannot be loaded: {error}", "apt-get install libseccomp2"
        ) from error


def enter(argv: list[str]) -> NoReturn:
    """Replaces this process with the same command inside fresh namespaces."""
    os.execvp("unshare", [*UNSHARE, sys.executable, "-m", "rehearsal", INSIDE, *argv])


def mount_state() -> Path:
    """A tmpfs for the rehearsal's state, visible in its own mount namespace only."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mount(b"tmpfs", str(STATE_DIR.parent).encode(), b"tmpfs", 0, b"mode=755") != 0:
        error = ctypes.get_errno()
        raise LayerUnavailable(f"cannot mount a tmpfs on {STATE_DIR.parent}: {os.strerror(error)}")
    STATE_DIR.mkdir(mode=0o711)
    return STATE_DIR


def host_max_user_namespaces() -> str:
    """This machine's own setting, which no container's write may change."""
    return Path("/proc/sys/user/max_user_namespaces").read_text(encoding="ascii").strip()
