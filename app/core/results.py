"""What a tool process reports: one typed result per worker action.

The worker prints one JSON line; ``ToolResult.from_line`` turns it into this dataclass, so a
check reads ``result.ok`` and ``result.errno`` the same way everywhere and the action's own
fields from ``result.data``. A result that does not parse is a failure to run, never a refusal.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from app.core.errors import RunStopped


class ToolRunError(RunStopped):
    """The tool process did not produce a result: start-up failure, timeout or crash."""


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


class Errno(StrEnum):
    """The errno names a probe can report, as the kernel's errno.h spells them."""

    EPERM = "EPERM"
    ENOENT = "ENOENT"
    ESRCH = "ESRCH"
    EINTR = "EINTR"
    EIO = "EIO"
    ENXIO = "ENXIO"
    E2BIG = "E2BIG"
    EBADF = "EBADF"
    ECHILD = "ECHILD"
    EAGAIN = "EAGAIN"
    ENOMEM = "ENOMEM"
    EACCES = "EACCES"
    EFAULT = "EFAULT"
    EBUSY = "EBUSY"
    EEXIST = "EEXIST"
    EXDEV = "EXDEV"
    ENODEV = "ENODEV"
    ENOTDIR = "ENOTDIR"
    EISDIR = "EISDIR"
    EINVAL = "EINVAL"
    ENFILE = "ENFILE"
    EMFILE = "EMFILE"
    ENOTTY = "ENOTTY"
    ETXTBSY = "ETXTBSY"
    EFBIG = "EFBIG"
    ENOSPC = "ENOSPC"
    ESPIPE = "ESPIPE"
    EROFS = "EROFS"
    EMLINK = "EMLINK"
    EPIPE = "EPIPE"
    ENAMETOOLONG = "ENAMETOOLONG"
    ENOSYS = "ENOSYS"
    ELOOP = "ELOOP"
    EDQUOT = "EDQUOT"
    EOVERFLOW = "EOVERFLOW"
    EUSERS = "EUSERS"
    ENOTSOCK = "ENOTSOCK"
    EPROTOTYPE = "EPROTOTYPE"
    ENOPROTOOPT = "ENOPROTOOPT"
    EPROTONOSUPPORT = "EPROTONOSUPPORT"
    ESOCKTNOSUPPORT = "ESOCKTNOSUPPORT"
    EOPNOTSUPP = "EOPNOTSUPP"
    EAFNOSUPPORT = "EAFNOSUPPORT"
    EADDRINUSE = "EADDRINUSE"
    EADDRNOTAVAIL = "EADDRNOTAVAIL"
    ENETDOWN = "ENETDOWN"
    ENETUNREACH = "ENETUNREACH"
    ECONNABORTED = "ECONNABORTED"
    ECONNRESET = "ECONNRESET"
    ENOBUFS = "ENOBUFS"
    EISCONN = "EISCONN"
    ENOTCONN = "ENOTCONN"
    ETIMEDOUT = "ETIMEDOUT"
    ECONNREFUSED = "ECONNREFUSED"
    EHOSTUNREACH = "EHOSTUNREACH"
    EALREADY = "EALREADY"
    EINPROGRESS = "EINPROGRESS"
    ENOKEY = "ENOKEY"
    EKEYREJECTED = "EKEYREJECTED"


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
        return dict(as_mapping(self.data.get("answers", {})))

    @classmethod
    def from_line(cls, payload: str, *, who: str) -> ToolResult:
        """Parses the result line (without its prefix) that ``who`` printed; raises
        ToolRunError naming ``who`` if it is not a usable one."""
        try:
            document = json.loads(payload)
        # A (hostile) tool's line nested thousands deep exhausts the parser's recursion.
        except (ValueError, RecursionError) as error:
            raise ToolRunError(
                f"{who} printed a result line that is not usable JSON: {error}"
            ) from error
        if not isinstance(document, dict):
            raise ToolRunError(f"{who} printed a result line that is not a JSON object")
        fields = dict(document)
        try:
            action, ok, errno = fields.pop("action"), fields.pop("ok"), fields.pop("errno")
        except KeyError as missing:
            raise ToolRunError(f"{who} printed a result that lacks {missing}") from None
        peak = fields.pop("peak_rss_kib", None)
        if not isinstance(action, str) or not isinstance(ok, bool):
            raise ToolRunError(f"{who} printed a result with a malformed action or ok: {action!r}")
        if ok != (errno is None):
            raise ToolRunError(f"{who} printed a result that says ok={ok} with errno {errno!r}")
        known: Errno | None = None
        if errno is not None:
            try:
                known = Errno(errno)
            except ValueError:
                raise ToolRunError(f"{who} reported an unknown errno {errno!r}") from None
        return cls(action, ok, known, fields, peak if isinstance(peak, int) else None)


def as_mapping(value: object) -> Mapping[str, Any]:
    """A nested object of a result's data, checked to be one (a malformed result stops the run)."""
    if not isinstance(value, Mapping):
        raise ToolRunError(f"expected an object in the tool's result, got {value!r}")
    return value


def listing(answers: Mapping[str, Any]) -> str:
    """Named answers as a check line lists them: "bpf EPERM, keyctl EPERM"."""
    return ", ".join(f"{name} {answer}" for name, answer in answers.items())
