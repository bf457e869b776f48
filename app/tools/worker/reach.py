"""The attacker's reach beyond its own process and files: calls on another process at the same
uid, and on the metadata of a file, each made so that an unrefused call changes nothing.

Each call on a process passes that process's current values, read by the controller (its
nice value, CPU mask, scheduling policy and I/O priority), or only reads (prlimit64 with no
new limit, getpriority); a call on a file sets its current mode, owner and times again, and
an extended attribute it adds is removed at once. A call the kernel answers for a reason of
its own (an empty node set, a NULL attribute block, no descriptor) is named in the
controller's control answers. Each probe's answer is one answer when every target got it,
else each target's (``own ok; other EPERM``), which no expected answer matches.
"""

from __future__ import annotations

import ctypes
import os

from .protocol import errno_name

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at run time: see protocol.py
    from typing import Any

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long

RLIMIT_CORE = 4
PRIO_PROCESS = 0
IOPRIO_WHO_PROCESS = 1
KCMP_FILE = 0
MADV_COLD = 20
AT_FDCWD = -100
XATTR_CREATE = 1
XATTR_NAME = b"user.analyst-probe"
IN_ACCESS = 0x1
IN_CLOEXEC = 0o2000000
FAN_CLASS_NOTIF = 0
FAN_REPORT_FID = 0x200
FAN_MARK_ADD = 0x1
FAN_OPEN = 0x20
UTIME_OMIT = (1 << 30) - 2
SCHED_FLAG_KEEP_POLICY = 0x08
SCHED_FLAG_KEEP_PARAMS = 0x10
SCHED_ATTR_SIZE = 48
FILE_ATTR_SIZE = 24
_CPU_SET_BYTES = 128

# The calls on another process, in order, and those on a file's metadata, in order.
PROCESS_CALLS = (
    "prlimit64",
    "getpriority",
    "setpriority",
    "sched_setaffinity",
    "sched_setscheduler",
    "sched_setparam",
    "sched_setattr",
    "ioprio_set",
    "pidfd_open",
    "migrate_pages",
    "move_pages",
    "kcmp",
    "process_madvise",
)
# Calls the kernel allows only with ptrace access to the target: made on the process outside
# any sandbox alone, as a process at the controller's uid is refused them by its dumpable flag.
PTRACE_CHECKED = frozenset({"migrate_pages", "move_pages", "kcmp"})
METADATA_CALLS = (
    "chmod",
    "fchmod",
    "fchmodat",
    "fchmodat2",
    "chown",
    "fchown",
    "fchownat",
    "lchown",
    "utime",
    "utimes",
    "utimensat",
    "futimesat",
    "setxattr",
    "lsetxattr",
    "fsetxattr",
    "setxattrat",
    "removexattr",
    "lremovexattr",
    "fremovexattr",
    "removexattrat",
    "file_setattr",
)
WATCH_CALLS = (
    "inotify_init",
    "inotify_init1",
    "inotify_add_watch",
    "fanotify_init",
    "fanotify_mark",
)
# The calls made on a descriptor: on the file its own output (another role's it cannot open).
_ON_DESCRIPTOR = frozenset({"fchmod", "fchown", "fsetxattr", "fremovexattr"})


def _call(number: int, *args: int | bytes | ctypes.Array[ctypes.c_char] | None) -> tuple[str, int]:
    values: list[object] = []
    for arg in args:
        values.append(ctypes.c_long(arg) if isinstance(arg, int) else arg)
    values += [ctypes.c_long(0)] * (6 - len(values))
    ctypes.set_errno(0)
    rc = int(_libc.syscall(ctypes.c_long(number), *values))
    if rc == -1:
        return errno_name(ctypes.get_errno()), -1
    return "ok", rc


def _summed(answers: dict[str, str]) -> str:
    said = set(answers.values())
    if len(said) == 1:
        return said.pop()
    return "; ".join(f"{target} {answer}" for target, answer in answers.items())


