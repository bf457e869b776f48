"""The nono layer's head start: the first of its launch processes (launch_pool.py), started as
soon as the run tree is claimed, before the run's services, so that its interpreter and nono-py's
import (some 0.2 s of CPU: docs/notes/nono-py-package-import.md) are done by the preflight,
whose first tool waits for it; the preflight starts the others and the proxy host, as before.

One, not all five: the services' start keeps both cores busy (moto, the supplier API, the
model's library), and five imports there lengthened it by about what they saved the preflight
(docs/performance.md). Nothing the process needs later exists yet, and none of it is sent now:
it waits for the tools' view (launch_pool.py's VIEW_LATER), given when the layer is built. It
ties itself to the controller and makes itself not dumpable before it imports anything, as when
the layer starts it itself.
"""

from __future__ import annotations

from typing import Final

from app.core.tool_counts import ToolCounts
from app.tools.at_once import AT_ONCE_WIDTH
from app.tools.nono.launch_pool import VIEW_LATER, LaunchProcesses

# How many of the pool's launch processes start ahead: the preflight's first tool needs one.
AHEAD: Final = 1


class NonoHeadStart:
    """The started pool, until the layer takes it (``take``) or the run ends."""

    def __init__(self, counts: ToolCounts) -> None:
        self._launchers: LaunchProcesses | None = LaunchProcesses(AT_ONCE_WIDTH, VIEW_LATER, counts)
        self._launchers.start(AHEAD)

    def take(self) -> LaunchProcesses | None:
        """The pool, for the layer to own from now (and start the rest of); None once taken or
        closed."""
        launchers, self._launchers = self._launchers, None
        return launchers

    def close(self) -> None:
        """Ends the processes the layer did not take (a run stopped before it was built)."""
        launchers, self._launchers = self._launchers, None
        if launchers is not None:
            launchers.close()
