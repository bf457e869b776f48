"""The AccessDenied control's case as every part seeds it: the shipped template, cases/rfp-other,
under the id a run of a given case asks for (`ids.other_case_id`).

The controller's local store and supplier API, the Pulumi program's bucket objects and the
supplier Deployment's command all take the control case from here, so they agree with the
controller's check whatever the stack's own case id is, `rfp-other` included.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Final

from app.core.ids import OTHER_CASE_ID, other_case_id
from app.core.repo import CASES_DIR

CONTROL_TEMPLATE: Final = CASES_DIR / OTHER_CASE_ID


def renamed(run_case_id: str) -> bool:
    """Whether the control case's id differs from the template's own (the run's case has it)."""
    return other_case_id(run_case_id) != OTHER_CASE_ID


def control_case_document(run_case_id: str, template: Path = CONTROL_TEMPLATE) -> bytes:
    """The template's case document with its id set to the one this run must not read."""
    document = json.loads((template / "case.json").read_bytes())
    document["case_id"] = other_case_id(run_case_id)
    return (json.dumps(document, indent=2) + "\n").encode()
