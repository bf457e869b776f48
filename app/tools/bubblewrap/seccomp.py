"""Seccomp filters compiled with libseccomp (through ctypes) and handed to bwrap on a memfd."""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
from dataclasses import dataclass
from functools import cache

LIBSECCOMP = "libseccomp.so.2"

_SCMP_ACT_ALLOW = 0x7FFF0000
_SCMP_ACT_ERRNO = 0x00050000

# Syscalls no tool process needs and every one of which widens what a compromised tool could
# reach. A denylist: anything not named is allowed, so this narrows the kernel surface
# without claiming to be an allowlist.
BASELINE_SYSCALLS: tuple[str, ...] = (
    # Reading or steering another process's memory.
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    # Kernel programs, tracing and the usual exploit primitives.
    "bpf",
    "perf_event_open",
    "userfaultfd",
    # io_uring performs file and socket operations that a seccomp filter never sees.
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    # The kernel keyring is not confined by the mount or pid namespaces.
    "keyctl",
    "add_key",
    "request_key",
    # Loading kernel code.
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    # Rearranging the mount tree bwrap built, old and new mount APIs alike.
    "mount",
    "umount2",
    "pivot_root",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    # Joining another process's namespaces, and opening files by handle, which ignores
    # the mount tree entirely.
    "setns",
    "open_by_handle_at",
    # NOTE: unshare and clone stay allowed on purpose. The kernel's own refusal of a nested
    # user namespace under --disable-userns (ENOSPC) is a check of its own; a filter here
    # would answer first and hide whether bwrap's switch works.
)
BASELINE_ERRNO = errno.EPERM


class LibseccompError(RuntimeError):
    """libseccomp is missing or refused to build a filter."""


@dataclass(frozen=True)
class SeccompFilter:
    """One compiled BPF program: the syscalls it refuses, the errno it answers with."""

    name: str
    syscalls: tuple[str, ...]
    errno_name: str
    program: bytes


@cache
def _lib() -> ctypes.CDLL:
    try:
        lib = ctypes.CDLL(LIBSECCOMP, use_errno=True)
    except OSError as error:
        raise LibseccompError(f"{LIBSECCOMP} cannot be loaded: {error}") from error
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_rule_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint]
    lib.seccomp_rule_add.restype = ctypes.c_int
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_syscall_resolve_name.restype = ctypes.c_int
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.seccomp_export_bpf.restype = ctypes.c_int
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    lib.seccomp_release.restype = None
    return lib


def check_available() -> None:
    """Raises LibseccompError when the library cannot be loaded."""
    _lib()


def resolve_syscall(name: str) -> int:
    """The native syscall number libseccomp gives a name; the probes use the same number."""
    number: int = _lib().seccomp_syscall_resolve_name(name.encode("ascii"))
    # Negative values are libseccomp's error marker or a pseudo-number for a syscall this
    # architecture does not have; either way a probe could not call it.
    if number < 0:
        raise LibseccompError(f"syscall {name!r} does not exist on this architecture")
    return number


def compile_filter(name: str, syscalls: tuple[str, ...], errno_value: int) -> SeccompFilter:
    """A filter that allows everything except `syscalls`, which fail with `errno_value`."""
    lib = _lib()
    ctx = lib.seccomp_init(_SCMP_ACT_ALLOW)
    if not ctx:
        raise LibseccompError(f"seccomp_init failed for filter {name!r}")
    try:
        # The filter is for the native architecture only; libseccomp's default action for a
        # foreign one (a 32-bit syscall from this 64-bit process) is to kill the process.
        for syscall in syscalls:
            rc = lib.seccomp_rule_add(
                ctx, _SCMP_ACT_ERRNO | errno_value, resolve_syscall(syscall), 0
            )
            if rc < 0:
                raise LibseccompError(f"seccomp_rule_add({syscall}): {os.strerror(-rc)}")
        fd = os.memfd_create(f"seccomp-{name}", os.MFD_CLOEXEC)
        try:
            rc = lib.seccomp_export_bpf(ctx, fd)
            if rc < 0:
                raise LibseccompError(f"seccomp_export_bpf({name}): {os.strerror(-rc)}")
            os.lseek(fd, 0, os.SEEK_SET)
            program = _read_all(fd)
        finally:
            os.close(fd)
    finally:
        lib.seccomp_release(ctx)
    return SeccompFilter(name, syscalls, errno.errorcode[errno_value], program)


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


@cache
def baseline_filter() -> SeccompFilter:
    return compile_filter("baseline", BASELINE_SYSCALLS, BASELINE_ERRNO)


@cache
def single_syscall_filter(syscall: str) -> SeccompFilter:
    """A filter refusing one syscall with EPERM: used to show that added filters stack."""
    return compile_filter(f"deny-{syscall}", (syscall,), errno.EPERM)


def program_fd(seccomp_filter: SeccompFilter) -> int:
    """A fresh sealed memfd holding the program at offset 0, for one bwrap call.

    bwrap reads its fd to the end, so every call needs its own; the seals stop anything that
    shares the fd from altering the program between here and bwrap's read. The caller
    closes it once bwrap has exited.
    """
    fd = os.memfd_create(f"seccomp-{seccomp_filter.name}", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        view = memoryview(seccomp_filter.program)
        while view:
            view = view[os.write(fd, view) :]
        fcntl.fcntl(
            fd,
            fcntl.F_ADD_SEALS,
            fcntl.F_SEAL_WRITE | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL,
        )
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd
