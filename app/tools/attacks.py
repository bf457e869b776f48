"""The attacker's view of a tool process: every path out of it that the run tries, what an
unconfined process at the same uid gets (the control), and how a layer states its answers.

Each path is tried by the worker's ``attack-surface`` action (one process, every probe in a
fixed order); each layer says, per probe, the exact errno it answers with (see each layer's
``attack_answers``). The table of attacks in docs/proofs.md is this data.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.core.results import Errno
from app.core.roles import ROLES, Role
from app.core.tool_limits import ToolLimit, tool_limits
from app.tools.seccomp import resolve_syscall
from app.tools.worker.reach import METADATA_CALLS, PROCESS_CALLS, PTRACE_CHECKED, WATCH_CALLS

HOST_FILE = "/etc/passwd"
LIMITS = tool_limits()
# Each limit's probe: setrlimit(2) to one past the launcher's value (app/tools/worker/probes.py).
LIFTS: dict[str, ToolLimit] = {f"lift-{limit.rlimit[7:].lower()}": limit for limit in LIMITS.all()}
LIFT_PROBES: tuple[str, ...] = tuple(LIFTS)
# Addresses the controller's kernel routes. A UDP connect() only picks a route: nothing is sent.
UDP4_TARGET = "192.0.2.1"  # TEST-NET-1
UDP6_TARGET = "2001:db8::1"  # the IPv6 documentation prefix
OK = "ok"
# The calls on another process and on files, each attack's share. A container's runtime profile
# (RuntimeDefault) refuses the memory calls, file_setattr and fanotify_init to every process
# itself; apart, they leave the other attacks' controls standing there (a control the host
# refuses is a SKIP, with the host's answer).
MEMORY_CALLS: tuple[str, ...] = (*sorted(PTRACE_CHECKED), "process_madvise")
UID_ONLY_CALLS: tuple[str, ...] = tuple(c for c in PROCESS_CALLS if c not in MEMORY_CALLS)
FLAG_CALLS: tuple[str, ...] = ("file_setattr",)
MODE_CALLS: tuple[str, ...] = tuple(c for c in METADATA_CALLS if c not in FLAG_CALLS)
INOTIFY_CALLS: tuple[str, ...] = tuple(c for c in WATCH_CALLS if c.startswith("inotify"))
FANOTIFY_CALLS: tuple[str, ...] = tuple(c for c in WATCH_CALLS if c not in INOTIFY_CALLS)


def _mib(size: int) -> str:
    return f"{size // (1024 * 1024)} MiB"


@dataclass(frozen=True)
class Attack:
    """One path out, tried with one or more probes."""

    key: str
    claim: str  # completes "no role can ..."
    probes: tuple[str, ...]


ATTACKS: tuple[Attack, ...] = (
    Attack("files", f"read a host file outside its grants ({HOST_FILE})", ("host-file",)),
    Attack(
        "tcp",
        "connect over TCP to a listener on the controller's loopback, IPv4 or IPv6",
        ("tcp4", "tcp6"),
    ),
    Attack(
        "udp",
        f"route UDP off the host, to {UDP4_TARGET} or {UDP6_TARGET} (a connect(), which sends "
        "nothing)",
        ("udp4", "udp6"),
    ),
    Attack("raw", "open a raw IPv4, raw IPv6 or packet socket", ("raw4", "raw6", "packet")),
    Attack(
        "netlink",
        "open a netlink socket, the kernel's network configuration interface",
        ("netlink",),
    ),
    Attack(
        "unix",
        "connect to a unix socket the controller listens on, by path or in the abstract namespace",
        ("unix-path", "unix-abstract"),
    ),
    Attack("signal", "signal a process that runs outside it at the same uid", ("signal",)),
    Attack("environ", "read that process's environment", ("environ",)),
    Attack("terminal", "push input into a terminal (ioctl TIOCSTI)", ("tiocsti",)),
    Attack(
        "processes",
        "start a process or a thread: fork, clone (here with CLONE_NEWUSER), clone3",
        ("fork", "clone", "clone3"),
    ),
    Attack(
        "namespaces",
        "make or join a namespace, or mount: unshare(CLONE_NEWUSER), setns, mount",
        ("unshare-user", "setns", "mount"),
    ),
    Attack("ptrace", "trace a process: ptrace", ("ptrace",)),
    Attack("keyring", "use the kernel keyring: keyctl, add_key", ("keyctl", "add_key")),
    Attack("bpf", "load or inspect eBPF: bpf", ("bpf",)),
    Attack("userfaultfd", "open a userfaultfd", ("userfaultfd",)),
    Attack("io_uring", "set up an io_uring", ("io_uring_setup",)),
    Attack("perf", "open a perf event", ("perf_event_open",)),
    Attack(
        "memory",
        "keep memory past its own exit: System V shared memory, a POSIX message queue, a file "
        "in /dev/shm",
        ("shmget", "mq_open", "shm-file"),
    ),
    Attack(
        "disk",
        "fill the disk through its output: create a file there, or write one of its files "
        "past 1 MiB",
        ("output-create", "output-past-limit"),
    ),
    Attack(
        "address-space",
        f"map more than its address-space limit ({_mib(LIMITS.address_space_bytes.value)}) "
        "allows: one mapping of that size, beside what it maps already",
        ("address-space",),
    ),
    Attack(
        "open-files",
        f"hold more than {LIMITS.open_files.value} descriptors at once",
        ("open-files",),
    ),
    Attack(
        "other-processes",
        "reach another process at its uid (the process outside any sandbox; where the tools "
        "share the controller's uid, the controller, its proxy host and its launch processes "
        "too): read or set its limits, priority, CPUs, scheduling or I/O priority, or open a "
        "pidfd of it",
        UID_ONLY_CALLS,
    ),
    Attack(
        "process-memory",
        "move or advise the memory of the process outside any sandbox at its uid, or compare "
        "its descriptors",
        MEMORY_CALLS,
    ),
    Attack(
        "file-metadata",
        "change the mode, owner, times or extended attributes of another role's output or its "
        "own, by path, descriptor or directory fd",
        MODE_CALLS,
    ),
    Attack("file-flags", "set a file's attribute flags (file_setattr)", FLAG_CALLS),
    Attack("watches", "watch another role's output folder with inotify", INOTIFY_CALLS),
    Attack("fanotify", "watch another role's output folder with fanotify", FANOTIFY_CALLS),
    Attack(
        "limits",
        "lift a limit the launcher set above its value, soft and hard: address space, CPU "
        f"time ({LIMITS.cpu_seconds.value} s), file size, open files, processes "
        f"({LIMITS.processes.value}: none beside itself)",
        LIFT_PROBES,
    ),
)
PROBES: tuple[str, ...] = tuple(probe for attack in ATTACKS for probe in attack.probes)
# The raw syscalls among the probes, which the controller numbers for the worker.
SYSCALL_PROBES: tuple[str, ...] = (
    "clone",
    "clone3",
    "setns",
    "mount",
    "ptrace",
    "keyctl",
    "add_key",
    "bpf",
    "userfaultfd",
    "io_uring_setup",
    "perf_event_open",
    "shmget",
    "mq_open",
    *PROCESS_CALLS,
    *METADATA_CALLS,
    *WATCH_CALLS,
)

# What an unconfined process at the tool's uid gets: each call completes, or the kernel
# refuses it for a reason of its own (see the worker's probes). Raw and packet sockets need
# CAP_NET_RAW, which the uid does not hold, so no control can open them.
CONTROL_ANSWERS: dict[str, str] = {
    "host-file": OK,
    "tcp4": OK,
    "tcp6": OK,
    "udp4": OK,
    "udp6": OK,
    "raw4": "EPERM",
    "raw6": "EPERM",
    "packet": "EPERM",
    "netlink": OK,
    "unix-path": OK,
    "unix-abstract": OK,
    "signal": OK,
    "environ": OK,
    "tiocsti": "ENOTTY",
    "fork": OK,
    "clone": "EINVAL",
    "clone3": "EINVAL",
    "unshare-user": OK,
    "setns": "EBADF",
    "mount": "EFAULT",
    "ptrace": "ESRCH",
    "keyctl": "EOPNOTSUPP",
    "add_key": "EFAULT",
    "bpf": "EINVAL",
    "userfaultfd": OK,
    "io_uring_setup": "EFAULT",
    "perf_event_open": "EFAULT",
    "shmget": OK,
    "mq_open": "EFAULT",
    "shm-file": OK,
    "output-create": OK,
    "output-past-limit": OK,
    "address-space": OK,
    "open-files": OK,
    **{probe: OK for probe in LIFT_PROBES},
    **{probe: OK for probe in PROCESS_CALLS},
    # No node set to move to, after it found the process and was allowed it.
    "migrate_pages": "EINVAL",
    # A pidfd it does not have.
    "process_madvise": "EBADF",
    **{probe: OK for probe in METADATA_CALLS},
    # No such attribute: the kernel looked, with the right to write it.
    **{probe: "ENODATA" for probe in METADATA_CALLS if "removexattr" in probe},
    # A NULL attribute block.
    "file_setattr": "EFAULT",
    **{probe: OK for probe in WATCH_CALLS},
}

# What either layer answers to the limits' probes: the kernel's, for limits the launcher's
# loader sets the same way under both (app/tools/loader.py).
LIMIT_REASONS: dict[str, str] = {
    "address-space": "the loader's RLIMIT_AS",
    "open-files": "the loader's RLIMIT_NOFILE",
    "limits": "each is the loader's hard limit, which only CAP_SYS_RESOURCE may raise",
}
LIMIT_ERRNOS: dict[str, Errno] = {
    "address-space": Errno.ENOMEM,
    "open-files": Errno.EMFILE,
    **{probe: Errno.EPERM for probe in LIFT_PROBES},
}

# The attack whose check fails first when a limit is left out of a role's policy: each limit's
# own refusal, or, where the kernel's refusal needs more than a moment (CPU time) or the baseline
# answers first (a new process: EPERM), the refusal to lift it.
LIMIT_WATCHERS: dict[str, tuple[str, str]] = {
    "address_space_bytes": ("address-space", "a mapping of the limit's size more succeeds"),
    "cpu_seconds": ("limits", "its CPU-time limit can be set one second higher"),
    "file_bytes": ("disk", "a file grows past 1 MiB"),
    "open_files": ("open-files", "it holds that many more descriptors"),
    "processes": ("limits", "its process limit can be set to 2"),
}

# The baseline's rule groups that are elements of each role's policy (seccomp_policy.py's
# GROUP_ELEMENTS), each watched by the attack of the same name, and what it shows without it.
FILTER_GROUP_WATCHERS: dict[str, str] = {
    "other-processes": "its call on a process outside it gets the kernel's answer, not EPERM",
    "file-metadata": "it changes its own output's mode, times and attributes",
    "watches": "it opens an inotify instance",
}

# Syscalls the baseline refuses that the filter checks of both layers sample, with what the
# kernel answers the worker's harmless call when no filter does (see the worker's RAW_CALLS).
FILTER_SAMPLES: dict[str, Errno] = {
    "ptrace": Errno.ESRCH,
    "bpf": Errno.EINVAL,
    "keyctl": Errno.EOPNOTSUPP,
    "io_uring_setup": Errno.EFAULT,
}


def kernel_call_args(names: tuple[str, ...] | list[str]) -> list[str]:
    """The worker's ``kernel-calls`` arguments: each name with libseccomp's number for it."""
    return [f"{name}={resolve_syscall(name)}" for name in names]


@dataclass(frozen=True)
class AttackAnswers:
    """What each probe got in one run: the unconfined control's answer and each role's."""

    control: Mapping[str, str]  # probe -> "ok" or an errno name
    roles: Mapping[Role, Mapping[str, str]]

    def as_json(self) -> dict[str, Any]:
        return {
            "control": dict(self.control),
            "roles": {role: dict(answers) for role, answers in self.roles.items()},
        }


# A layer's answer to one probe: the same errno for every role, or one per role.
Answer = Errno | Mapping[Role, Errno]


@dataclass(frozen=True)
class LayerAnswers:
    """What one layer answers to each attack: the errno per probe, and why, in a few words."""

    why: Mapping[str, str]  # attack key -> reason
    errnos: Mapping[str, Answer]  # probe -> answer

    def expected(self, probe: str, role: Role) -> str:
        answer = self.errnos[probe]
        return (answer if isinstance(answer, Errno) else answer[role]).value


def describe(answer: Answer) -> str:
    """ "EPERM", or "EACCES for the reader and writer, EPERM for the evaluator"."""
    if isinstance(answer, Errno):
        return answer.value
    by_errno: dict[Errno, list[Role]] = {}
    for role in ROLES:
        by_errno.setdefault(answer[role], []).append(role)
    if len(by_errno) == 1:
        return next(iter(by_errno)).value
    return ", ".join(
        f"{errno.value} for the {' and '.join(roles)}" for errno, roles in by_errno.items()
    )
