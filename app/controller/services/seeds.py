"""What the local stand-ins are seeded with: the run's case, and the AccessDenied control's case
under an id that is never the run's own.

Both are bytes the controller already holds. The run's case is exactly what load_case_folder read
and checked, never read again from the user's folder (where a file could since have changed or
become a link); the control's case is the shipped template with its id set for this run.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from app.core.case import CaseFolder, case_key, proposal_key
from app.core.control_case import CONTROL_TEMPLATE, control_case_document
from app.core.ids import AVAILABILITY_FILE, other_case_id


@dataclass(frozen=True)
class SeedObject:
    key: str
    data: bytes


@dataclass(frozen=True)
class SeedCase:
    """One case as the store and the supplier API are given it."""

    case_id: str
    case_bytes: bytes
    proposal_bytes: Mapping[str, bytes] = field(default_factory=dict)  # by supplier id
    availability_bytes: bytes | None = None

    def store_objects(self) -> list[SeedObject]:
        objects = [SeedObject(case_key(self.case_id), self.case_bytes)]
        objects += [
            SeedObject(proposal_key(self.case_id, supplier_id), data)
            for supplier_id, data in self.proposal_bytes.items()
        ]
        return objects

    def write_folder(self, parent: Path) -> Path:
        """A case folder for the supplier API (case.json and the optional availability file),
        written by the controller into the run's own tree."""
        folder = parent / self.case_id
        folder.mkdir(mode=0o755, parents=True)
        files = {"case.json": self.case_bytes}
        if self.availability_bytes is not None:
            files[AVAILABILITY_FILE] = self.availability_bytes
        for name, data in files.items():
            (folder / name).write_bytes(data)
            os.chmod(folder / name, 0o644)
        return folder


def run_seed(folder: CaseFolder) -> SeedCase:
    return SeedCase(
        folder.case.case_id,
        folder.case_bytes,
        dict(folder.proposal_bytes),
        folder.availability_bytes,
    )


def control_seed(run_case_id: str, template: Path = CONTROL_TEMPLATE) -> SeedCase:
    """The control's case document: the shipped template under the id this run must not read."""
    return SeedCase(other_case_id(run_case_id), control_case_document(run_case_id, template))
