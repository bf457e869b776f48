"""The seccomp baseline as data: the rule groups every tool process's filter refuses, why each
exists, and the committed form they render to (app/tools/seccomp.py compiles them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

AF_INET = 2
AF_INET6 = 10
CLONE_NEWUSER = 0x10000000
TIOCSTI = 0x5412
TIOCLINUX = 0x541C
# ioctl's request is an unsigned int: the kernel ignores the upper half of the register, so
# the filter must too, or a caller could set a high bit and slip past an exact comparison.
_INT_MASK = 0xFFFF_FFFF


@dataclass(frozen=True)
class ArgTest:
    """One condition on a syscall argument; every condition of a rule must hold."""

    arg: int
    op: Literal["ne", "lt", "gt", "masked_eq"]
    value: int
    text: str  # how the committed policy states it
    mask: int = _INT_MASK  # masked_eq only

    def datums(self) -> tuple[int, int]:
        return (self.mask, self.value) if self.op == "masked_eq" else (self.value, 0)


@dataclass(frozen=True)
class Rule:
    """A syscall the filter answers with an errno, unconditionally or when its arguments match."""

    syscall: str
    errno_name: Literal["EPERM", "ENOSYS"] = "EPERM"
    when: tuple[ArgTest, ...] = ()

    def as_json(self) -> dict[str, str]:
        rendered = {"syscall": self.syscall, "errno": self.errno_name}
        if self.when:
            rendered["when"] = " and ".join(test.text for test in self.when)
        return rendered


@dataclass(frozen=True)
class RuleGroup:
    """Rules that close one path, with the reason they exist; a group with an ``element`` name
    is one element of each role's policy (elements.json), which ``--break`` can leave out."""

    why: str
    rules: tuple[Rule, ...]
    element: str = ""


def _refuse(*names: str) -> tuple[Rule, ...]:
    return tuple(Rule(name) for name in names)


# The address families numbered between AF_INET and AF_INET6 (linux/socket.h).
_FAMILIES_BETWEEN = (
    (3, "AF_AX25 (3)"),
    (4, "AF_IPX (4)"),
    (5, "AF_APPLETALK (5)"),
    (6, "AF_NETROM (6)"),
    (7, "AF_BRIDGE (7)"),
    (8, "AF_ATMPVC (8)"),
    (9, "AF_X25 (9)"),
)


PRIO_PROCESS = 0


def _is_not_zero(arg: int, text: str) -> ArgTest:
    # A 64-bit comparison of an argument the kernel reads as a 32-bit int (pid_t, int): the
    # only value it lets through is 0 in all 64 bits, whose low half is 0 too, so no value
    # with high bits set can read as another pid to the kernel and as 0 to the filter; a
    # value with high bits set over a zero low half is refused though the kernel would read
    # 0, which costs nothing (glibc passes an int, sign-extended: 0 stays 0).
    return ArgTest(arg, "ne", 0, text)


def _domain(op: Literal["lt", "gt"], value: int, text: str) -> ArgTest:
    return ArgTest(0, op, value, f"domain {text}")


