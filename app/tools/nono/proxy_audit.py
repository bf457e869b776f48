"""The roles' proxies' records, whole, once no role can reach its proxy any more: every
connection on record and none dropped, each one a request this run made, and each request the
fronts passed on recorded by nono too. A request a tool sent that the run did not make (a
tunnel, a flood, an extra draft) stops the run here, naming the role, even when it was refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from app.core.roles import Role
from app.core.run import Run
from app.tools.catalogue import nono as c
from app.tools.nono.audit_events import nono_events
from app.tools.nono.front import MAX_RECORDS, FrontRecord
from app.tools.nono.runner import NonoRunner

# How many of a role's strangers a FAIL line names before it counts the rest.
NAMED: Final = 5


def _settled(record: FrontRecord) -> int:
    """nono's decided records of one request: a denial, or an allow with the supplier's status."""
    return sum(1 for e in nono_events(record) if e.decision == "deny" or e.forwarded)


def check_proxy_audit(run: Run, layer: NonoRunner, headless: Mapping[Role, int]) -> None:
    """``headless``: how many connections the run's own checks left without a whole request,
    by role."""
    checks, proxies = run.checks, layer.proxies
    proxies.seal()
    roles = proxies.roles
    records = {role: proxies.records(role) for role in roles}
    dropped = {role: proxies.dropped(role) for role in roles}
    checks.require(
        c.RECORDS_KEPT(counts=", ".join(f"{role} {len(records[role])}" for role in roles)),
        not any(dropped.values()),
        detail=", ".join(f"the {role}'s proxy dropped {n}" for role, n in dropped.items() if n)
        or f"at most {MAX_RECORDS} kept per role; none beyond it",
    )
    made = {call.request_id for call in run.supplier_client.calls.records}
    unmade: list[str] = []
    for role in roles:
        without = sum(1 for r in records[role] if r.form is None)
        if without != headless.get(role, 0):
            unmade.append(
                f"the {role}'s proxy saw {without} connections without a whole request, not "
                f"{headless.get(role, 0)}"
            )
        strangers = [r for r in records[role] if r.form is not None and r.request_id not in made]
        unmade += [
            f"the {role}'s proxy saw {r.method} {r.target!r} ({r.request_id or 'no run id'})"
            for r in strangers[:NAMED]
        ]
        if len(strangers) > NAMED:
            unmade.append(f"and {len(strangers) - NAMED} more")
    checks.require(
        c.RECORDS_MADE(headless=", ".join(f"{role} {headless.get(role, 0)}" for role in roles)),
        not unmade,
        detail="; ".join(unmade) or "every request id is one of the run's calls",
    )
    passed = {role: [r for r in records[role] if r.passed] for role in roles}
    unsettled = [
        f"{role} {r.method} {r.target!r}: {[(e.decision, e.status) for e in nono_events(r)]}"
        for role in roles
        for r in passed[role]
        if _settled(r) != 1
    ]
    checks.require(
        c.RECORDS_NONO(counts=", ".join(f"{role} {len(passed[role])}" for role in roles)),
        not unsettled,
        detail="; ".join(unsettled) or "one decided record each",
    )
