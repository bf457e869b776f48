"""nono's own record of each request a role's proxy passed it, as the proxy host hands it over:
what nono decided and, for a request it forwarded, the supplier's status."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.tools.nono.front import FrontRecord


@dataclass(frozen=True)
class AuditEvent:
    """One request as nono's proxy saw and decided it (nono's NetworkAuditEvent)."""

    mode: str  # "reverse" for a credential route
    decision: str  # "allow" or "deny"
    method: str | None
    path: str | None
    status: int | None  # the supplier's status, once an allowed request was answered
    denial_category: str | None

    @classmethod
    def from_nono(cls, event: Mapping[str, Any]) -> AuditEvent:
        return cls(
            mode=str(event["mode"]),
            decision=str(event["decision"]),
            method=event["method"],
            path=event["path"],
            status=event["status"],
            denial_category=event["denial_category"],
        )

    @property
    def forwarded(self) -> bool:
        """nono forwarded the request: allowed, and carrying the supplier's status."""
        return self.decision == "allow" and self.status is not None


def nono_events(record: FrontRecord) -> list[AuditEvent]:
    return [AuditEvent.from_nono(event) for event in record.nono]


def forwarded(records: list[FrontRecord]) -> bool:
    """Some request of ``records`` went on to the supplier (nono says so)."""
    return any(event.forwarded for record in records for event in nono_events(record))
