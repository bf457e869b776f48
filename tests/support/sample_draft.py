"""The sample case's draft, as the writer writes it, for tests that submit one themselves."""

from __future__ import annotations

from app.core.draft import ExpectedDraft, draft_reference
from app.core.run import Run

# The sample case's checked winner (cases/rfp-001).
SAMPLE_WINNER = "northstar"


def sample_draft(run: Run, winner: str = SAMPLE_WINNER) -> tuple[str, ExpectedDraft]:
    """The writer's draft for ``run``'s case awarding to ``winner``, and the draft the run
    expects (always the checked winner)."""
    expected = ExpectedDraft(draft_reference(run.run_id), run.case.case_id, SAMPLE_WINNER)
    text = (
        f"Draft recommendation {expected.reference} for case {expected.case}: award to {winner}.\n"
    )
    return text, expected
