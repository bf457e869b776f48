"""Sets the sandboxed analyst's guest readings beside an ordinary pod's on the same node, and
decides from the kernel build, the disks and the product name whether the analyst ran on a
kernel of its own.

The uptime is shown but not decided on: each pod reports the uptime of the kernel it runs on,
so the analyst's is its sandbox's and the ordinary pod's is the node's, and on a node that
booted moments before the pod the two are close without meaning anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from app.controller.guest import GuestReadings


class Verdict(StrEnum):
    ISOLATED = "isolated"
    NOT_ISOLATED = "not isolated"
    INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True)
class PodReadings:
    """One pod's readings, with what the Kubernetes API says of the pod."""

    name: str
    started_at: datetime | None
    readings: GuestReadings


@dataclass(frozen=True)
class GuestComparison:
    """The analyst pod's readings and an ordinary pod's on the same node, with the node's age."""

    analyst: PodReadings
    ordinary: PodReadings
    node: str
    node_created_at: datetime | None
    now: datetime

    def differing(self) -> dict[str, bool]:
        """For each reading the verdict rests on, whether the two pods differ."""
        a, o = self.analyst.readings, self.ordinary.readings
        return {
            "kernel build": a.kernel != o.kernel,
            "block devices": a.block_devices != o.block_devices,
            "product name": a.product_name != o.product_name,
        }

    def verdict(self) -> Verdict:
        differs = self.differing().values()
        if all(differs):
            return Verdict.ISOLATED
        if not any(differs):
            return Verdict.NOT_ISOLATED
        return Verdict.INCONCLUSIVE


def age(since: datetime | None, now: datetime) -> str:
    if since is None:
        return "unknown"
    seconds = int((now - since) / timedelta(seconds=1))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"


def render(comparison: GuestComparison) -> str:
    """The side-by-side table, the verdict and what it rests on, as a user reads it."""
    a, o = comparison.analyst, comparison.ordinary
    now = comparison.now
    rows = [
        ("reading", f"sandboxed analyst ({a.name})", f"ordinary pod ({o.name})"),
        ("uname -rv", a.readings.kernel, o.readings.kernel),
        (
            "/proc/uptime",
            f"{a.readings.uptime_seconds:.2f}s, pod age {age(a.started_at, now)}",
            f"{o.readings.uptime_seconds:.2f}s, node age {age(comparison.node_created_at, now)}",
        ),
        ("/sys/block", " ".join(a.readings.block_devices), " ".join(o.readings.block_devices)),
        ("product_name", a.readings.product_name or "(none)", o.readings.product_name or "(none)"),
    ]
    first = max(len(row[0]) for row in rows)
    second = max(len(row[1]) for row in rows)
    lines = [f"{r[0]:<{first}}  {r[1]:<{second}}  {r[2]}".rstrip() for r in rows]
    lines.insert(1, f"{'-' * first}  {'-' * second}  {'-' * len(rows[0][2])}")
    differing = comparison.differing()
    same = [name for name, differs in differing.items() if not differs]
    differ = [name for name, differs in differing.items() if differs]
    verdict = comparison.verdict()
    lines.append("")
    lines.append(f"both pods on node {comparison.node}")
    if verdict is Verdict.ISOLATED:
        lines.append(
            "verdict: isolated: the analyst pod ran on a kernel of its own, not the node's "
            f"({', '.join(differ)} all differ)"
        )
    elif verdict is Verdict.NOT_ISOLATED:
        lines.append(
            "verdict: not isolated from the node: the analyst pod reports the node's own "
            f"{', '.join(same)}"
        )
    else:
        lines.append(
            f"verdict: inconclusive: {', '.join(differ)} differ but {', '.join(same)} "
            "do not; a sandbox differs in all three"
        )
    lines.append(
        "note: the uptime is each kernel's own; it is telling only when the node is much older "
        "than the pod, so the verdict does not rest on it"
    )
    return "\n".join(lines) + "\n"
