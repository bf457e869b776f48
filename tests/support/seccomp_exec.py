"""Runs a program under an OCI/Kubernetes-style seccomp profile, the way a container runtime would.

    /usr/bin/python3 seccomp_exec.py PROFILE.json -- PROGRAM [ARGS...]

Compiles the profile with libseccomp (ctypes; the same library runc uses), loads it into this
process with no_new_privs set, and execs the program, so the program and everything it starts
run under the profile, as a container's processes do. Standard library only: it runs on the
system interpreter at the tool's uid, from a copy staged where that uid can read it.

What it does not do, and why that is enough here: only the native architecture is compiled (the
profile's other architectures are for 32-bit callers, which nothing here is), and a syscall name
this machine's libseccomp does not know is skipped, as runc skips it.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from typing import Any

LIBSECCOMP = "libseccomp.so.2"

ACTIONS = {
    "SCMP_ACT_KILL": 0x00000000,
    "SCMP_ACT_KILL_THREAD": 0x00000000,
    "SCMP_ACT_KILL_PROCESS": 0x80000000,
    "SCMP_ACT_TRAP": 0x00030000,
    "SCMP_ACT_ERRNO": 0x00050000,
    "SCMP_ACT_LOG": 0x7FFC0000,
    "SCMP_ACT_ALLOW": 0x7FFF0000,
}
OPERATORS = {
    "SCMP_CMP_NE": 1,
    "SCMP_CMP_LT": 2,
    "SCMP_CMP_LE": 3,
    "SCMP_CMP_EQ": 4,
    "SCMP_CMP_GE": 5,
    "SCMP_CMP_GT": 6,
    "SCMP_CMP_MASKED_EQ": 7,
}
# What runc answers for SCMP_ACT_ERRNO without an errnoRet.
DEFAULT_ERRNO = 1  # EPERM


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


def load(profile: dict[str, Any]) -> list[str]:
    """Loads the profile into this process; returns the names libseccomp did not know."""
    lib = ctypes.CDLL(LIBSECCOMP, use_errno=True)
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
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
    if len(argv) < 3 or argv[1] != "--":
        print("usage: seccomp_exec.py PROFILE.json -- PROGRAM [ARGS...]", file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as handle:
        profile = json.load(handle)
    load(profile)
    os.execv(argv[2], argv[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
