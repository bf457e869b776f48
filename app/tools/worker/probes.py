"""The attacker's view: each path out of a tool process, tried once, its errno reported.

``attack-surface`` makes every call in one process, in a fixed order, from parameters the
controller hands it as one JSON object. Each call is built so that, if nothing refuses it,
the kernel completes it harmlessly (a connect that sends nothing, signal 0, a child that exits
at once, an object removed again) or refuses it for a reason of its own (no process 0, an
unknown command, a NULL pointer), so the same call made unconfined is the control.
``kernel-calls`` makes a named subset of the raw syscalls, for the filter checks.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
from collections.abc import Callable

from .protocol import Result, errno_name, ok, refused

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long

CLONE_NEWUSER = 0x10000000
CLONE_THREAD = 0x00010000
PTRACE_ATTACH = 16
UFFD_USER_MODE_ONLY = 1
_PROT_NONE = 0
# MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE
_MAP_PRIVATE_ANONYMOUS_NORESERVE = 0x02 | 0x20 | 0x4000
_MAP_FAILED = 2**64 - 1
IPC_PRIVATE = 0
IPC_CREAT = 0o1000
IPC_RMID = 0
TIOCSTI = 0x5412
_UNKNOWN_COMMAND = 0x7FFFFFFF

# Each raw call's arguments after the syscall number; see the module's docstring.
RAW_CALLS: dict[str, tuple[int, ...]] = {
    "ptrace": (PTRACE_ATTACH, 0),  # no process 0: ESRCH
    "bpf": (_UNKNOWN_COMMAND, 0, 0),  # an unknown command: EINVAL
    "keyctl": (_UNKNOWN_COMMAND,),  # an unknown operation: EOPNOTSUPP
    "add_key": (0, 0, 0, 0, 0),  # a NULL key type: EFAULT
    "io_uring_setup": (1, 0),  # NULL parameters: EFAULT
    "perf_event_open": (0, 0, -1, -1, 0),  # NULL attributes: EFAULT
    "userfaultfd": (UFFD_USER_MODE_ONLY,),  # allowed to anyone: an fd, closed at once
    "setns": (-1, 0),  # not a file descriptor: EBADF
    "mount": (0, 0, 0, 0, 0),  # a NULL target: EFAULT
    "clone": (CLONE_NEWUSER | CLONE_THREAD, 0, 0, 0, 0),  # an invalid combination: EINVAL
    "clone3": (0, 0),  # a NULL argument block of size 0: EINVAL
    "mq_open": (0, 0, 0, 0),  # a NULL name: EFAULT
    "shmget": (IPC_PRIVATE, 4096, IPC_CREAT | 0o600),  # a segment, removed at once
}
# What a successful call returned that must be released before the next one.
_RELEASE: dict[str, Callable[[int], None]] = {
    "userfaultfd": os.close,
    "shmget": lambda shm_id: _release_segment(shm_id),
}
_NUMBERS: dict[str, int] = {}


def _raw_errno(name: str, args: tuple[int, ...]) -> tuple[str, int]:
    """One raw syscall: ("ok", its return value) or (its errno name, -1)."""
    values = [ctypes.c_long(value) for value in args]
    values += [ctypes.c_long(0)] * (6 - len(values))
    ctypes.set_errno(0)
    rc = int(_libc.syscall(ctypes.c_long(_NUMBERS[name]), *values))
    if rc == -1:
        return _name(ctypes.get_errno()), -1
    return "ok", rc


def _name(err: int) -> str:
    return errno_name(err)


def _release_segment(shm_id: int) -> None:
    if _libc.shmctl(ctypes.c_int(shm_id), IPC_RMID, None) != 0:
        raise OSError(ctypes.get_errno(), f"shmctl({shm_id}, IPC_RMID)")


def _raw(name: str) -> str:
    answer, value = _raw_errno(name, RAW_CALLS[name])
    if answer == "ok" and name in _RELEASE:
        _RELEASE[name](value)
    return answer


def _os_errno(call: Callable[[], object]) -> str:
    try:
        call()
    except OSError as error:
        if error.errno is None:  # a timeout is not a kernel refusal: let it fail the run
            raise
        return _name(error.errno)
    return "ok"


def _connect(family: int, kind: int, address: tuple[str, int] | str) -> str:
    import socket  # attack-surface's alone (see there)

    def attempt() -> None:
        sock = socket.socket(family, kind)
        try:
            sock.settimeout(10)
            sock.connect(address)
        finally:
            sock.close()

    return _os_errno(attempt)


def _open_socket(family: int, kind: int, protocol: int = 0) -> str:
    import socket  # attack-surface's alone (see there)

    return _os_errno(lambda: socket.socket(family, kind, protocol).close())


def _read(path: str) -> str:
    def attempt() -> None:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        os.close(fd)

    return _os_errno(attempt)


def _create_and_remove(path: str) -> str:
    def attempt() -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        os.close(fd)
        os.unlink(path)

    return _os_errno(attempt)


def _write_past(path: str, limit: int) -> str:
    """Fills an output file to ``limit`` bytes, then writes one more; empties it again."""
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        block = b"\0" * 65536
        written = 0
        while written < limit:
            written += os.write(fd, block[: limit - written])
        return _os_errno(lambda: os.write(fd, b"\0"))
    finally:
        os.ftruncate(fd, 0)
        os.close(fd)


def _tiocsti() -> str:
    # stdout is a pipe under every launcher: even a call no filter refuses pushes nothing
    # into any terminal (ENOTTY).
    return _os_errno(lambda: fcntl.ioctl(1, TIOCSTI, b"x"))


def _fork() -> str:
    def attempt() -> None:
        child = os.fork()
        if child == 0:
            os._exit(0)
        os.waitpid(child, 0)

    return _os_errno(attempt)


def _map_past(limit: int) -> str:
    """Maps ``limit`` bytes of address space, inaccessible and never committed, then unmaps
    them: with what this process maps already, a mapping past its address-space limit."""
    _libc.mmap.restype = ctypes.c_void_p
    _libc.mmap.argtypes = (
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_long,
    )
    ctypes.set_errno(0)
    address = _libc.mmap(None, limit, _PROT_NONE, _MAP_PRIVATE_ANONYMOUS_NORESERVE, -1, 0)
    if address in (None, _MAP_FAILED):
        return _name(ctypes.get_errno())
    _libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    if _libc.munmap(address, limit) != 0:
        raise OSError(ctypes.get_errno(), "munmap")
    return "ok"


def _hold_descriptors(limit: int) -> str:
    """Holds ``limit`` more descriptors at once (copies of standard input), then closes them:
    past its open-file limit, which counts the ones it already has."""
    held: list[int] = []
    try:
        for _ in range(limit):
            held.append(os.dup(0))
    except OSError as error:
        return _name(error.errno or 0)
    finally:
        for fd in held:
            os.close(fd)
    return "ok"


def _lift(resource_number: int, limit: int) -> str:
    """Sets the limit to one past ``limit``, soft and hard: a raise when ``limit`` is the
    launcher's hard limit (EPERM for a process without CAP_SYS_RESOURCE), else a lowering.
    Through libc: Python's resource module turns that EPERM into a ValueError."""

    class Rlimit(ctypes.Structure):
        _fields_ = [("soft", ctypes.c_ulong), ("hard", ctypes.c_ulong)]

    ctypes.set_errno(0)
    if _libc.setrlimit(resource_number, ctypes.byref(Rlimit(limit + 1, limit + 1))) != 0:
        return _name(ctypes.get_errno())
    return "ok"


