"""A nono launch process: makes the controller's nono-py calls, one at a time, from a process that
has a single thread when it forks.

nono-py's sandboxed_exec forks its caller and sets the sandbox up in the child before exec
(nono-py's src/sandboxed_exec.rs: ``Sandbox::apply_auto`` allocates and builds rules in the
child): sound only if no other thread of the caller held a lock at the fork, since the child
never sees it released. The controller runs many threads (checks made at once, channel readers,
the proxy host's client); one nono call made beside them hung its child until its time limit.
Here nothing runs beside the call: nono-py's two pipe readers start after the fork and are
joined before it returns. Several launch processes make the controller's calls at once
(launch_pool.py), each one call at a time.

The controller speaks to each over a SOCK_SEQPACKET socket: per call a request (one JSON
object, launch_pool.py's LaunchRequest) carrying the call's channel (app/tools/channel.py) as one
SCM_RIGHTS descriptor, then two messages back: TAKEN at once, before anything else, so that a
launch process that does not answer is known within seconds (launch_pool.py's TAKEN_SECONDS),
and a reply, the tool's exit status or what nono-py raised. The channel is this process's
standard input for the call, which nono-py leaves to its child as it finds it; the launcher's
command makes it the tool's stdout and stderr (channel.py's CHANNEL_PRELUDE). The socket,
above descriptor 2, is closed in the child by nono-py before exec.

Run as ``python -m app.tools.nono.launch_process <controller pid> <socket fd>``: it dies with the
controller (PR_SET_PDEATHSIG), is not dumpable (in the cluster a tool runs at its uid, and must
neither read it nor take its socket), loads nono-py, and then waits for the view its tools start
in, the first message on its socket: VIEW with the tools' decoy view (app/tools/decoy_view.py)
as one SCM_RIGHTS descriptor, which it enters for good, or HOST_VIEW (the cluster's, where there
is none). Only then does it serve, so the controller may start it before the view exists (the
layer's head start: launch_pool.py) and its import overlaps the run's own start. It ends when
the controller closes the socket. Standard library and nono-py only: it imports nothing else of
the app.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import socket
import sys
from types import ModuleType
from typing import Any, Final

from app.tools.nono.side_process import tie_to_controller

_CLONE_NEWNS: Final = 0x00020000
# A request's largest size: a command, its environment and a capability list are a few KiB.
MAX_REQUEST_BYTES: Final = 256 * 1024
# What a request's capability list may call on nono-py's CapabilitySet (translate.py's
# Capabilities): nothing else of the set, or of nono-py, is reachable through a request.
# The first message back for each request: it is in hand.
TAKEN: Final = b"taken"
# The controller's first message: the tools' view (with its descriptor), or the host's own.
VIEW: Final = b"view"
HOST_VIEW: Final = b"host-view"
CAPABILITY_CALLS: Final = frozenset(
    {"allow_path", "allow_file", "block_network", "allow_tcp_connect_port"}
)
# sandboxed_exec's keyword arguments a request may set, each passed as it came.
EXEC_OPTIONS: Final = frozenset(
    {"cwd", "timeout_secs", "env", "inherit_env", "enforcement_mode", "max_file_size_bytes",
     "uid", "gid"}
)  # fmt: skip


def _enter_view(view_fd: int) -> None:
    """Into the decoy view for good: every tool this process starts starts there."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(view_fd, _CLONE_NEWNS) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"setns(tool view): {os.strerror(number)}")
    os.close(view_fd)


def capability_set(nono: ModuleType, calls: list[list[Any]]) -> Any:
    """A CapabilitySet made by replaying the request's calls; a call not in CAPABILITY_CALLS,
    or an access mode nono-py does not have, raises ValueError."""
    caps = nono.CapabilitySet()
    for name, *args in calls:
        if name not in CAPABILITY_CALLS:
            raise ValueError(f"a capability call this process does not make: {name!r}")
        if name in ("allow_path", "allow_file"):
            path, mode = args
            access = getattr(nono.AccessMode, mode, None)
            if not isinstance(path, str) or access is None or mode.startswith("_"):
                raise ValueError(f"{name}({path!r}, {mode!r}) is not a grant")
            args = [path, access]
        getattr(caps, name)(*args)
    return caps


def _children_cpu_seconds() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def make_call(nono: ModuleType, request: dict[str, Any]) -> dict[str, Any]:
    """One sandboxed_exec; the reply: the exit status, or the error nono-py raised."""
    try:
        unknown = set(request) - EXEC_OPTIONS - {"capabilities", "command"}
        if unknown:
            raise ValueError(f"a request with fields this process does not know: {unknown}")
        caps = capability_set(nono, request["capabilities"])
        options = {key: value for key, value in request.items() if key in EXEC_OPTIONS}
        if "env" in options:
            options["env"] = [(name, value) for name, value in options["env"]]
        result = nono.sandboxed_exec(caps, request["command"], **options)
    except (RuntimeError, ValueError, TypeError, OSError, KeyError) as error:
        return {"error": type(error).__name__, "message": str(error)}
    return {"exit_code": result.exit_code, "children_cpu_seconds": _children_cpu_seconds()}


def serve(nono: ModuleType, connection: socket.socket) -> None:
    """Answers requests until the controller closes its end."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    while True:
        message, fds, _, _ = socket.recv_fds(connection, MAX_REQUEST_BYTES, 1)
        if not message:
            return
        connection.send(TAKEN)
        try:
            if len(fds) != 1:
                reply: dict[str, Any] = {
                    "error": "ValueError", "message": "a request carries one channel"
                }  # fmt: skip
            else:
                # The channel as standard input, for the call alone; nothing else is open
                # above 2 but this process's socket and /dev/null, closed in the child.
                os.dup2(fds[0], 0)
                reply = make_call(nono, json.loads(message))
        finally:
            for fd in fds:
                os.close(fd)
            os.dup2(devnull, 0)  # this process's copy of the channel: the tool's end is its EOF
        connection.send(json.dumps(reply).encode("utf-8"))


def _take_view(connection: socket.socket) -> bool:
    """Waits for the controller's word on the view, entering it if it is the tools'; False
    when the controller closed the socket first (nothing to serve)."""
    message, fds, _, _ = socket.recv_fds(connection, MAX_REQUEST_BYTES, 1)
    if not message:
        return False
    if message == VIEW and len(fds) == 1:
        _enter_view(fds[0])
        return True
    for fd in fds:
        os.close(fd)
    if message == HOST_VIEW and not fds:
        return True
    raise ValueError(f"the view's message is not one this process knows: {message[:64]!r}")


def main(argv: list[str]) -> int:
    tie_to_controller(int(argv[1]))
    connection = socket.socket(fileno=int(argv[2]))
    # Imported only now, tied to the controller and not dumpable: the package's import takes
    # some 0.15 s of CPU (docs/notes/nono-py-package-import.md), spent while the controller
    # goes on. It starts no thread (setns(2) into a mount namespace refuses a process with
    # more than one), and no tool starts before the view is entered.
    import nono_py

    if not _take_view(connection):
        return 0
    serve(nono_py, connection)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
