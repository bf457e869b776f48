"""The seccomp filters the controller itself runs under, which every process it starts
inherits before a layer adds the tool's own: none on a developer's machine; in a pod, the
container's profile (RuntimeDefault, or a hardened container's Localhost profile)."""

from __future__ import annotations

from app.tools.worker.system import read_status


def inherited_filters() -> int:
    """How many seccomp filters this process (the controller) holds."""
    return int(read_status()["Seccomp_filters"])


def over_inherited(inherited: int) -> str:
    """The words a filter-count check adds when the controller's own filters are counted in."""
    if not inherited:
        return ""
    return f", over the {inherited} the controller itself runs under (its container's profile)"
