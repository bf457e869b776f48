"""evidence.json and checks.json: the one place their shape is decided.

The phases hand back typed results (the guest readings, the layer's readings and policy, the
model's checked answer, the correlation, the phase table); this module alone turns them into
the two documents, each with the schema version its JSON Schema in app/controller/schemas/
describes. A change of shape changes the version and the schema together.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from app.controller.call_correlation import CorrelationResult
from app.controller.guest import GuestReadings
from app.core.case import Case
from app.core.catalogue import Check
from app.tools import catalogue as common_checks
from app.tools.attacks import ATTACKS
from app.tools.layer import LayerReadings

# 2: the attacks tried, each with the ids of the checks that prove it (``attacks``).
# 3: what each role's policy showed it, as the layer read it (``policy.grants``).
EVIDENCE_SCHEMA_VERSION: Final = 3
# 3: the checks made after the file is written, named (``after_written``).
CHECKS_SCHEMA_VERSION: Final = 3


@dataclass(frozen=True)
class RunFacts:
    """What names the run: both documents open with it."""

    run_id: str
    layer: str
    case_id: str
    report_uri: str
    in_cluster: bool
    rehearsal: bool

    def as_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "layer": self.layer,
            "case_id": self.case_id,
            "report_prefix": self.report_uri,
            "in_cluster": self.in_cluster,
            "rehearsal": self.rehearsal,
        }


@dataclass(frozen=True)
class Recommended:
    """The gate-checked choice, and the model's analysis as it wrote it."""

    supplier_id: str
    supplier_name: str
    analysis: str


@dataclass(frozen=True)
class ControllerHolds:
    """What only the controller holds, named, never its value."""

    supplier_key_file: str
    aws_identity: str
    aws_credential_source: str


@dataclass(frozen=True)
class EvidenceParts:
    """Every result evidence.json is made of, each from the phase that produced it."""

    facts: RunFacts
    case: Case
    provenance: dict[str, Any]
    guest: GuestReadings
    endpoints: dict[str, str]
    controller: ControllerHolds
    policy: dict[str, Any]  # the layer's policy as applied (ConfinementLayer.evidence)
    readings: LayerReadings
    recommendation: Recommended
    model_usage: dict[str, Any]
    correlation: CorrelationResult
    timing: list[dict[str, Any]]


def _case(case: Case) -> dict[str, Any]:
    return {
        "case_id": case.case_id,
        "title": case.title,
        "suppliers": [{"id": s.id, "name": s.name} for s in case.suppliers],
    }


def _attacks() -> list[dict[str, Any]]:
    """Every path out the run tries, with the checks that prove it: the report reads them here,
    never from the layers' code."""
    return [
        {
            "key": attack.key,
            "claim": attack.claim,
            "probes": list(attack.probes),
            "check": common_checks.ATTACK.id_for(attack=attack.key),
            "control": common_checks.ATTACK_CONTROL.id_for(attack=attack.key),
        }
        for attack in ATTACKS
    ]


def evidence_document(parts: EvidenceParts) -> dict[str, Any]:
    correlation = parts.correlation
    return {
        "schema_version": EVIDENCE_SCHEMA_VERSION,
        **parts.facts.as_json(),
        "case": _case(parts.case),
        "provenance": parts.provenance,
        "guest": parts.guest.as_json(),
        "endpoints": parts.endpoints,
        "controller": {
            "supplier_key_file": parts.controller.supplier_key_file,
            "aws_identity": parts.controller.aws_identity,
            "aws_credential_source": parts.controller.aws_credential_source,
        },
        "policy": parts.policy,
        "readings": dict(parts.readings.process),
        "attacks": _attacks(),
        "attack_answers": parts.readings.attacks.as_json(),
        "recommendation": {
            "supplier_id": parts.recommendation.supplier_id,
            "supplier_name": parts.recommendation.supplier_name,
            "analysis": parts.recommendation.analysis,
        },
        "model": parts.model_usage,
        "correlation": {
            "arrived_once": correlation.matched,
            "refused_never_arrived": correlation.refused_calls,
            "had_refused_operation": correlation.had_refused_operation,
            "calls": [call.as_json() for call in correlation.calls],
        },
        "timing": parts.timing,
    }


def checks_document(
    facts: RunFacts,
    records: Sequence[dict[str, Any]],
    after_written: Sequence[tuple[str, Check]] = (),
) -> dict[str, Any]:
    """``after_written``: (section, check) of each check the run makes once this document is
    written (the read-back scan), named so a reader of the file knows it is to come."""
    return {
        "schema_version": CHECKS_SCHEMA_VERSION,
        "run_id": facts.run_id,
        "layer": facts.layer,
        "case_id": facts.case_id,
        "checks": list(records),
        "after_written": [
            {"id": check.id_for(), "section": section, "claim": check.claim}
            for section, check in after_written
        ],
    }
