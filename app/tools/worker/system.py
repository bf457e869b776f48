"""Process probes: what the kernel says this process holds (ids, capabilities, namespaces)."""

from __future__ import annotations

import ctypes
import os

from .protocol import Action, Result, ok, refused

STATUS_FIELDS = (
    "Uid",
    "Gid",
    "CapInh",
    "CapPrm",
    "CapEff",
    "CapBnd",
    "CapAmb",
    "NoNewPrivs",
    "Seccomp",
    "Seccomp_filters",
)
NAMESPACES = ("user", "pid", "net", "ipc", "uts", "mnt", "cgroup")

_CLONE_NEWUSER = 0x10000000
# A zeroed scratch buffer for the syscall probe's one pointer argument: large enough for any
# struct the probed calls fill (uname's is 390 bytes), so an allowed call succeeds harmlessly.
_SCRATCH_BYTES = 4096


def read_status() -> dict[str, str]:
    """The STATUS_FIELDS of /proc/self/status, whitespace normalised."""
    fields = {}
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in STATUS_FIELDS:
                fields[name] = " ".join(value.split())
    missing = set(STATUS_FIELDS) - set(fields)
    if missing:
        raise RuntimeError(f"/proc/self/status lacks {sorted(missing)}")
    return fields


def _id_map(name: str) -> list[str]:
    with open(f"/proc/self/{name}", encoding="ascii") as id_map:
        return [" ".join(line.split()) for line in id_map if line.strip()]


def read_namespaces() -> dict[str, str]:
    """This process's namespace ids, e.g. {"net": "net:[4026531840]"}."""
    return {ns: os.readlink(f"/proc/self/ns/{ns}") for ns in NAMESPACES}


def _unescape(field: str) -> str:
    # mountinfo writes space, tab, newline and backslash as \ooo octal escapes.
    out, index = [], 0
    while index < len(field):
        if field[index] == "\\" and field[index + 1 : index + 4].isdigit():
            out.append(chr(int(field[index + 1 : index + 4], 8)))
            index += 4
        else:
            out.append(field[index])
            index += 1
    return "".join(out)


def _mount_points() -> list[str]:
    with open("/proc/self/mountinfo", encoding="utf-8") as mountinfo:
        return sorted(_unescape(line.split()[4]) for line in mountinfo if line.strip())


def _hostname() -> str:
    # Read from procfs rather than uname(2), which the stacking demo's filter refuses.
    with open("/proc/sys/kernel/hostname", encoding="utf-8") as hostname:
        return hostname.read().strip()


def proc_status(args: list[str]) -> Result:
    """Reports this process's ids, id maps, capability sets, seccomp state, namespaces,
    hostname, mount points and environment variable names (never values)."""
    if args:
        raise ValueError("proc-status takes no arguments")
    return ok(
        uid=os.getuid(),
        gid=os.getgid(),
        status=read_status(),
        uid_map=_id_map("uid_map"),
        gid_map=_id_map("gid_map"),
        namespaces=read_namespaces(),
        hostname=_hostname(),
        mounts=_mount_points(),
        environment=sorted(os.environ),
    )


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def unshare_user(args: list[str]) -> Result:
    """One unshare(CLONE_NEWUSER): can this process make a further user namespace?"""
    if args:
        raise ValueError("unshare-user takes no arguments")
    libc = _libc()
    libc.unshare.argtypes = [ctypes.c_int]
    libc.unshare.restype = ctypes.c_int
    ctypes.set_errno(0)
    if libc.unshare(_CLONE_NEWUSER) == 0:
        return ok()
    err = ctypes.get_errno()
    return refused(OSError(err, os.strerror(err)))


def syscall(args: list[str]) -> Result:
    """One raw syscall by number (given by the controller, which resolved it with libseccomp).

    Its first argument is a pointer to zeroed scratch memory and the rest are zero, so a call
    that is allowed succeeds or fails harmlessly; the result is its return value or errno.
    """
    (number_text,) = args
    number = int(number_text)
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    scratch = ctypes.create_string_buffer(_SCRATCH_BYTES)
    ctypes.set_errno(0)
    # Every further argument is an explicit zero, never whatever a register happened to hold.
    zeros = [ctypes.c_long(0)] * 5
    rc = libc.syscall(ctypes.c_long(number), ctypes.cast(scratch, ctypes.c_void_p), *zeros)
    if rc == -1:
        err = ctypes.get_errno()
        return refused(OSError(err, os.strerror(err)), number=number)
    return ok(number=number, returned=rc)


ACTIONS: dict[str, Action] = {
    "proc-status": proc_status,
    "unshare-user": unshare_user,
    "syscall": syscall,
}
