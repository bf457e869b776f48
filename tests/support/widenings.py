"""The container seccomp profile's widenings for bwrap, less one: what the tests that prove
each widening is needed build their profile from."""

from __future__ import annotations

from app.tools.bubblewrap.container_seccomp import BWRAP_WIDENINGS, Widening


def widenings_without(syscall: str, flag: str | None = None) -> tuple[Widening, ...]:
    """The project's widenings less one syscall, or less one namespace flag of clone."""
    kept = []
    for widening in BWRAP_WIDENINGS:
        if widening.syscall != syscall:
            kept.append(widening)
        elif flag is not None:
            flags = tuple(f for f in widening.flags if f != flag)
            kept.append(Widening(widening.syscall, widening.needed_for, flags))
    return tuple(kept)