def _unshare_user() -> str:
    _libc.unshare.argtypes = [ctypes.c_int]
    ctypes.set_errno(0)
    return "ok" if _libc.unshare(CLONE_NEWUSER) == 0 else _name(ctypes.get_errno())


def attack_surface(args: list[str]) -> Result:
    """``PARAMETERS_JSON``: every probe, in order; reports {probe: "ok" or errno name}."""
    # Here, not at the top: a kernel-calls or peek-process start, which use neither, takes
    # 36 million instructions without json and socket, 61 million with them.
    import json
    import socket

    (text,) = args
    p = json.loads(text)
    _NUMBERS.update({name: int(number) for name, number in p["syscalls"].items()})
    answers: dict[str, str] = {}
    answers["host-file"] = _read(p["host_file"])
    answers["tcp4"] = _connect(socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", p["tcp4_port"]))
    if p.get("tcp6_port"):
        answers["tcp6"] = _connect(socket.AF_INET6, socket.SOCK_STREAM, ("::1", p["tcp6_port"]))
    answers["udp4"] = _connect(socket.AF_INET, socket.SOCK_DGRAM, (p["udp4"], 53))
    answers["udp6"] = _connect(socket.AF_INET6, socket.SOCK_DGRAM, (p["udp6"], 53))
    answers["raw4"] = _open_socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    answers["raw6"] = _open_socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
    answers["packet"] = _open_socket(socket.AF_PACKET, socket.SOCK_RAW)
    answers["netlink"] = _open_socket(socket.AF_NETLINK, socket.SOCK_RAW)
    answers["unix-path"] = _connect(socket.AF_UNIX, socket.SOCK_STREAM, p["unix_path"])
    answers["unix-abstract"] = _connect(
        socket.AF_UNIX, socket.SOCK_STREAM, "\0" + p["unix_abstract"]
    )
    answers["signal"] = _os_errno(lambda: os.kill(p["victim_pid"], 0))
    answers["environ"] = _read(f"/proc/{p['victim_pid']}/environ")
    answers["tiocsti"] = _tiocsti()
    answers["fork"] = _fork()
    for name in ("clone", "clone3", "setns", "mount", "ptrace", "keyctl", "add_key", "bpf"):
        answers[name] = _raw(name)
    for name in ("userfaultfd", "io_uring_setup", "perf_event_open", "shmget", "mq_open"):
        answers[name] = _raw(name)
    answers["shm-file"] = _create_and_remove(p["shm_file"])
    answers["output-create"] = _create_and_remove(p["output_new"])
    answers["output-past-limit"] = _write_past(p["output_file"], p["file_limit"])
    # Before the limits' probes, which may leave it no descriptor to spare.
    from .reach import metadata_reach, process_reach, watch_reach

    numbers = {name: int(number) for name, number in p["syscalls"].items()}
    answers.update(process_reach(numbers, p["processes"]))
    others = p["others"]
    own = {"own": p["output_file"], **({"other": others["file"]} if others else {})}
    answers.update(metadata_reach(numbers, own, p["output_file"]))
    folders = {"own": p["output_dir"], **({"other": others["folder"]} if others else {})}
    answers.update(watch_reach(numbers, folders))
    limits = p["limits"]
    answers["address-space"] = _map_past(limits["address_space_bytes"])
    answers["open-files"] = _hold_descriptors(limits["open_files"])
    # When it succeeds, this process is in a user namespace of its own from here on; no
    # capability it holds there lifts a limit.
    answers["unshare-user"] = _unshare_user()
    # Last: where no launcher's limit holds (the control), each lowers one of this process's.
    for name, (number, value) in sorted(p["lifts"].items()):
        answers[name] = _lift(int(number), int(value))
    return ok(answers=answers)


def kernel_calls(args: list[str]) -> Result:
    """``NAME=NUMBER ...``: each named raw call of RAW_CALLS, numbered by the controller."""
    pairs = [arg.partition("=") for arg in args]
    _NUMBERS.update({name: int(number) for name, _, number in pairs})
    return ok(answers={name: _raw(name) for name, _, _ in pairs})


def push_terminal_input(args: list[str]) -> Result:
    """TIOCSTI of one character into standard input: the attack itself, on the operator's
    terminal when the controller runs in one. A test starts the layer in a terminal of its own
    to try it: nono leaves a role the standard input its call is made with, which the launcher
    makes the call's own pipe (ENOTTY), never the controller's."""
    if args:
        raise ValueError("push-terminal-input takes no arguments")
    try:
        fcntl.ioctl(0, TIOCSTI, b"Z")
    except OSError as error:
        return refused(error)
    return ok()


def _iovec(address: int, length: int) -> ctypes.Structure:
    class Iovec(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("length", ctypes.c_size_t)]

    return Iovec(address, length)


def _peek(pid: int, getfd_number: int) -> dict[str, str]:
    """What this process gets of process ``pid``: its memory file, its environment, a copy of
    its descriptor 0 and one byte of its memory at address 0 (EFAULT: the kernel looked)."""
    answers = {
        "mem": _read(f"/proc/{pid}/mem"),
        "environ": _read(f"/proc/{pid}/environ"),
    }

    def take_descriptor() -> None:
        pidfd = os.pidfd_open(pid)
        try:
            ctypes.set_errno(0)
            fd = int(_libc.syscall(ctypes.c_long(getfd_number), pidfd, 0, 0))
            if fd < 0:
                number = ctypes.get_errno()
                raise OSError(number, os.strerror(number))
            os.close(fd)
        finally:
            os.close(pidfd)

    answers["pidfd_getfd"] = _os_errno(take_descriptor)
    buffer = ctypes.create_string_buffer(1)
    local, remote = _iovec(ctypes.addressof(buffer), 1), _iovec(0, 1)
    ctypes.set_errno(0)
    read = _libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    answers["process_vm_readv"] = "ok" if read >= 0 else _name(ctypes.get_errno())
    return answers


def peek_process(args: list[str]) -> Result:
    """``pidfd_getfd=NUMBER PID...``: what this process gets of each other process (_peek)."""
    name, _, number = args[0].partition("=")
    if name != "pidfd_getfd" or not number.isdigit():
        raise ValueError("peek-process takes pidfd_getfd=<syscall number> first")
    return ok(answers={pid: _peek(int(pid), int(number)) for pid in args[1:]})


ACTIONS = {
    "attack-surface": attack_surface,
    "peek-process": peek_process,
    "kernel-calls": kernel_calls,
    "push-terminal-input": push_terminal_input,
}
