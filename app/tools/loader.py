"""The launcher's first code in every tool process: its resource limits, and under nono its
baseline seccomp filter, in force before the worker's package is imported.

Staged beside the worker as ``analyst_loader`` (app/core/run_tree.py), it is not part of the
worker's package: whatever program stands in the worker's place, this module has run before its
first instruction. The launcher's command is ``python3 -S -c "<this module's entry>; <the
worker's entry>"``, then this module's options, then the worker's action and its arguments:

    --max-address-space BYTES   RLIMIT_AS: no mapping past BYTES of address space (ENOMEM)
    --max-cpu-seconds N         RLIMIT_CPU: killed (SIGKILL) after N seconds of CPU time
    --max-file-bytes BYTES      RLIMIT_FSIZE: no write past BYTES in any file (EFBIG)
    --max-open-files N          RLIMIT_NOFILE: no descriptor numbered N or above (EMFILE)
    --max-processes N           RLIMIT_NPROC: no new process or thread while N or more run at
                                its uid (EAGAIN); 1 means none at all, whoever else runs there
    --seccomp-filter PATH       one more seccomp filter: the BPF program at PATH (nono-py cannot
                                stack a filter of the caller's; bwrap loads its own itself)

Each limit is set soft and hard alike, so the tool can lower it and never raise it again (that
needs CAP_SYS_RESOURCE, which no tool holds); a filter, once loaded, stays for the process and
everything it execs. Any failure raises: a tool asked for a limit never runs without it. The
options are removed from ``sys.argv``, so the worker reads its action first.

It runs after exec, inside the tool process, and that is still before the tool: the program
exec'd is the system interpreter with the launcher's command line, working directory and
environment, and this is the code the launcher gave it to run first (docs/proofs.md, "When each
bound is set"). bwrap has no option for resource limits and nono-py no RLIMIT_AS nor a filter of
the caller's, so this is the one place both layers set them alike.

Standard library only, like the worker: it runs on the system interpreter inside the sandbox.
"""

from __future__ import annotations

import resource
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

# Each limit option and the resource it sets.
LIMIT_OPTIONS: Final = {
    "--max-address-space": resource.RLIMIT_AS,
    "--max-cpu-seconds": resource.RLIMIT_CPU,
    "--max-file-bytes": resource.RLIMIT_FSIZE,
    "--max-open-files": resource.RLIMIT_NOFILE,
    "--max-processes": resource.RLIMIT_NPROC,
}
FILTER_OPTION: Final = "--seccomp-filter"
# How a launcher's -c code runs this module (it imports nothing of the worker's).
ENTRY: Final = "import analyst_loader; analyst_loader.apply()"

_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_BPF_INSTRUCTION_BYTES = 8
# BPF_MAXINSNS: the kernel refuses a longer program anyway.
_MAX_PROGRAM_BYTES = 4096 * _BPF_INSTRUCTION_BYTES


def _set_limit(option: str, text: str) -> None:
    value = int(text)
    if value <= 0:
        raise ValueError(f"{option} must be positive, not {text!r}")
    resource.setrlimit(LIMIT_OPTIONS[option], (value, value))


def _load_filter(path: str) -> None:
    """Installs the BPF program at ``path`` as one more filter of this process."""
    # Imported here: only the layer that asks for a filter pays for ctypes.
    import ctypes

    class SockFilter(ctypes.Structure):
        _fields_ = [
            ("code", ctypes.c_ushort),
            ("jt", ctypes.c_ubyte),
            ("jf", ctypes.c_ubyte),
            ("k", ctypes.c_uint),
        ]

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]

    with open(path, "rb") as source:
        program = source.read(_MAX_PROGRAM_BYTES + 1)
    if not program or len(program) % _BPF_INSTRUCTION_BYTES or len(program) > _MAX_PROGRAM_BYTES:
        raise ValueError(f"{path} is not a BPF program ({len(program)} bytes)")
    count = len(program) // _BPF_INSTRUCTION_BYTES
    instructions = (SockFilter * count).from_buffer_copy(program)
    fprog = SockFprog(count, instructions)
    libc = ctypes.CDLL(None, use_errno=True)
    # prctl(2) takes five arguments and refuses (EINVAL) unused ones that are not zero.
    libc.prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
    libc.prctl.restype = ctypes.c_int
    # Required for an unprivileged filter. Both layers have set it already (nono-py for
    # Landlock, bwrap for every child), but the load must never depend on that.
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS")
    address = ctypes.cast(ctypes.pointer(fprog), ctypes.c_void_p).value or 0
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, address, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "PR_SET_SECCOMP")


def apply() -> None:
    """Applies the leading options of ``sys.argv`` and removes them from it."""
    rest = sys.argv[1:]
    while rest and rest[0].startswith("--"):
        option = rest[0]
        if len(rest) < 2 or (option not in LIMIT_OPTIONS and option != FILTER_OPTION):
            raise ValueError(f"unknown or incomplete loader option {option!r}")
        if option == FILTER_OPTION:
            _load_filter(rest[1])
        else:
            _set_limit(option, rest[1])
        rest = rest[2:]
    sys.argv[1:] = rest