def _on_process(name: str, n: int, target: dict[str, Any]) -> str:
    pid = target["pid"]
    if name == "prlimit64":
        old = ctypes.create_string_buffer(16)
        return _call(n, pid, RLIMIT_CORE, None, old)[0]
    if name == "getpriority":
        return _call(n, PRIO_PROCESS, pid)[0]
    if name == "setpriority":
        return _call(n, PRIO_PROCESS, pid, target["nice"])[0]
    if name == "sched_setaffinity":
        mask = bytearray(_CPU_SET_BYTES)
        for cpu in target["cpus"]:
            mask[cpu // 8] |= 1 << (cpu % 8)
        return _call(n, pid, _CPU_SET_BYTES, ctypes.create_string_buffer(bytes(mask)))[0]
    param = ctypes.create_string_buffer(int(target["priority"]).to_bytes(4, "little", signed=True))
    if name == "sched_setscheduler":
        return _call(n, pid, target["policy"], param)[0]
    if name == "sched_setparam":
        return _call(n, pid, param)[0]
    if name == "sched_setattr":
        # Keeps the policy and its parameters; the nice value is the target's own.
        attr = SCHED_ATTR_SIZE.to_bytes(4, "little") + int(target["policy"]).to_bytes(4, "little")
        attr += (SCHED_FLAG_KEEP_POLICY | SCHED_FLAG_KEEP_PARAMS).to_bytes(8, "little")
        attr += int(target["nice"]).to_bytes(4, "little", signed=True)
        attr += bytes(SCHED_ATTR_SIZE - len(attr))
        return _call(n, pid, ctypes.create_string_buffer(attr, SCHED_ATTR_SIZE), 0)[0]
    if name == "ioprio_set":
        return _call(n, IOPRIO_WHO_PROCESS, pid, target["ioprio"])[0]
    if name == "pidfd_open":
        answer, fd = _call(n, pid, 0)
        if answer == "ok":
            os.close(fd)
        return answer
    if name == "migrate_pages":
        # No nodes to move from or to: the kernel finds the process, checks its access, then
        # refuses the empty set (EINVAL).
        return _call(n, pid, 0, None, None)[0]
    if name == "move_pages":
        return _call(n, pid, 0, None, None, None, 0)[0]
    if name == "kcmp":
        answer, _ = _call(n, pid, pid, KCMP_FILE, 0, 1)
        return answer
    raise ValueError(f"no process call {name!r}")


def process_reach(numbers: dict[str, int], targets: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Each PROCESS_CALLS call on each target ({name: its pid and current values})."""
    answers: dict[str, str] = {}
    for name in PROCESS_CALLS:
        if name == "process_madvise":
            # A pidfd it could not have: the kernel's answer is EBADF, the filter's EPERM.
            answers[name] = _call(numbers[name], -1, None, 0, MADV_COLD, 0)[0]
            continue
        aimed = {
            who: target
            for who, target in targets.items()
            if name not in PTRACE_CHECKED or target.get("dumpable")
        }
        answers[name] = _summed(
            {who: _on_process(name, numbers[name], target) for who, target in aimed.items()}
        )
    return answers


def _stat_of(path: str) -> os.stat_result | None:
    try:
        return os.stat(path, follow_symlinks=False)
    except OSError:
        return None


def _timespecs(st: os.stat_result | None) -> ctypes.Array[ctypes.c_char]:
    if st is None:
        return ctypes.create_string_buffer(
            b"".join(v.to_bytes(8, "little") for v in (0, UTIME_OMIT, 0, UTIME_OMIT))
        )
    values = (
        st.st_atime_ns // 10**9,
        st.st_atime_ns % 10**9,
        st.st_mtime_ns // 10**9,
        st.st_mtime_ns % 10**9,
    )
    return ctypes.create_string_buffer(b"".join(v.to_bytes(8, "little") for v in values))


def _timevals(st: os.stat_result | None) -> ctypes.Array[ctypes.c_char]:
    seconds = (0, 0) if st is None else (int(st.st_atime), int(st.st_mtime))
    return ctypes.create_string_buffer(
        b"".join(s.to_bytes(8, "little") + (0).to_bytes(8, "little") for s in seconds)
    )


def _on_file(name: str, n: int, path: str, fd: int) -> str:
    st = _stat_of(path)
    mode = 0o600 if st is None else st.st_mode & 0o7777
    # -1 leaves the owner and the group as they are.
    keep = -1
    cpath = path.encode()
    xname = XATTR_NAME
    if name == "chmod":
        return _call(n, cpath, mode)[0]
    if name == "fchmod":
        return _call(n, fd, mode)[0]
    if name in ("fchmodat", "fchmodat2"):
        return _call(n, AT_FDCWD, cpath, mode, 0)[0]
    if name in ("chown", "lchown"):
        return _call(n, cpath, keep, keep)[0]
    if name == "fchown":
        return _call(n, fd, keep, keep)[0]
    if name == "fchownat":
        return _call(n, AT_FDCWD, cpath, keep, keep, 0)[0]
    if name == "utime":
        seconds = (0, 0) if st is None else (int(st.st_atime), int(st.st_mtime))
        times = b"".join(s.to_bytes(8, "little") for s in seconds)
        return _call(n, cpath, ctypes.create_string_buffer(times))[0]
    if name == "utimes":
        return _call(n, cpath, _timevals(st))[0]
    if name == "futimesat":
        return _call(n, AT_FDCWD, cpath, _timevals(st))[0]
    if name == "utimensat":
        return _call(n, AT_FDCWD, cpath, _timespecs(st), 0)[0]
    if name in ("setxattr", "lsetxattr"):
        return _added(n, cpath, xname)
    if name == "fsetxattr":
        return _added(n, fd, xname)
    if name == "setxattrat":
        value = ctypes.create_string_buffer(b"x", 1)
        args = ctypes.addressof(value).to_bytes(8, "little") + (1).to_bytes(4, "little")
        args += XATTR_CREATE.to_bytes(4, "little")
        answer, _ = _call(n, AT_FDCWD, cpath, 0, xname, ctypes.create_string_buffer(args, 16), 16)
        if answer == "ok":
            os.removexattr(path, xname, follow_symlinks=False)
        return answer
    if name in ("removexattr", "lremovexattr"):
        return _call(n, cpath, xname)[0]
    if name == "fremovexattr":
        return _call(n, fd, xname)[0]
    if name == "removexattrat":
        return _call(n, AT_FDCWD, cpath, 0, xname)[0]
    if name == "file_setattr":
        # A NULL attribute block: the kernel refuses it (EFAULT) before it looks the path up.
        return _call(n, AT_FDCWD, cpath, None, FILE_ATTR_SIZE, 0)[0]
    raise ValueError(f"no metadata call {name!r}")


def _added(n: int, where: int | bytes, xname: bytes) -> str:
    """An extended attribute set and, where that succeeds, removed again at once."""
    answer, _ = _call(n, where, xname, ctypes.create_string_buffer(b"x", 1), 1, XATTR_CREATE)
    if answer == "ok":
        if isinstance(where, int):
            os.removexattr(where, xname)
        else:
            os.removexattr(where.decode(), xname, follow_symlinks=False)
    return answer


def metadata_reach(numbers: dict[str, int], files: dict[str, str], own: str) -> dict[str, str]:
    """Each METADATA_CALLS call on each of ``files`` ({name: path}); the descriptor calls on
    ``own``, its own output, opened for reading."""
    fd = os.open(own, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        answers = {}
        for name in METADATA_CALLS:
            aimed = {"own": own} if name in _ON_DESCRIPTOR else files
            answers[name] = _summed(
                {who: _on_file(name, numbers[name], path, fd) for who, path in aimed.items()}
            )
        return answers
    finally:
        os.close(fd)


def watch_reach(numbers: dict[str, int], directories: dict[str, str]) -> dict[str, str]:
    """inotify and fanotify: an instance of each, and a watch of each of ``directories``
    (with a descriptor it could not have when the instance was refused: EBADF)."""
    answers: dict[str, str] = {}
    answer, fd = _call(numbers["inotify_init"])
    if answer == "ok":
        os.close(fd)
    answers["inotify_init"] = answer
    answers["inotify_init1"], inotify = _call(numbers["inotify_init1"], IN_CLOEXEC)
    try:
        answers["inotify_add_watch"] = _summed(
            {
                who: _call(numbers["inotify_add_watch"], inotify, path.encode(), IN_ACCESS)[0]
                for who, path in directories.items()
            }
        )
    finally:
        if inotify >= 0:
            os.close(inotify)
    flags = FAN_CLASS_NOTIF | FAN_REPORT_FID
    answers["fanotify_init"], fanotify = _call(numbers["fanotify_init"], flags, os.O_RDONLY)
    try:
        answers["fanotify_mark"] = _summed(
            {
                who: _call(
                    numbers["fanotify_mark"],
                    fanotify,
                    FAN_MARK_ADD,
                    FAN_OPEN,
                    AT_FDCWD,
                    path.encode(),
                )[0]
                for who, path in directories.items()
            }
        )
    finally:
        if fanotify >= 0:
            os.close(fanotify)
    return answers
