"""Entry point: `python3 -m analyst_worker [prologue options] <action> [args...]`: one action,
one result line."""

from __future__ import annotations

import sys

from . import business, files, network, probes, prologue, proxy, system
from .protocol import Action, emit

ACTIONS: dict[str, Action] = {
    **business.ACTIONS,
    **files.ACTIONS,
    **network.ACTIONS,
    **system.ACTIONS,
    **proxy.ACTIONS,
    **probes.ACTIONS,
}


def main(argv: list[str]) -> int:
    # First of all, before the action or any of its arguments is looked at.
    argv, applied = prologue.apply(argv)
    if not argv or argv[0] not in ACTIONS:
        print(f"usage: analyst_worker {{{','.join(sorted(ACTIONS))}}} [args...]", file=sys.stderr)
        return 2
    action, args = argv[0], argv[1:]
    result = ACTIONS[action](args)
    emit(action, {**result, "prologue": applied} if applied else result)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
