"""Builds the seccomp profile of the hardened container that runs bwrap: pure, data in, dict out.

The profile is the container runtime's default, plus exactly what bwrap needs to build its
sandbox from inside an unprivileged container. Each widening is named with the bwrap step that
uses it, and a test removes each in turn and shows bwrap failing on that step
(tests/integration/test_container_seccomp.py). The dict is the OCI runtime spec's
`linux.seccomp` shape, which the Security Profiles Operator's SeccompProfile takes as its spec
and writes to each node for a `Localhost` reference; `render.py` commits it under
policies/bubblewrap/ and the program reads it from there.
"""

from __future__ import annotations

import errno
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

# The namespace flags of clone(2) and unshare(2) (linux/sched.h).
NAMESPACE_FLAGS: Final = {
    "CLONE_NEWNS": 0x00020000,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": 0x10000000,
    "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}
ALL_NAMESPACE_FLAGS: Final = sum(NAMESPACE_FLAGS.values())

# The runtime default refuses everything it does not list with EPERM (runc's answer for
# SCMP_ACT_ERRNO without errnoRet), and clone3 with ENOSYS, so that glibc falls back to clone,
# whose flags a filter can read (clone3 passes them in memory, out of a filter's reach).
DEFAULT_ACTION: Final = "SCMP_ACT_ERRNO"
CLONE3_ERRNO: Final = errno.ENOSYS

# EKS nodes are x86_64 or arm64; each list adds the 32-bit ABIs of its CPU, as runtimes do.
ARCHITECTURES: Final = (
    "SCMP_ARCH_X86_64",
    "SCMP_ARCH_X86",
    "SCMP_ARCH_X32",
    "SCMP_ARCH_AARCH64",
    "SCMP_ARCH_ARM",
)

# What the container runtime's default profile allows any container, whatever its
# capabilities: the unconditional allowlist of containerd's default profile
# (contrib/seccomp/seccomp_default.go, v2.3.4; moby's profiles/seccomp/default.json has the same
# intent), including ptrace and process_vm_* (allowed there on every kernel since 4.8). An
# unprivileged container gets nothing from the capability-gated lists: mount, umount2,
# pivot_root, unshare, sethostname, setns and the namespace flags of clone are refused.
# Names a kernel or libseccomp does not know are ignored by runc, so one list serves every node.
# fmt: off
RUNTIME_DEFAULT_ALLOWED: Final = (
    "_llseek", "_newselect", "accept", "accept4", "access", "adjtimex", "alarm", "bind", "brk",
    "cachestat", "capget", "capset", "chdir", "chmod", "chown", "chown32", "clock_adjtime",
    "clock_adjtime64", "clock_getres", "clock_getres_time64", "clock_gettime", "clock_gettime64",
    "clock_nanosleep", "clock_nanosleep_time64", "close", "close_range", "connect",
    "copy_file_range", "creat", "dup", "dup2", "dup3", "epoll_create", "epoll_create1",
    "epoll_ctl", "epoll_ctl_old", "epoll_pwait", "epoll_pwait2", "epoll_wait", "epoll_wait_old",
    "eventfd", "eventfd2", "execve", "execveat", "exit", "exit_group", "faccessat", "faccessat2",
    "fadvise64", "fadvise64_64", "fallocate", "fanotify_mark", "fchdir", "fchmod", "fchmodat",
    "fchmodat2", "fchown", "fchown32", "fchownat", "fcntl", "fcntl64", "fdatasync", "fgetxattr",
    "flistxattr", "flock", "fork", "fremovexattr", "fsetxattr", "fstat", "fstat64", "fstatat64",
    "fstatfs", "fstatfs64", "fsync", "ftruncate", "ftruncate64", "futex", "futex_requeue",
    "futex_time64", "futex_wait", "futex_waitv", "futex_wake", "futimesat", "get_robust_list",
    "get_thread_area", "getcpu", "getcwd", "getdents", "getdents64", "getegid", "getegid32",
    "geteuid", "geteuid32", "getgid", "getgid32", "getgroups", "getgroups32", "getitimer",
    "getpeername", "getpgid", "getpgrp", "getpid", "getppid", "getpriority", "getrandom",
    "getresgid", "getresgid32", "getresuid", "getresuid32", "getrlimit", "getrusage", "getsid",
    "getsockname", "getsockopt", "gettid", "gettimeofday", "getuid", "getuid32", "getxattr",
    "getxattrat", "inotify_add_watch", "inotify_init", "inotify_init1", "inotify_rm_watch",
    "io_cancel", "io_destroy", "io_getevents", "io_pgetevents", "io_pgetevents_time64",
    "io_setup", "io_submit", "ioctl", "ioprio_get", "ioprio_set", "ipc", "kill",
    "landlock_add_rule", "landlock_create_ruleset", "landlock_restrict_self", "lchown",
    "lchown32", "lgetxattr", "link", "linkat", "listen", "listmount", "listxattr", "listxattrat",
    "llistxattr", "lremovexattr", "lseek", "lsetxattr", "lsm_get_self_attr", "lsm_list_modules",
    "lsm_set_self_attr", "lstat", "lstat64", "madvise", "map_shadow_stack", "membarrier",
    "memfd_create", "memfd_secret", "mincore", "mkdir", "mkdirat", "mknod", "mknodat", "mlock",
    "mlock2", "mlockall", "mmap", "mmap2", "mprotect", "mq_getsetattr", "mq_notify", "mq_open",
    "mq_timedreceive", "mq_timedreceive_time64", "mq_timedsend", "mq_timedsend_time64",
    "mq_unlink", "mremap", "mseal", "msgctl", "msgget", "msgrcv", "msgsnd", "msync", "munlock",
    "munlockall", "munmap", "name_to_handle_at", "nanosleep", "newfstatat", "open", "openat",
    "openat2", "pause", "pidfd_open", "pidfd_send_signal", "pipe", "pipe2", "pkey_alloc",
    "pkey_free", "pkey_mprotect", "poll", "ppoll", "ppoll_time64", "prctl", "pread64", "preadv",
    "preadv2", "prlimit64", "process_mrelease", "process_vm_readv", "process_vm_writev",
    "pselect6", "pselect6_time64", "ptrace", "pwrite64", "pwritev", "pwritev2", "read",
    "readahead", "readlink", "readlinkat", "readv", "recv", "recvfrom", "recvmmsg",
    "recvmmsg_time64", "recvmsg", "remap_file_pages", "removexattr", "removexattrat", "rename",
    "renameat", "renameat2", "restart_syscall", "rmdir", "rseq", "rt_sigaction", "rt_sigpending",
    "rt_sigprocmask", "rt_sigqueueinfo", "rt_sigreturn", "rt_sigsuspend", "rt_sigtimedwait",
    "rt_sigtimedwait_time64", "rt_tgsigqueueinfo", "sched_get_priority_max",
    "sched_get_priority_min", "sched_getaffinity", "sched_getattr", "sched_getparam",
    "sched_getscheduler", "sched_rr_get_interval", "sched_rr_get_interval_time64",
    "sched_setaffinity", "sched_setattr", "sched_setparam", "sched_setscheduler", "sched_yield",
    "seccomp", "select", "semctl", "semget", "semop", "semtimedop", "semtimedop_time64", "send",
    "sendfile", "sendfile64", "sendmmsg", "sendmsg", "sendto", "set_robust_list",
    "set_thread_area", "set_tid_address", "setfsgid", "setfsgid32", "setfsuid", "setfsuid32",
    "setgid", "setgid32", "setgroups", "setgroups32", "setitimer", "setpgid", "setpriority",
    "setregid", "setregid32", "setresgid", "setresgid32", "setresuid", "setresuid32", "setreuid",
    "setreuid32", "setrlimit", "setsid", "setsockopt", "setuid", "setuid32", "setxattr",
    "setxattrat", "shmat", "shmctl", "shmdt", "shmget", "shutdown", "sigaltstack", "signalfd",
    "signalfd4", "sigprocmask", "sigreturn", "socketcall", "socketpair", "splice", "stat",
    "stat64", "statfs", "statfs64", "statmount", "statx", "symlink", "symlinkat", "sync",
    "sync_file_range", "syncfs", "sysinfo", "tee", "tgkill", "time", "timer_create",
    "timer_delete", "timer_getoverrun", "timer_gettime", "timer_gettime64", "timer_settime",
    "timer_settime64", "timerfd_create", "timerfd_gettime", "timerfd_gettime64",
    "timerfd_settime", "timerfd_settime64", "times", "tkill", "truncate", "truncate64",
    "ugetrlimit", "umask", "uname", "unlink", "unlinkat", "uretprobe", "utime", "utimensat",
    "utimensat_time64", "utimes", "vfork", "vmsplice", "wait4", "waitid", "waitpid", "write",
    "writev",
)
# fmt: on
# The same profile's architecture-specific additions, for the two EKS architectures.
RUNTIME_DEFAULT_ARCH_ALLOWED: Final = (
    "arch_prctl",
    "modify_ldt",  # x86_64
    "arm_fadvise64_64",
    "arm_sync_file_range",
    "breakpoint",
    "cacheflush",
    "set_tls",
    "sync_file_range2",  # arm, arm64
)
# socket(2) for every address family but AF_ALG (38) and AF_VSOCK (40), as three ranges: one
# rule with two "not equal" conditions would be split by runc into an OR that allows both.
AF_ALG: Final = 38
AF_VSOCK: Final = 40
# personality(2) only for the execution domains the default allows.
PERSONALITIES: Final = (0x0, 0x0008, 0x20000, 0x20008, 0xFFFFFFFF)


@dataclass(frozen=True)
class Widening:
    """One thing the profile allows beyond the runtime default, and the bwrap step that needs it.

    ``flags`` (clone, unshare only): the namespace flags allowed; any other namespace flag is
    still refused.
    """

    syscall: str
    needed_for: str
    flags: tuple[str, ...] = ()


# Exactly what bwrap 0.8 needs to build the tool's sandbox (app/tools/bubblewrap/policy.py):
# each was removed in turn and bwrap failed on the step named here.
BWRAP_WIDENINGS: Final = (
    Widening(
        "clone",
        "bwrap's child in new user, mount, pid, network, IPC and UTS namespaces "
        "(--unshare-user/-pid/-net/-ipc/-uts; the mount namespace always)",
        flags=(
            "CLONE_NEWNS",
            "CLONE_NEWUTS",
            "CLONE_NEWIPC",
            "CLONE_NEWUSER",
            "CLONE_NEWPID",
            "CLONE_NEWNET",
        ),
    ),
    Widening(
        "unshare",
        "the nested user namespace behind --disable-userns",
        flags=("CLONE_NEWUSER",),
    ),
    Widening("mount", "every --ro-bind, --bind, --proc, --dev, --tmpfs and --remount-ro"),
    Widening("pivot_root", "making the new tmpfs the tool's root"),
    Widening("umount2", "detaching the old root after pivot_root"),
    Widening("sethostname", "--hostname in the new UTS namespace"),
)


def _rule(names: Sequence[str], **fields: Any) -> dict[str, Any]:
    return {"names": list(names), "action": "SCMP_ACT_ALLOW", **fields}


def _namespace_rule(syscall: str, allowed: Sequence[str]) -> dict[str, Any]:
    """Allows the syscall when its flags hold no namespace flag outside ``allowed``."""
    refused = ALL_NAMESPACE_FLAGS & ~sum(NAMESPACE_FLAGS[flag] for flag in allowed)
    condition = {"index": 0, "value": refused, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}
    return _rule([syscall], args=[condition])


def container_seccomp_profile(
    widenings: Sequence[Widening] = BWRAP_WIDENINGS,
) -> dict[str, Any]:
    """The profile: the runtime default plus ``widenings`` (none: the runtime default itself)."""
    by_syscall = {widening.syscall: widening for widening in widenings}
    plain = sorted(w.syscall for w in widenings if not w.flags)
    clone = by_syscall.get("clone")
    syscalls = [
        _rule(RUNTIME_DEFAULT_ALLOWED),
        _rule(RUNTIME_DEFAULT_ARCH_ALLOWED),
        _rule(["socket"], args=[{"index": 0, "value": AF_ALG, "op": "SCMP_CMP_LT"}]),
        _rule(["socket"], args=[{"index": 0, "value": AF_ALG + 1, "op": "SCMP_CMP_EQ"}]),
        _rule(["socket"], args=[{"index": 0, "value": AF_VSOCK, "op": "SCMP_CMP_GT"}]),
        *[
            _rule(["personality"], args=[{"index": 0, "value": value, "op": "SCMP_CMP_EQ"}])
            for value in PERSONALITIES
        ],
        # The runtime default's clone: no namespace flag at all; widened to bwrap's flags.
        _namespace_rule("clone", clone.flags if clone else ()),
        {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": CLONE3_ERRNO},
    ]
    unshare = by_syscall.get("unshare")
    if unshare is not None:
        syscalls.append(_namespace_rule("unshare", unshare.flags))
    if plain:
        syscalls.append(_rule(plain))
    return {
        "defaultAction": DEFAULT_ACTION,
        "architectures": list(ARCHITECTURES),
        "syscalls": syscalls,
    }
