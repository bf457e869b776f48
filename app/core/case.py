"""The case contract: a case folder, validated before it touches a path, a key or a policy."""

from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Final

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)

from app.core.case_files import CaseError as CaseError  # re-exported: the case's error
from app.core.case_files import (
    check_strict_json,
    field_name,
    field_path,
    open_case_folder,
)
from app.core.ids import AVAILABILITY_FILE, ID_REGEX

# Line breaks a renderer may honour besides \n, and the bidirectional controls that make text
# display in an order other than the one it is stored in.
_LINE_BREAKS: Final = frozenset("\n\r\x0b\x0c\x85\u2028\u2029")
_BIDI_CONTROLS: Final = frozenset("\u061c\u200e\u200f") | frozenset(
    chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))
)
# The largest amount, and the longest delivery or warranty, a case may state.
MAX_AMOUNT_USD: Final = 10**12
MAX_DAYS_OR_MONTHS: Final = 100_000


def _refused_character(value: str, *, allow_lines: bool) -> str | None:
    for char in value:
        if allow_lines and char in "\n\t":
            continue
        if char in _LINE_BREAKS or char in _BIDI_CONTROLS or unicodedata.category(char) == "Cc":
            return f"U+{ord(char):04X}"
    return None


def _one_line(value: str) -> str:
    found = _refused_character(value, allow_lines=False)
    if found:
        raise ValueError(f"holds the control character {found}; it must be one line of text")
    return value


def _free_text(value: str) -> str:
    found = _refused_character(value, allow_lines=True)
    if found:
        raise ValueError(f"holds the control character {found}; only line breaks and tabs are")
    return value


Identifier = Annotated[str, StringConstraints(pattern=ID_REGEX)]
Sha256Hex = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
# Case text ends up in the report: one line where a headline shows it, no control characters.
OneLine = Annotated[str, AfterValidator(_one_line)]
FreeText = Annotated[str, AfterValidator(_free_text)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Requirements(_Strict):
    max_price_usd: int = Field(gt=0, le=MAX_AMOUNT_USD)
    max_delivery_days: int = Field(gt=0, le=MAX_DAYS_OR_MONTHS)
    min_warranty_months: int = Field(ge=0, le=MAX_DAYS_OR_MONTHS)


class SupplierEntry(_Strict):
    id: Identifier
    name: OneLine = Field(min_length=1, max_length=200)
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
    title: OneLine = Field(min_length=1, max_length=500)
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
    name: OneLine = Field(min_length=1, max_length=200)
    price_usd: int = Field(gt=0, le=MAX_AMOUNT_USD)
    delivery_days: int = Field(gt=0, le=MAX_DAYS_OR_MONTHS)
    warranty_months: int = Field(ge=0, le=MAX_DAYS_OR_MONTHS)
    summary: FreeText = Field(max_length=4000)


def _describe(error: ValidationError) -> str:
    first = error.errors()[0]
    return f"{field_path(first['loc'])}: {first['msg']}"


def parse_case(data: bytes, source: str) -> Case:
    """Validates a case document's bytes (from a folder or from the store)."""
    check_strict_json(data, source)
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
    check_strict_json(data, source)
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
    availability_bytes: bytes | None = None  # the optional supplier-availability.json

    def shipped(self) -> dict[str, bytes]:
        """Each file by its name relative to the folder, as the store's objects must match."""
        return {"case.json": self.case_bytes} | {
            f"proposals/{sid}.json": data for sid, data in self.proposal_bytes.items()
        }


def load_case_folder(folder: Path) -> CaseFolder:
    """Reads and validates a case folder: the case, each proposal against its digest, and the
    optional availability file the synthetic supplier serves. Every file is read once, through
    the folder's own descriptor, so what is validated is exactly what the run uses."""
    folder = folder.resolve()
    with open_case_folder(folder) as files:
        case_bytes = files.read("case.json")
        case = parse_case(case_bytes, str(folder / "case.json"))
        proposals: dict[str, bytes] = {}
        for entry in case.suppliers:
            data = files.read(entry.proposal)
            parse_proposal(data, entry, str(folder / entry.proposal))
            proposals[entry.id] = data
        availability = None
        if files.exists(AVAILABILITY_FILE):
            availability = files.read(AVAILABILITY_FILE)
            check_availability(availability, str(folder / AVAILABILITY_FILE), case)
    return CaseFolder(folder, case, case_bytes, proposals, availability)


def check_availability(data: bytes, source: str, case: Case) -> dict[str, bool]:
    """The synthetic supplier's availability for a case: one strict boolean per supplier id."""
    raw = check_strict_json(data, source)
    ids = [s.id for s in case.suppliers]
    if not isinstance(raw, dict):
        raise CaseError(f"{source}: must be an object mapping each supplier id to true or false")
    unknown = sorted(set(raw) - set(ids))
    if unknown:
        raise CaseError(f"{source}: {field_name(unknown[0])}: not a supplier of this case")
    missing = [sid for sid in ids if sid not in raw]
    if missing:
        raise CaseError(f"{source}: {missing[0]}: missing; every supplier of the case needs one")
    for sid in ids:
        if not isinstance(raw[sid], bool):
            raise CaseError(f"{source}: {sid}: must be true or false")
    return {sid: raw[sid] for sid in ids}
