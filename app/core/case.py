"""The case contract: a case folder, validated before it touches a path, a key or a policy."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)

from app.core.errors import BadInput
from app.core.ids import AVAILABILITY_FILE, ID_REGEX

Identifier = Annotated[str, StringConstraints(pattern=ID_REGEX)]
Sha256Hex = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]

MAX_DOCUMENT_BYTES = 256 * 1024


class CaseError(BadInput):
    """The case folder is not a valid case; the message names the file and what is wrong."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Requirements(_Strict):
    max_price_usd: int = Field(gt=0)
    max_delivery_days: int = Field(gt=0)
    min_warranty_months: int = Field(ge=0)


class SupplierEntry(_Strict):
    id: Identifier
    name: str = Field(min_length=1, max_length=200)
    proposal: str
    sha256: Sha256Hex

    @model_validator(mode="after")
    def _proposal_path_is_the_supplier_file(self) -> SupplierEntry:
        # The proposal path is fixed by the id, so a case document cannot point outside its
        # folder or at another supplier's file.
        if self.proposal != f"proposals/{self.id}.json":
            raise ValueError(f"proposal must be 'proposals/{self.id}.json', not {self.proposal!r}")
        return self


class Case(_Strict):
    case_id: Identifier
    title: str = Field(min_length=1, max_length=500)
    requirements: Requirements
    suppliers: tuple[SupplierEntry, ...] = Field(min_length=1, max_length=50)

    @model_validator(mode="after")
    def _unique_supplier_ids(self) -> Case:
        ids = [s.id for s in self.suppliers]
        if len(set(ids)) != len(ids):
            raise ValueError(f"supplier ids must be unique, got {ids}")
        return self

    def supplier(self, supplier_id: str) -> SupplierEntry:
        for entry in self.suppliers:
            if entry.id == supplier_id:
                return entry
        raise KeyError(supplier_id)

    def case_key(self) -> str:
        return case_key(self.case_id)

    def proposal_key(self, supplier_id: str) -> str:
        return proposal_key(self.case_id, self.supplier(supplier_id).id)


def case_key(case_id: str) -> str:
    """Where a case document lives in the store."""
    return f"cases/{case_id}/case.json"


def proposal_key(case_id: str, supplier_id: str) -> str:
    """Where a supplier's proposal for a case lives in the store."""
    return f"proposals/{case_id}/{supplier_id}.json"


def report_prefix(case_id: str, run_id: str) -> str:
    """Where one run's report files go in the store."""
    return f"reports/{case_id}/{run_id}/"


class Proposal(_Strict):
    supplier_id: Identifier
    name: str = Field(min_length=1, max_length=200)
    price_usd: int = Field(gt=0)
    delivery_days: int = Field(gt=0)
    warranty_months: int = Field(ge=0)
    summary: str = Field(max_length=4000)


def _describe(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "document"
    return f"{where}: {first['msg']}"


def _read_json(path: Path) -> object:
    if not path.is_file():
        raise CaseError(f"{path}: missing")
    data = path.read_bytes()
    if len(data) > MAX_DOCUMENT_BYTES:
        raise CaseError(f"{path}: {len(data)} bytes, more than the {MAX_DOCUMENT_BYTES} allowed")
    try:
        return json.loads(data)
    except json.JSONDecodeError as error:
        raise CaseError(f"{path}: invalid JSON ({error.msg} at line {error.lineno})") from error


def parse_case(data: bytes, source: str) -> Case:
    """Validates a case document's bytes (from a folder or from the store)."""
    try:
        return Case.model_validate_json(data)
    except ValidationError as error:
        raise CaseError(f"{source}: {_describe(error)}") from error


def parse_proposal(data: bytes, entry: SupplierEntry, source: str) -> Proposal:
    """Validates a proposal's bytes against its case entry: digest first, then shape and id."""
    digest = hashlib.sha256(data).hexdigest()
    if digest != entry.sha256:
        raise CaseError(
            f"{source}: sha256 {digest} does not match the case entry for {entry.id} "
            f"({entry.sha256}); the proposal changed after the case was written"
        )
    try:
        proposal = Proposal.model_validate_json(data)
    except ValidationError as error:
        raise CaseError(f"{source}: {_describe(error)}") from error
    if proposal.supplier_id != entry.id:
        raise CaseError(f"{source}: supplier_id {proposal.supplier_id!r}, expected {entry.id!r}")
    return proposal


@dataclass(frozen=True)
class CaseFolder:
    """A validated case folder: the case, and the exact bytes of each file the store must hold."""

    path: Path
    case: Case
    case_bytes: bytes
    proposal_bytes: dict[str, bytes]  # by supplier id

    def shipped(self) -> dict[str, bytes]:
        """Each file by its name relative to the folder, as the store's objects must match."""
        return {"case.json": self.case_bytes} | {
            f"proposals/{sid}.json": data for sid, data in self.proposal_bytes.items()
        }


def load_case_folder(folder: Path) -> CaseFolder:
    """Reads and validates a case folder: the case, each proposal against its digest, and the
    optional availability file the synthetic supplier serves."""
    folder = folder.resolve()
    if not folder.is_dir():
        raise CaseError(f"{folder}: not a case folder (no such directory)")
    _read_json(folder / "case.json")  # size and JSON errors name the file before validation
    case_bytes = (folder / "case.json").read_bytes()
    case = parse_case(case_bytes, str(folder / "case.json"))
    proposals: dict[str, bytes] = {}
    for entry in case.suppliers:
        path = folder / entry.proposal
        _read_json(path)
        data = path.read_bytes()
        parse_proposal(data, entry, str(path))
        proposals[entry.id] = data
    availability = folder / AVAILABILITY_FILE
    if availability.exists():
        check_availability_file(availability, case)
    return CaseFolder(folder, case, case_bytes, proposals)


def check_availability_file(path: Path, case: Case) -> None:
    """The synthetic supplier's availability for a case: one strict boolean per supplier id."""
    raw = _read_json(path)
    ids = {s.id for s in case.suppliers}
    if not isinstance(raw, dict) or set(raw) != ids:
        raise CaseError(
            f"{path}: must map exactly the case's supplier ids {sorted(ids)} to booleans"
        )
    if not all(isinstance(v, bool) for v in raw.values()):
        raise CaseError(f"{path}: every value must be true or false")
