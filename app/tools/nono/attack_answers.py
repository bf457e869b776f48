"""What the nono layer answers to each attack of app/tools/attacks.py, and why."""

from __future__ import annotations

from collections.abc import Mapping

from app.core.results import Errno
from app.core.roles import Role
from app.tools.attacks import LIMIT_ERRNOS, LIMIT_REASONS, LayerAnswers
from app.tools.worker.reach import METADATA_CALLS, PROCESS_CALLS, WATCH_CALLS

E = Errno
# The reader and the writer may reach their own proxy over TCP; the evaluator has no network.
BY_NETWORK: Mapping[Role, Errno] = {"reader": E.EACCES, "evaluator": E.EPERM, "writer": E.EACCES}

ANSWERS = LayerAnswers(
    why={
        "files": "no Landlock rule of its profile grants it",
        "tcp": "Landlock allows the reader and writer their own proxy's port alone; nono's "
        "seccomp mode gives the evaluator no Internet socket at all",
        "udp": "nono's seccomp mode",
        "raw": "nono's seccomp mode",
        "netlink": "nono's seccomp mode and the baseline filter",
        "unix": "the baseline filter allows IPv4 and IPv6 sockets only; Landlock alone would "
        "refuse the abstract one and let the path through",
        "signal": "Landlock's signal scope: the process is outside its domain",
        "environ": "no Landlock rule grants /proc",
        "terminal": "the baseline filter",
        "processes": "the baseline filter; clone3 answers ENOSYS so that libc falls back to clone",
        "namespaces": "the baseline filter",
        "ptrace": "the baseline filter",
        "keyring": "the baseline filter",
        "bpf": "the baseline filter",
        "userfaultfd": "the baseline filter",
        "io_uring": "the baseline filter and nono's seccomp mode",
        "perf": "the baseline filter",
        "memory": "the baseline filter; no Landlock rule grants /dev/shm",
        "disk": "its profile grants each of its output files, not the directory, and the "
        "loader's RLIMIT_FSIZE holds each file to 1 MiB",
        "other-processes": "the baseline filter: the kernel asks for no more than the uid, and "
        "Landlock's scopes do not cover these calls",
        "process-memory": "the baseline filter; Landlock refuses those that need ptrace "
        "access too (migrate_pages, move_pages, kcmp)",
        "file-metadata": "the baseline filter: Landlock has no right for a file's metadata",
        "watches": "the baseline filter",
        "fanotify": "the baseline filter",
        "file-flags": "the baseline filter",
        **LIMIT_REASONS,
    },
    errnos={
        "host-file": E.EACCES,
        "tcp4": BY_NETWORK,
        "tcp6": BY_NETWORK,
        "udp4": E.EPERM,
        "udp6": E.EPERM,
        "raw4": E.EPERM,
        "raw6": E.EPERM,
        "packet": E.EPERM,
        "netlink": E.EPERM,
        "unix-path": E.EPERM,
        "unix-abstract": E.EPERM,
        "signal": E.EPERM,
        "environ": E.EACCES,
        "tiocsti": E.EPERM,
        "fork": E.EPERM,
        "clone": E.EPERM,
        "clone3": E.ENOSYS,
        "unshare-user": E.EPERM,
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
        "shm-file": E.EACCES,
        "output-create": E.EACCES,
        "output-past-limit": E.EFBIG,
        **LIMIT_ERRNOS,
        **{probe: E.EPERM for probe in (*PROCESS_CALLS, *METADATA_CALLS, *WATCH_CALLS)},
    },
)
