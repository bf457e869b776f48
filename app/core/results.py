"""What a tool process reports: one typed result per worker action.

The worker prints one JSON line; ``ToolResult.from_line`` turns it into this dataclass, so a
check reads ``result.ok`` and ``result.errno`` the same way everywhere and the action's own
fields from ``result.data``. A result that does not parse is a failure to run, never a refusal.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.core.errnos import Errno as Errno
from app.core.errors import RunStopped
from app.core.result_shapes import result_problem


class ToolRunError(RunStopped):
    """The tool process did not produce a result: start-up failure, timeout or crash."""


class HelperLost(RunStopped):
    """A helper process of a layer (nono's proxy host, a launch process) ended or stopped
    answering within its deadline: the run stops with one line naming it, never as the FAIL of
    a check about a role (no check's refusals hold it)."""


class ToolStartFailed(ToolRunError):
    """The launcher's own call to start the tool process failed (an exec refused, nono-py
    raising before the tool ran): the controller's finding, before any of the tool's code
    ran, so the one a preflight may read as a missing piece of the machine."""


class ToolOutputRefused(ToolRunError):
    """What came back from a tool process broke the channel's bounds (more output than any
    result, or output held open by something it left behind): the controller stopped it, and
    the run stops. Not a refusal, and not a missing piece of the machine, even in preflight."""


class ToolKilled(ToolRunError):
    """A signal from outside ended the tool process (a kill, the OOM killer): the run stops.
    Not a refusal, and not a missing piece of the machine either, even during preflight."""


@dataclass(frozen=True)
class ToolResult:
    """One worker action's result: whether the operation succeeded, else its errno, and the
    action's own fields (never a secret: the worker reports names and digests only)."""

    action: str
    ok: bool
    errno: Errno | None
    data: Mapping[str, Any] = field(default_factory=dict)
    # The worker's own high-water mark (KiB), for the benchmark; None where /proc is closed.
    peak_rss_kib: int | None = None

    @property
    def observed(self) -> str:
        """What the one operation did, for a check's detail: "succeeded" or its errno."""
        return "succeeded" if self.ok else str(self.errno)

    def refused_with(self, expected: Errno) -> bool:
        """The operation was attempted and refused with exactly this errno."""
        return not self.ok and self.errno is expected

    @property
    def named_answers(self) -> dict[str, Any]:
        """A probe's answers by name (its "answers" object), each an errno name or "ok"."""
        return dict(self.data["answers"])

    @classmethod
    def from_line(
        cls, payload: str, *, who: str, action: str, args: Sequence[str] = ()
    ) -> ToolResult:
        """Parses the result line (without its prefix) that ``who`` printed when asked for
        ``action`` with ``args``; raises ToolRunError naming ``who`` unless it is that action's
        result in the shape app/core/result_shapes.py declares for it."""
        try:
            document = json.loads(payload)
        # A (hostile) tool's line nested thousands deep exhausts the parser's recursion.
        except (ValueError, RecursionError) as error:
            raise ToolRunError(
                f"{who} printed a result line that is not usable JSON: {error}"
            ) from error
        if not isinstance(document, dict):
            raise ToolRunError(f"{who} printed a result line that is not a JSON object")
        problem = result_problem(document, action, args)
        if problem is not None:
            raise ToolRunError(f"{who} printed a result for {action} where {problem}")
        fields = dict(document)
        del fields["action"]
        ok, errno, peak = fields.pop("ok"), fields.pop("errno"), fields.pop("peak_rss_kib", None)
        known = None if errno is None else Errno(errno)
        return cls(action, ok, known, fields, peak)


def listing(answers: Mapping[str, Any]) -> str:
    """Named answers as a check line lists them: "bpf EPERM, keyctl EPERM"."""
    return ", ".join(f"{name} {answer}" for name, answer in answers.items())
