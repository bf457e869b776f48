"""Entry point: `python3 -m analyst_worker <action> [args...]`: one action, one result line."""

from __future__ import annotations

import sys

from . import business, files, network, proxy, system
from .protocol import Action, emit

ACTIONS: dict[str, Action] = {
    **business.ACTIONS,
    **files.ACTIONS,
    **network.ACTIONS,
    **system.ACTIONS,
    **proxy.ACTIONS,
}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ACTIONS:
        print(f"usage: analyst_worker {{{','.join(sorted(ACTIONS))}}} [args...]", file=sys.stderr)
        return 2
    action, args = argv[0], argv[1:]
    emit(action, ACTIONS[action](args))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
