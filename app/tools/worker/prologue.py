"""What a tool process sets on itself before it reads a single argument of its action.

The controller puts these options first on the command line; the worker applies them, in
this order, before it looks at anything else, so no input the action parses is ever read
without them:

- ``--max-file-bytes N``: RLIMIT_FSIZE, soft and hard, so no file it writes grows past N bytes
  (a write past it fails with EFBIG; Python ignores SIGXFSZ). The bubblewrap layer asks for it
  here; nono sets the same limit itself before exec.
- ``--seccomp-filter PATH``: loads the BPF program at PATH (the controller's compiled baseline,
  in the read-only code directory) as one more seccomp filter. The nono layer asks for it here,
  because nono-py cannot stack a filter of the caller's; bwrap loads its filters itself.
"""

from __future__ import annotations

FILE_LIMIT_OPTION = "--max-file-bytes"
FILTER_OPTION = "--seccomp-filter"

_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_BPF_INSTRUCTION_BYTES = 8
# BPF_MAXINSNS: the kernel refuses a longer program anyway.
_MAX_PROGRAM_BYTES = 4096 * _BPF_INSTRUCTION_BYTES


def _limit_file_size(text: str) -> int:
    limit = int(text)
    if limit <= 0:
        raise ValueError(f"{FILE_LIMIT_OPTION} must be positive")
    import resource  # here: only the layer that asks for the limit pays for it (0.7 million)

    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return limit


def _load_filter(path: str) -> str:
    """Installs the program at ``path``; returns it, in hex, for the controller to compare
    with the one it compiled (a digest here would load hashlib's OpenSSL: 11 million
    instructions, a fifth of a start). Any failure raises: a tool that was asked for a filter
    never runs without it."""
    # Imported here: only the layer that asks for a filter pays for it (12 million).
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
    # Required for an unprivileged filter; the layer has set it already, so this changes
    # nothing, but the load below must never depend on that.
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS")
    address = ctypes.cast(ctypes.pointer(fprog), ctypes.c_void_p).value or 0
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, address, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "PR_SET_SECCOMP")
    return program.hex()


def apply(argv: list[str]) -> tuple[list[str], dict[str, int | str]]:
    """Applies the leading prologue options; returns the action's argv and what was applied."""
    applied: dict[str, int | str] = {}
    rest = list(argv)
    if rest[:1] == [FILE_LIMIT_OPTION] and len(rest) > 1:
        applied["max_file_bytes"] = _limit_file_size(rest[1])
        rest = rest[2:]
    if rest[:1] == [FILTER_OPTION] and len(rest) > 1:
        applied["seccomp_filter"] = _load_filter(rest[1])
        rest = rest[2:]
    if rest[:1] and rest[0].startswith("--"):
        raise ValueError(f"unknown or misplaced prologue option {rest[0]!r}")
    return rest, applied
