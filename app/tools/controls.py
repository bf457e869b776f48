"""Controls whose outcome depends on the host as much as on this program.

A control shows what the kernel answers when the layer (or one part of it) is not there. Some
hosts refuse such a call to every process: a container runtime's seccomp profile that refuses
io_uring or new user namespaces, a host without IPv6. There the control is not a failure of
the layer; it is reported as SKIP, with what the host answered, and the refusal beside it still
has to hold with its exact errno, though it then shows less.
"""

from __future__ import annotations

from app.core.checklog import CheckLog


def host_control(checks: CheckLog, claim: str, observed: object, expected: object) -> None:
    """PASS ``claim`` when the host answers as expected; otherwise SKIP it with the answer."""
    if observed == expected:
        checks.require(True, claim)
        return
    checks.skip(
        claim,
        f"this host answers {observed!r} to that call itself, not {expected!r}, so the check "
        "after it does not show which part refuses it",
    )
