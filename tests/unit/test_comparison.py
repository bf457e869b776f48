"""The deterministic comparison: eligibility, the tie-break order, and no eligible supplier."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.controller.comparison import NoEligibleSupplier, compare
from app.core.case import Proposal, load_case_folder

SAMPLE = Path(__file__).resolve().parents[2] / "cases" / "rfp-001"


def _sample():
    folder = load_case_folder(SAMPLE)
    case, raw = folder.case, folder.proposal_bytes
    proposals = {sid: Proposal.model_validate_json(data) for sid, data in raw.items()}
    return case, proposals


def test_sample_winner_is_northstar_with_reasons_for_the_others() -> None:
    case, proposals = _sample()
    result = compare(case, proposals, {"northstar": True, "harbor": True, "cedar": True})
    assert result.winner == "northstar"
    misses = {v.id: v.misses for v in result.verdicts}
    assert misses == {"northstar": (), "harbor": ("delivery",), "cedar": ("price",)}


def test_unavailable_winner_means_no_eligible_supplier() -> None:
    case, proposals = _sample()
    with pytest.raises(NoEligibleSupplier, match="northstar: availability"):
        compare(case, proposals, {"northstar": False, "harbor": True, "cedar": True})


def test_ties_break_on_delivery_then_id() -> None:
    case, proposals = _sample()
    same = proposals["northstar"].model_dump()
    proposals["cedar"] = Proposal(**{**same, "supplier_id": "cedar", "delivery_days": 20})
    assert compare(case, proposals, dict.fromkeys(proposals, True)).winner == "cedar"
    proposals["cedar"] = Proposal(**{**same, "supplier_id": "cedar"})
    assert compare(case, proposals, dict.fromkeys(proposals, True)).winner == "cedar"
