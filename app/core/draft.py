"""The writer's draft recommendation: what this run's draft must say, and a strict reading of
what the writer's draft file does say.

The writer is as untrusted as any tool process: its draft reaches the supplier only when it
is, field by field, the one the checked comparison implies (the case, its winner and the
run's draft reference), and a draft that is not reads as what differed.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Final

# The one form the writer writes (app/tools/worker/business.py): every field in the
# characters case and supplier ids may hold, so a field is shown as it was read.
_DRAFT: Final = re.compile(
    rb"Draft recommendation (?P<reference>DR-[0-9a-f]{8}) for case (?P<case>[a-z0-9-]{1,63}): "
    rb"award to (?P<winner>[a-z0-9-]{1,63})\.\n"
)


def draft_reference(run_id: str) -> str:
    """The reference the run stages for its writer (its private notes) and its draft names."""
    return f"DR-{run_id[:8]}"


@dataclass(frozen=True)
class ExpectedDraft:
    """What this run's draft names: its reference, the case, and the checked winner."""

    reference: str
    case: str
    winner: str


def draft_differences(body: bytes, expected: ExpectedDraft) -> list[str]:
    """How ``body`` differs from the draft ``expected`` describes; empty when it is that
    draft. Nothing of a body that is not in the draft's form is repeated back."""
    found = _DRAFT.fullmatch(body)
    if found is None:
        return [
            f"it is not a draft in the writer's one form ({len(body)} bytes, sha256 "
            f"{hashlib.sha256(body).hexdigest()[:16]}…)"
        ]
    said = {name: found.group(name).decode("ascii") for name in ("reference", "case", "winner")}
    differences = []
    if said["winner"] != expected.winner:
        differences.append(
            f"it awards to {said['winner']!r}, where the checked comparison's winner is "
            f"{expected.winner!r}"
        )
    if said["case"] != expected.case:
        differences.append(f"it is for case {said['case']!r}, not this run's {expected.case!r}")
    if said["reference"] != expected.reference:
        differences.append(
            f"it carries reference {said['reference']!r}, not this run's {expected.reference!r}"
        )
    return differences
