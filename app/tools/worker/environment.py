"""What a tool process was started with: the names of its environment variables."""

from __future__ import annotations

import os

from .protocol import Result, ok


def env_names(args: list[str]) -> Result:
    """The names of this process's environment variables, sorted; never a value."""
    return ok(names=sorted(os.environ))


ACTIONS = {"env-names": env_names}
