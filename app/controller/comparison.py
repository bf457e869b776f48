"""The deterministic comparison the model's answer is checked against.

A supplier is eligible when it is within budget, delivers in time, meets the warranty and
the supplier API reports it available. The lowest price wins, then the shortest delivery,
then the smallest id.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.core.case import Case, Proposal
from app.core.errors import RunStopped


class NoEligibleSupplier(RunStopped):
    """No supplier meets every requirement: the run stops and writes no recommendation."""


@dataclass(frozen=True)
class SupplierVerdict:
    id: str
    eligible: bool
    misses: tuple[str, ...]


@dataclass(frozen=True)
class Comparison:
    case_id: str
    winner: str
    verdicts: tuple[SupplierVerdict, ...]

    def eligible_ids(self) -> set[str]:
        return {v.id for v in self.verdicts if v.eligible}

    def as_json(self) -> dict[str, object]:
        return {
            "case_id": self.case_id,
            "winner": self.winner,
            "suppliers": [
                {"id": v.id, "eligible": v.eligible, "misses": list(v.misses)}
                for v in self.verdicts
            ],
        }


def _misses(proposal: Proposal, case: Case, available: bool) -> tuple[str, ...]:
    req = case.requirements
    misses = []
    if proposal.price_usd > req.max_price_usd:
        misses.append("price")
    if proposal.delivery_days > req.max_delivery_days:
        misses.append("delivery")
    if proposal.warranty_months < req.min_warranty_months:
        misses.append("warranty")
    if not available:
        misses.append("availability")
    return tuple(misses)


def compare(
    case: Case, proposals: dict[str, Proposal], availability: dict[str, bool]
) -> Comparison:
    """Ranks the case's suppliers; raises NoEligibleSupplier when none qualifies."""
    verdicts = []
    for entry in case.suppliers:
        misses = _misses(proposals[entry.id], case, availability[entry.id])
        verdicts.append(SupplierVerdict(entry.id, not misses, misses))
    eligible = [proposals[v.id] for v in verdicts if v.eligible]
    if not eligible:
        reasons = "; ".join(f"{v.id}: {', '.join(v.misses)}" for v in verdicts)
        raise NoEligibleSupplier(
            f"case {case.case_id}: no supplier meets every requirement ({reasons})"
        )
    best = min(eligible, key=lambda p: (p.price_usd, p.delivery_days, p.supplier_id))
    return Comparison(case.case_id, best.supplier_id, tuple(verdicts))
