"""The comparison pod beside the analyst pod, compared as `nitro-evidence` compares them.

Both pods read this machine's kernel here, so the verdict must be "not isolated from the node":
the rehearsal shows that the check can fail, and fails itself if the check says otherwise.
"""

from __future__ import annotations

import socket
from datetime import UTC, datetime

from app.controller.guest import readings_in_log
from app.controller.guest_comparison import GuestComparison, PodReadings, Verdict, render

from .pods import PodResult
from .verdicts import Verdicts


def compare_guests(analyst: PodResult, ordinary: PodResult, verdicts: Verdicts) -> None:
    found = {
        "analyst": readings_in_log("\n".join(analyst.log("analyst"))),
        "ordinary": readings_in_log("\n".join(ordinary.log("readings"))),
    }
    missing = [name for name, readings in found.items() if readings is None]
    if not verdicts.check(
        ordinary.succeeded and not missing,
        f"the comparison pod {ordinary.name} ({ordinary.owner}) printed its guest readings",
        ordinary.refusal or f"no GUEST_READINGS line from {missing}",
    ):
        return
    analyst_readings, ordinary_readings = found["analyst"], found["ordinary"]
    assert analyst_readings is not None and ordinary_readings is not None
    comparison = GuestComparison(
        analyst=PodReadings(analyst.name, None, analyst_readings),
        ordinary=PodReadings(ordinary.name, None, ordinary_readings),
        node=f"this machine ({socket.gethostname()})",
        node_created_at=None,
        now=datetime.now(UTC),
    )
    for line in render(comparison).splitlines():
        print(f"  {line}", file=verdicts.stream)
    verdict = comparison.verdict()
    verdicts.check(
        verdict is Verdict.NOT_ISOLATED,
        "nitro-evidence says 'not isolated from the node' for these two pods, as it must here "
        "(both read this machine's kernel): the check can fail",
        f"it said {verdict.value!r}",
    )
