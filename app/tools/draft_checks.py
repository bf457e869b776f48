"""The writer's draft, read back by the controller and checked before anything is posted."""

from __future__ import annotations

from pathlib import Path
from typing import Final

from app.core.draft import ExpectedDraft, draft_differences
from app.core.files import read_regular
from app.core.run import Run
from app.tools import catalogue as c

MAX_DRAFT_BYTES: Final = 64 * 1024


def verified_draft(run: Run, draft_path: Path, expected: ExpectedDraft) -> bytes:
    """The writer's draft file, if it is the one the checked comparison implies: a FAIL
    naming what differs stops the run first. Its control: the same reading of a copy that
    awards to another supplier reports that difference."""
    # The writer owns its output directory: a symlink or special file it planted there is
    # refused, so the controller never sends anything but the writer's own bytes.
    body = read_regular(draft_path, MAX_DRAFT_BYTES)
    differences = draft_differences(body, expected)
    said = dict(case=expected.case, winner=expected.winner, reference=expected.reference)
    run.checks.require(
        c.DRAFT_IS_THE_RUNS(**said),
        not differences,
        detail="; ".join(differences) or f"{len(body)} bytes, in the writer's one form",
    )
    other = next((s.id for s in run.case.suppliers if s.id != expected.winner), "nobody")
    forged = body.replace(f"award to {expected.winner}.".encode(), f"award to {other}.".encode())
    found = draft_differences(forged, expected)
    run.checks.require(
        c.DRAFT_IS_THE_RUNS_CONTROL(other=other),
        len(found) == 1 and repr(other) in found[0],
        detail="; ".join(found) or "it found no difference",
    )
    return body
