"""Entry point: `python3 -S -c "from analyst_worker.__main__ import run; run()" [prologue
options] <action> [args...]` (or `-m analyst_worker`, by hand): one action, one result line.

A tool process runs one action, so it imports that action's module alone (see the NOTE in
protocol.py); ACTION_MODULES says where each action is, and the tests hold it to each module's
own ACTIONS.
"""

from __future__ import annotations

import sys

from . import prologue
from .protocol import emit

ACTION_MODULES: dict[str, str] = {
    "read-case": "business",
    "read-proposal": "business",
    "evaluate": "business",
    "write-draft": "business",
    "env-names": "environment",
    "open-read": "files",
    "open-write": "files",
    "write-file": "files",
    "access": "files",
    "interfaces": "network",
    "tcp-connect": "network",
    "socket-inet": "network",
    "attack-surface": "probes",
    "kernel-calls": "probes",
    "push-terminal-input": "probes",
    "supplier-request": "proxy",
    "proxy-requests": "proxy",
    "proxy-connections": "proxy",
    "credential-digest": "credentials",
    "proc-status": "system",
    "fill-scratch": "system",
    "hold": "system",
    "unshare-user": "system",
    "syscall": "system",
}


def main(argv: list[str]) -> int:
    # First of all, before the action or any of its arguments is looked at.
    argv, applied = prologue.apply(argv)
    if not argv or argv[0] not in ACTION_MODULES:
        names = ",".join(sorted(ACTION_MODULES))
        print(f"usage: analyst_worker {{{names}}} [args...]", file=sys.stderr)
        return 2
    action, args = argv[0], argv[1:]
    # __import__ rather than importlib: the worker needs nothing else of importlib's.
    name = f"{__package__}.{ACTION_MODULES[action]}"
    __import__(name)
    module = sys.modules[name]
    result = module.ACTIONS[action](args)
    emit(action, {**result, "prologue": applied} if applied else result)
    return 0


def run() -> None:
    """What a tool process runs (app/core/run_tree.py's WORKER_COMMAND)."""
    sys.exit(main(sys.argv[1:]))


if __name__ == "__main__":
    run()
