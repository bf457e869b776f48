"""What the bubblewrap layer answers to each attack of app/tools/attacks.py, and why."""

from __future__ import annotations

from app.core.results import Errno
from app.tools.attacks import LIMIT_ERRNOS, LIMIT_REASONS, LayerAnswers
from app.tools.worker.reach import METADATA_CALLS, PROCESS_CALLS, WATCH_CALLS

E = Errno

ANSWERS = LayerAnswers(
    why={
        "files": "the path is not in its mount list",
        "tcp": "its 127.0.0.1 and ::1 are its own network namespace's loopback, where nothing "
        "listens",
        "udp": "its network namespace holds loopback alone: no route",
        "raw": "it holds no capability; packet sockets are refused by the baseline filter",
        "netlink": "the baseline filter allows IPv4 and IPv6 sockets only",
        "unix": "the baseline filter allows IPv4 and IPv6 sockets only",
        "signal": "the process is outside its pid namespace",
        "environ": "its /proc shows its own pid namespace alone",
        "terminal": "the baseline filter",
        "processes": "the baseline filter; clone3 answers ENOSYS so that libc falls back to clone",
        "namespaces": "--disable-userns; the baseline filter",
        "ptrace": "the baseline filter",
        "keyring": "the baseline filter",
        "bpf": "the baseline filter",
        "userfaultfd": "the baseline filter",
        "io_uring": "the baseline filter",
        "perf": "the baseline filter",
        "memory": "the baseline filter; there is no /dev",
        "disk": "its output directory is mounted read-only with only its own files bound "
        "writable, and the loader's RLIMIT_FSIZE holds each file to 1 MiB",
        "other-processes": "the baseline filter, which answers before the kernel would look "
        "the pid up in "
        "its pid namespace, where no process outside it is found (ESRCH)",
        "process-memory": "the baseline filter, which answers before the kernel would look "
        "the pid up in its pid namespace",
        "file-metadata": "the baseline filter; another role's output is not in its mount list "
        "either",
        "watches": "the baseline filter",
        "fanotify": "the baseline filter",
        "file-flags": "the baseline filter",
        **LIMIT_REASONS,
    },
    errnos={
        "host-file": E.ENOENT,
        "tcp4": E.ECONNREFUSED,
        "tcp6": E.ECONNREFUSED,
        "udp4": E.ENETUNREACH,
        "udp6": E.ENETUNREACH,
        "raw4": E.EPERM,
        "raw6": E.EPERM,
        "packet": E.EPERM,
        "netlink": E.EPERM,
        "unix-path": E.EPERM,
        "unix-abstract": E.EPERM,
        "signal": E.ESRCH,
        "environ": E.ENOENT,
        "tiocsti": E.EPERM,
        "fork": E.EPERM,
        "clone": E.EPERM,
        "clone3": E.ENOSYS,
        "unshare-user": E.ENOSPC,
        "setns": E.EPERM,
        "mount": E.EPERM,
        "ptrace": E.EPERM,
        "keyctl": E.EPERM,
        "add_key": E.EPERM,
        "bpf": E.EPERM,
        "userfaultfd": E.EPERM,
        "io_uring_setup": E.EPERM,
        "perf_event_open": E.EPERM,
        "shmget": E.EPERM,
        "mq_open": E.EPERM,
        "shm-file": E.ENOENT,
        "output-create": E.EROFS,
        "output-past-limit": E.EFBIG,
        **LIMIT_ERRNOS,
        **{probe: E.EPERM for probe in (*PROCESS_CALLS, *METADATA_CALLS, *WATCH_CALLS)},
    },
)
