"""Controls whose outcome depends on the host as much as on this program.

A control shows what the kernel answers when the layer (or one part of it) is not there. Some
hosts refuse such a call to every process: a container runtime's seccomp profile that refuses
io_uring or new user namespaces, a host without IPv6. There the control is not a failure of
the layer; it is reported as SKIP, with what the host answered, and the refusal beside it still
has to hold with its exact errno, though it then shows less.
"""

from __future__ import annotations

from app.core.catalogue import Check, Claim
from app.core.checklog import CheckLog


def host_control(
    checks: CheckLog,
    check: Check | Claim,
    observed: object,
    expected: object,
    *,
    said: str | None = None,
) -> None:
    """PASS ``check`` when the host answers as expected, recording ``said`` (the answer in
    words; by default its repr); otherwise SKIP it with the answer."""
    if observed == expected:
        checks.require(check, True, detail=repr(observed) if said is None else said)
        return
    checks.skip(
        check,
        f"this host answers {observed!r} to that call itself, not {expected!r}, so the check "
        "after it does not show which part refuses it",
    )
