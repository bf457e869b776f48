"""Supplier calls as the run records them, and the interface to the controller's client.

The client itself is the controller's (it holds the real key); a layer's checks reach the
supplier only through ``SupplierAccess``, for the controls that show the supplier API accepts
what a role's proxy refuses.
"""

from __future__ import annotations

import json
import threading
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from app.core.errors import RunStopped


class SupplierError(RunStopped):
    """A supplier call did not give the controller a usable answer."""


class SupplierConnectionError(SupplierError):
    """The supplier API could not be reached or did not answer."""


class SupplierReplyError(SupplierError):
    """The supplier API answered with something the controller refuses to use."""


@dataclass(frozen=True)
class CallRecord:
    """One supplier request of this run, as the caller saw it; never holds the key."""

    request_id: str
    by: str  # "controller" or a role name
    method: str
    path: str
    host: str
    status: int | None  # None: no HTTP status came back
    reaches_upstream: bool  # False: refused before it could reach the supplier API


class CallLog:
    """Every supplier call of the run, from the controller and from the roles' proxies."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: list[CallRecord] = []

    def record(self, call: CallRecord) -> None:
        with self._lock:
            self._records.append(call)

    @property
    def records(self) -> list[CallRecord]:
        with self._lock:
            return list(self._records)

    def as_json(self) -> list[dict[str, Any]]:
        return [asdict(r) for r in self.records]


@dataclass(frozen=True)
class SupplierReply:
    status: int
    body: bytes
    request_id: str

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        # A reply nested thousands deep exhausts the parser's recursion: refused the same way.
        except (ValueError, RecursionError) as exc:
            raise SupplierReplyError(
                f"reply to {self.request_id} is not JSON, or nested too deeply to read"
            ) from exc


class SupplierAccess(Protocol):
    """What a layer's checks may ask of the controller's supplier client."""

    @property
    def calls(self) -> CallLog: ...

    def next_request_id(self) -> str: ...

    def request(
        self,
        method: str,
        path: str,
        *,
        body: bytes | None = None,
        content_type: str = "application/json",
        key: bytes | None = None,
        url: str | None = None,
    ) -> SupplierReply: ...

    def tcp_reachable(self) -> bool: ...
