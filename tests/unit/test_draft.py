"""The writer's draft, read strictly: what differs from the run's draft is named, field by field,
and nothing of a body in any other form is repeated back."""

from __future__ import annotations

from app.core.draft import ExpectedDraft, draft_differences, draft_reference

EXPECTED = ExpectedDraft(draft_reference("0123456789abcdef" * 2), "rfp-001", "northstar")


def draft(
    reference: str = "DR-01234567", case: str = "rfp-001", winner: str = "northstar"
) -> bytes:
    return f"Draft recommendation {reference} for case {case}: award to {winner}.\n".encode()


def test_the_runs_own_draft_differs_in_nothing() -> None:
    assert EXPECTED.reference == "DR-01234567"
    assert draft_differences(draft(), EXPECTED) == []


def test_each_field_that_differs_is_named() -> None:
    assert draft_differences(draft(winner="cedar"), EXPECTED) == [
        "it awards to 'cedar', where the checked comparison's winner is 'northstar'"
    ]
    assert draft_differences(draft(case="rfp-other", reference="DR-89abcdef"), EXPECTED) == [
        "it is for case 'rfp-other', not this run's 'rfp-001'",
        "it carries reference 'DR-89abcdef', not this run's 'DR-01234567'",
    ]


def test_a_body_in_another_form_is_described_not_shown() -> None:
    for body in (
        b"",
        draft() + b"\x1b[2J",
        draft().rstrip(b"\n"),
        b"Draft recommendation DR-01234567 for case rfp-001: award to northstar.\nAlso cedar.\n",
        b"Draft recommendation DR-01234567 for case rfp-001: award to North\x1bstar.\n",
    ):
        (found,) = draft_differences(body, EXPECTED)
        assert found.startswith("it is not a draft in the writer's one form")
        assert "\x1b" not in found and "cedar" not in found
