"""Loads an OCI/Kubernetes seccomp profile into this process as runc does, then execs a program.

    /usr/bin/python3 -I runtime_seccomp.py [--no-new-privs] [--close FD]... PROFILE -- PROGRAM ...

The rehearsal's stand-in for the container runtime's seccomp step (rehearsal/container_init.py
runs it as part of a container's start), and the tests' way to run a command under a container's
profile. It compiles the profile with libseccomp (ctypes; the library runc links), loads it, and
execs the program with PATH lookup, so the program and everything it starts hold the filter.

no_new_privs: runc turns off libseccomp's habit of setting it with the filter ("Unset no new
privs bit", libcontainer/seccomp/seccomp_linux.go); a container gets it from
`allowPrivilegeEscalation: false` alone. So does this loader, unless `--no-new-privs` asks for
libseccomp's default (what an unprivileged caller needs, and what the tests use). Without
no_new_privs the kernel takes a filter only from a process with CAP_SYS_ADMIN, which is why runc
loads it before dropping capabilities in that case, and just before execve otherwise
(libcontainer/standard_init_linux.go); container_init.py keeps that order.

`--close FD`: a descriptor the caller handed over (the profile, this script), closed before the
exec so the program never inherits it.

What it does not do, and why that is enough here: only the native architecture is compiled (the
profile's other architectures are for 32-bit callers, which nothing here is), and a syscall name
this machine's libseccomp does not know is skipped, as runc skips it. Standard library only: it
runs on the system interpreter, at a container's uid, before the container's command exists.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from typing import Any

LIBSECCOMP = "libseccomp.so.2"

# The actions and comparisons the stack's profiles use (containerd's default as
# app/tools/bubblewrap/container_seccomp.py states it, and the bubblewrap pod's), by
# libseccomp's values (seccomp.h); a profile with any other is refused by name (KeyError).
ACTIONS = {"SCMP_ACT_ERRNO": 0x00050000, "SCMP_ACT_ALLOW": 0x7FFF0000}
OPERATORS = {"SCMP_CMP_LT": 2, "SCMP_CMP_EQ": 4, "SCMP_CMP_GT": 6, "SCMP_CMP_MASKED_EQ": 7}
# What runc answers for SCMP_ACT_ERRNO without an errnoRet.
DEFAULT_ERRNO = 1  # EPERM
# libseccomp's filter attributes (seccomp.h): set no_new_privs on load; report the kernel's own
# errno (EACCES, say) rather than libseccomp's ECANCELED when loading fails.
SCMP_FLTATR_CTL_NNP = 3
SCMP_FLTATR_API_SYSRAWRC = 9
USAGE = "usage: runtime_seccomp.py [--no-new-privs] [--close FD]... PROFILE -- PROGRAM [ARGS...]"


class ArgCmp(ctypes.Structure):
    _fields_ = [
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    ]


def _action(name: str, errno_ret: int | None) -> int:
    value = ACTIONS[name]
    if name == "SCMP_ACT_ERRNO":
        value |= DEFAULT_ERRNO if errno_ret is None else errno_ret
    return value


def load(profile: dict[str, Any], *, no_new_privs: bool) -> list[str]:
    """Loads the profile into this process; returns the names libseccomp did not know."""
    lib = ctypes.CDLL(LIBSECCOMP, use_errno=True)
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_attr_set.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(ArgCmp),
    ]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    ctx = lib.seccomp_init(_action(profile["defaultAction"], profile.get("defaultErrnoRet")))
    if not ctx:
        raise OSError("seccomp_init failed")
    for attribute, value in (
        (SCMP_FLTATR_CTL_NNP, 1 if no_new_privs else 0),
        (SCMP_FLTATR_API_SYSRAWRC, 1),
    ):
        rc = lib.seccomp_attr_set(ctx, attribute, value)
        if rc < 0:
            raise OSError(-rc, f"seccomp_attr_set({attribute}): {os.strerror(-rc)}")
    unknown = []
    for rule in profile.get("syscalls", []):
        action = _action(rule["action"], rule.get("errnoRet"))
        args = rule.get("args") or []
        array = (ArgCmp * max(len(args), 1))(
            *[
                ArgCmp(a["index"], OPERATORS[a["op"]], a.get("value", 0), a.get("valueTwo", 0))
                for a in args
            ]
        )
        for name in rule["names"]:
            number = lib.seccomp_syscall_resolve_name(name.encode())
            if number < 0:
                unknown.append(name)
                continue
            rc = lib.seccomp_rule_add_array(ctx, action, number, len(args), array)
            if rc < 0:
                raise OSError(-rc, f"seccomp_rule_add({name}): {os.strerror(-rc)}")
    rc = lib.seccomp_load(ctx)
    if rc < 0:
        raise OSError(-rc, f"seccomp_load: {os.strerror(-rc)}")
    return unknown


def main(argv: list[str]) -> int:
    no_new_privs, close = False, list[int]()
    while argv and argv[0] in ("--no-new-privs", "--close"):
        if argv[0] == "--no-new-privs":
            no_new_privs, argv = True, argv[1:]
        elif len(argv) > 1 and argv[1].isdigit():
            close, argv = [*close, int(argv[1])], argv[2:]
        else:
            break
    if len(argv) < 3 or argv[1] != "--":
        print(USAGE, file=sys.stderr)
        return 2
    try:
        with open(argv[0], encoding="utf-8") as handle:
            profile = json.load(handle)
        for fd in close:
            os.close(fd)
        load(profile, no_new_privs=no_new_privs)
        os.execvp(argv[2], argv[2:])
    except (OSError, ValueError, KeyError) as error:
        print(f"runtime_seccomp: cannot run {argv[2]} under {argv[0]}: {error}", file=sys.stderr)
    return 128


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
