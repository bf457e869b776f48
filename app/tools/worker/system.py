"""Process probes: what the kernel says this process holds (ids, capabilities, namespaces)."""

from __future__ import annotations

import ctypes
import os

from .protocol import Result, errno_name, ok, refused

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
_PR_GET_PDEATHSIG = 2
# A zeroed scratch buffer for the syscall probe's one pointer argument: large enough for any
# struct the probed calls fill (uname's is 390 bytes), so an allowed call succeeds harmlessly.
_SCRATCH_BYTES = 4096


def read_status(path: str = "/proc/self/status") -> dict[str, str]:
    """The STATUS_FIELDS of a process's status file (this process's by default), whitespace
    normalised."""
    fields = {}
    with open(path, encoding="ascii") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in STATUS_FIELDS:
                fields[name] = " ".join(value.split())
    missing = set(STATUS_FIELDS) - set(fields)
    if missing:
        raise RuntimeError(f"{path} lacks {sorted(missing)}")
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
    hostname, mount points and environment variable names (never values), its working
    directory, session, scratch space, parent-death signal, and whether its root is writable."""
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
        cwd=os.getcwd(),
        pid=os.getpid(),
        sid=os.getsid(0),
        scratch=_scratch(os.environ.get("HOME", "")),
        pdeathsig=_parent_death_signal(),
        root_create=_root_create(),
    )


def _root_create() -> str:
    """Whether a file can be created at the root of this process's filesystem: "ok" (it is
    removed again at once) or the errno's name."""
    path = "/.analyst-root-probe"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except OSError as error:
        return errno_name(error.errno or 0)
    os.close(fd)
    os.unlink(path)
    return "ok"


def _parent_death_signal() -> int:
    """The signal this process gets when its parent dies (PR_GET_PDEATHSIG); 0 for none."""
    libc = _libc()
    value = ctypes.c_int(0)
    if libc.prctl(_PR_GET_PDEATHSIG, ctypes.byref(value), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "PR_GET_PDEATHSIG")
    return value.value


def _scratch(path: str) -> dict[str, int] | None:
    """The capacity, mode and owner of the process's scratch directory, if it has one."""
    if not path or not os.path.isdir(path):
        return None
    fs, st = os.statvfs(path), os.stat(path)
    return {"bytes": fs.f_blocks * fs.f_frsize, "mode": st.st_mode & 0o7777, "uid": st.st_uid}


def fill_scratch(args: list[str]) -> Result:
    """``DIRECTORY BYTES PER_FILE``: writes BYTES bytes into DIRECTORY, in files of at most
    PER_FILE bytes (no one file may outgrow the worker's file size limit); reports how far it
    got and the errno that stopped it. Every file is removed again either way."""
    directory, size, per_file = args[0], int(args[1]), int(args[2])
    block = b"\0" * 65536
    written, paths = 0, list[str]()
    try:
        while written < size:
            path = os.path.join(directory, f"fill-{len(paths)}")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            paths.append(path)
            try:
                in_file = 0
                while in_file < per_file and written < size:
                    count = os.write(fd, block[: min(per_file - in_file, size - written)])
                    in_file += count
                    written += count
            finally:
                os.close(fd)
    except OSError as error:
        return refused(error, written=written)
    finally:
        for path in paths:
            os.unlink(path)
    return ok(written=written)


def hold(args: list[str]) -> Result:
    """``RELEASE_FIFO [PID_FILE]``: waits until the controller releases it.

    Writes its pid to PID_FILE (one of its own outputs) if given, then opens the FIFO for
    reading, which blocks until the controller opens it for writing, and reads until the
    controller closes it. Meanwhile the controller can look at this process from outside.
    """
    fifo = args[0]
    if len(args) > 1:
        fd = os.open(args[1], os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        finally:
            os.close(fd)
    fd = os.open(fifo, os.O_RDONLY | os.O_CLOEXEC)
    try:
        while os.read(fd, 4096):
            pass
    finally:
        os.close(fd)
    return ok(pid=os.getpid(), sid=os.getsid(0))


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


ACTIONS = {
    "proc-status": proc_status,
    "fill-scratch": fill_scratch,
    "hold": hold,
    "unshare-user": unshare_user,
    "syscall": syscall,
}
