"""Seccomp filters compiled with libseccomp (through ctypes): the kernel-surface baseline both
layers load (its rules are app/tools/seccomp_policy.py's), and the one-syscall filters that show
filters stack."""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from app.tools.seccomp_policy import (
    BASELINE,
    NONO_BASELINE,
    Rule,
    kept_groups,
    rules_of,
)

LIBSECCOMP = "libseccomp.so.2"

_SCMP_ACT_ALLOW = 0x7FFF0000
_SCMP_ACT_ERRNO = 0x00050000
# enum scmp_compare in seccomp.h
_COMPARE = {"ne": 1, "lt": 2, "gt": 6, "masked_eq": 7}


class LibseccompError(RuntimeError):
    """libseccomp is missing or refused to build a filter."""


@dataclass(frozen=True)
class SeccompFilter:
    """One compiled BPF program and the rules it was compiled from."""

    name: str
    rules: tuple[Rule, ...]
    program: bytes


class _ArgCmp(ctypes.Structure):
    # struct scmp_arg_cmp
    _fields_ = [
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    ]


@cache
def _lib() -> ctypes.CDLL:
    try:
        lib = ctypes.CDLL(LIBSECCOMP, use_errno=True)
    except OSError as error:
        raise LibseccompError(f"{LIBSECCOMP} cannot be loaded: {error}") from error
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_rule_add_array.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(_ArgCmp),
    ]
    lib.seccomp_rule_add_array.restype = ctypes.c_int
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_syscall_resolve_name.restype = ctypes.c_int
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.seccomp_export_bpf.restype = ctypes.c_int
    lib.seccomp_arch_native.argtypes = []
    lib.seccomp_arch_native.restype = ctypes.c_uint32
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    lib.seccomp_release.restype = None
    return lib


def check_available() -> None:
    """Raises LibseccompError when the library cannot be loaded."""
    _lib()


# Syscalls newer than the libseccomp some hosts ship (2.5.4 knows none of these but, on some
# builds, fchmodat2), by their native number. x86_64 and aarch64 number every syscall added
# since 5.0 alike (include/uapi/asm-generic/unistd.h and arch/x86/entry/syscalls/syscall_64.tbl
# agree from 424 on); on any other architecture the filter is not compiled at all, so a raw
# syscall(NUMBER) can never slip past a rule that was quietly left out.
AUDIT_ARCH_X86_64 = 0xC000003E
AUDIT_ARCH_AARCH64 = 0xC00000B7
NEWER_SYSCALLS: dict[str, int] = {
    "fchmodat2": 452,
    "setxattrat": 463,
    "removexattrat": 466,
    "file_setattr": 469,
}
_SHARED_NUMBERING = (AUDIT_ARCH_X86_64, AUDIT_ARCH_AARCH64)
# libseccomp's answer for a name it does not know (__NR_SCMP_ERROR).
_UNKNOWN_NAME = -1


def native_architecture() -> int:
    """The AUDIT_ARCH_* value of the architecture libseccomp compiles for."""
    return int(_lib().seccomp_arch_native())


def resolve_syscall(name: str) -> int:
    """The native syscall number of a name: libseccomp's, or NEWER_SYSCALLS' for one it does not
    know yet; the probes use the same number."""
    number: int = _lib().seccomp_syscall_resolve_name(name.encode("ascii"))
    if number == _UNKNOWN_NAME and name in NEWER_SYSCALLS:
        arch = native_architecture()
        if arch not in _SHARED_NUMBERING:
            raise LibseccompError(
                f"syscall {name!r}: this libseccomp does not know it and architecture "
                f"{arch:#x} is not one whose number is known here (x86_64, aarch64)"
            )
        return NEWER_SYSCALLS[name]
    # Other negative values are libseccomp's error marker or a pseudo-number for a syscall this
    # architecture does not have; either way a probe could not call it.
    if number < 0:
        raise LibseccompError(f"syscall {name!r} does not exist on this architecture")
    return number


def _add(lib: ctypes.CDLL, ctx: int, rule: Rule) -> None:
    action = _SCMP_ACT_ERRNO | getattr(errno, rule.errno_name)
    tests = (_ArgCmp * max(1, len(rule.when)))()
    for slot, test in zip(tests, rule.when, strict=False):
        slot.arg, slot.op = test.arg, _COMPARE[test.op]
        slot.datum_a, slot.datum_b = test.datums()
    rc = lib.seccomp_rule_add_array(
        ctx, action, resolve_syscall(rule.syscall), len(rule.when), tests
    )
    if rc < 0:
        raise LibseccompError(f"seccomp_rule_add({rule.as_json()}): {os.strerror(-rc)}")


def compile_filter(name: str, rules: Sequence[Rule]) -> SeccompFilter:
    """A filter that allows everything except what `rules` refuse."""
    lib = _lib()
    ctx = lib.seccomp_init(_SCMP_ACT_ALLOW)
    if not ctx:
        raise LibseccompError(f"seccomp_init failed for filter {name!r}")
    try:
        # The filter is for the native architecture only; libseccomp's default action for a
        # foreign one (a 32-bit syscall from this 64-bit process) is to kill the process.
        for rule in rules:
            _add(lib, ctx, rule)
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
    return SeccompFilter(name, tuple(rules), program)


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


@cache
def baseline_filter(left_out: frozenset[str] = frozenset()) -> SeccompFilter:
    """The filter the bubblewrap layer hands bwrap for every tool process; ``left_out`` names
    GROUP_ELEMENTS a role's policy leaves out (never in a shipped run)."""
    return compile_filter("baseline", rules_of(kept_groups(BASELINE, left_out)))


@cache
def nono_baseline_filter(left_out: frozenset[str] = frozenset()) -> SeccompFilter:
    """The filter every nono tool process installs before it reads its arguments; ``left_out``
    as for baseline_filter."""
    return compile_filter("nono-baseline", rules_of(kept_groups(NONO_BASELINE, left_out)))


@cache
def single_syscall_filter(syscall: str) -> SeccompFilter:
    """A filter refusing one syscall with EPERM: used to show that added filters stack."""
    return compile_filter(f"deny-{syscall}", (Rule(syscall),))


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