# What every tool process of either layer may not do. A denylist over an allowing default: it
# narrows the kernel surface without claiming to be an allowlist. Each group is watched by the
# attack checks, which make each call beside a control where the kernel itself answers.
BASELINE: tuple[RuleGroup, ...] = (
    RuleGroup(
        "reading or steering another process's memory or file descriptors",
        _refuse("ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd"),
    ),
    RuleGroup(
        "kernel programs, tracing and the usual exploit primitives",
        _refuse("bpf", "perf_event_open", "userfaultfd"),
    ),
    RuleGroup(
        "io_uring performs file and socket operations that a seccomp filter never sees",
        _refuse("io_uring_setup", "io_uring_enter", "io_uring_register"),
    ),
    RuleGroup(
        "the kernel keyring, which no namespace here confines",
        _refuse("keyctl", "add_key", "request_key"),
    ),
    RuleGroup(
        "loading kernel code",
        _refuse("kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module"),
    ),
    RuleGroup(
        "rearranging the mount tree, with the old and the new mount API",
        _refuse(
            "mount",
            "umount2",
            "pivot_root",
            "move_mount",
            "open_tree",
            "fsopen",
            "fsconfig",
            "fsmount",
            "fspick",
            "mount_setattr",
        ),
    ),
    RuleGroup(
        "joining another process's namespaces, and opening files by handle, which ignores the "
        "mount tree",
        _refuse("setns", "open_by_handle_at"),
    ),
    RuleGroup(
        "new processes and threads: a tool is one single-threaded process, so it cannot fill "
        "the process table; clone3 keeps its flags in memory a filter cannot read, and ENOSYS "
        "makes libc fall back to clone, which is refused",
        (*_refuse("fork", "vfork", "clone"), Rule("clone3", "ENOSYS")),
    ),
    RuleGroup(
        "sockets other than IPv4 and IPv6: unix (a host's pathname and abstract sockets), "
        "netlink, packet and every other family",
        (
            Rule("socket", when=(_domain("lt", AF_INET, "< AF_INET (2)"),)),
            # libseccomp takes one comparison per argument and rule: the families between
            # the two allowed ones are named one by one.
            *(
                Rule("socket", when=(ArgTest(0, "masked_eq", number, f"domain == {name}"),))
                for number, name in _FAMILIES_BETWEEN
            ),
            Rule("socket", when=(_domain("gt", AF_INET6, "> AF_INET6 (10)"),)),
        ),
    ),
    RuleGroup(
        "pushing input into a terminal",
        (
            Rule("ioctl", when=(ArgTest(1, "masked_eq", TIOCSTI, "request == TIOCSTI"),)),
            Rule("ioctl", when=(ArgTest(1, "masked_eq", TIOCLINUX, "request == TIOCLINUX"),)),
        ),
    ),
    RuleGroup(
        "kernel memory that outlives the process: System V IPC and POSIX message queues",
        _refuse("shmget", "msgget", "semget", "mq_open"),
    ),
    RuleGroup(
        "reaching another process at the same uid, which needs no more than the uid and which "
        "the controller's dumpable flag does not stop: its limits (prlimit64 of any pid but 0, "
        "the loader's own setrlimit), its priority (getpriority and setpriority of anything but "
        "this process: PRIO_PROCESS with who 0; PRIO_USER with who 0 would be every process of "
        "the uid, so both arguments are tested), its CPUs, scheduling and I/O priority, its "
        "memory's placement and advice, and a comparison of its descriptors. pidfd_open is "
        "refused for any pid, its own included: a tool has no child, and a pidfd serves only to "
        "signal, wait for, advise or take descriptors from a process, none of which a tool "
        "does, so no pid is worth an exception",
        (
            Rule("prlimit64", when=(_is_not_zero(0, "pid != 0"),)),
            Rule("setpriority", when=(_is_not_zero(0, "which != PRIO_PROCESS (0)"),)),
            Rule("setpriority", when=(_is_not_zero(1, "who != 0"),)),
            Rule("getpriority", when=(_is_not_zero(0, "which != PRIO_PROCESS (0)"),)),
            Rule("getpriority", when=(_is_not_zero(1, "who != 0"),)),
            *_refuse(
                "sched_setaffinity",
                "sched_setscheduler",
                "sched_setparam",
                "sched_setattr",
                "ioprio_set",
                "migrate_pages",
                "move_pages",
                "process_madvise",
                "kcmp",
                "pidfd_open",
            ),
        ),
        element="other-processes",
    ),
    RuleGroup(
        "changing a file's metadata, which Landlock has no right for: its mode, owner, times, "
        "extended attributes and attribute flags, by path, descriptor or directory fd, the "
        "syscalls newer than this libseccomp by their number; a tool writes the contents of "
        "its own files alone",
        _refuse(
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
        ),
        element="file-metadata",
    ),
    RuleGroup(
        "watching files: inotify on another role's folder or on the run's secrets, fanotify",
        _refuse(
            "inotify_init", "inotify_init1", "inotify_add_watch", "fanotify_init", "fanotify_mark"
        ),
        element="watches",
    ),
)

# nono creates no user namespace of its own, so a nono tool could create one and, inside it,
# hold every capability over new namespaces. bubblewrap answers the same call itself
# (--disable-userns, ENOSPC), which a filter here would hide; so only nono's filter has it.
NESTED_USERNS = RuleGroup(
    "nested user namespaces (bubblewrap refuses them with --disable-userns instead)",
    (
        Rule(
            "unshare",
            when=(
                ArgTest(0, "masked_eq", CLONE_NEWUSER, "flags & CLONE_NEWUSER", mask=CLONE_NEWUSER),
            ),
        ),
    ),
)
NONO_BASELINE: tuple[RuleGroup, ...] = (*BASELINE, NESTED_USERNS)
# The groups that are elements of each role's policy (elements.json), in order: a role's filter
# holds those its policy names, so that ``--break`` and the removal test can leave one out.
GROUP_ELEMENTS: tuple[str, ...] = tuple(group.element for group in BASELINE if group.element)


def kept_groups(groups: Sequence[RuleGroup], left_out: frozenset[str]) -> tuple[RuleGroup, ...]:
    unknown = left_out - set(GROUP_ELEMENTS)
    if unknown:
        raise ValueError(f"no rule group of the baseline is named {sorted(unknown)}")
    return tuple(group for group in groups if group.element not in left_out)


def rules_of(groups: Sequence[RuleGroup]) -> tuple[Rule, ...]:
    return tuple(rule for group in groups for rule in group.rules)


def render_groups(groups: Sequence[RuleGroup]) -> dict[str, object]:
    """The committed form of a filter: what it refuses, why, and with which errno."""
    return {
        "default": "allow",
        "architecture": "native; numbers resolved by libseccomp when the filter is compiled, "
        "those it does not know from app/tools/seccomp.py's NEWER_SYSCALLS (x86_64 and aarch64 "
        "alone)",
        "groups": [
            {
                **({"element": group.element} if group.element else {}),
                "why": group.why,
                "rules": [rule.as_json() for rule in group.rules],
            }
            for group in groups
        ],
    }
