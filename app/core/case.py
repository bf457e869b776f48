"""The case contract: a case folder, validated before it touches a path, a key or a policy."""

from __future__ import annotations

import hashlib
import json
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
from app.core.ids import AVAILABILITY_FILE, ID_REGEX, is_valid_id

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


# An editor's pointer to the document's JSON Schema: read by editors, never by the run.
SchemaReference = Annotated[str, AfterValidator(_one_line), StringConstraints(max_length=500)]
_SCHEMA_FIELD_DESCRIPTION = "the JSON Schema an editor checks this file against; the run ignores it"


class Requirements(_Strict):
    max_price_usd: int = Field(
        gt=0, le=MAX_AMOUNT_USD, description="the most a supplier may charge, in whole US dollars"
    )
    max_delivery_days: int = Field(
        gt=0, le=MAX_DAYS_OR_MONTHS, description="the longest delivery allowed, in days"
    )
    min_warranty_months: int = Field(
        ge=0, le=MAX_DAYS_OR_MONTHS, description="the shortest warranty allowed, in months"
    )


def proposal_path(supplier_id: str) -> str:
    """Where a supplier's proposal lies in its case folder: fixed by its id."""
    return f"proposals/{supplier_id}.json"


class SupplierEntry(_Strict):
    id: Identifier = Field(description="the supplier's id; its proposal is proposals/<id>.json")
    name: OneLine = Field(min_length=1, max_length=200, description="the supplier's name")
    proposal: str | None = Field(
        default=None,
        description="optional: the proposal's path, which can only be proposals/<id>.json",
    )
    sha256: Sha256Hex = Field(
        description="the SHA-256 of the proposal file's bytes: case check --write-digests fills "
        "it in"
    )

    @model_validator(mode="after")
    def _proposal_path_is_the_supplier_file(self) -> SupplierEntry:
        # The proposal path is fixed by the id, so a case document cannot point outside its
        # folder or at another supplier's file; a case may still name it, as long as it is that.
        if self.proposal is not None and self.proposal != proposal_path(self.id):
            raise ValueError(
                f"proposal must be '{proposal_path(self.id)}' (or left out), not {self.proposal!r}"
            )
        return self

    @property
    def proposal_path(self) -> str:
        return proposal_path(self.id)


class Case(_Strict):
    schema_reference: SchemaReference | None = Field(
        default=None, alias="$schema", exclude=True, description=_SCHEMA_FIELD_DESCRIPTION
    )
    case_id: Identifier = Field(description="the case's id: its store keys and its report's")
    title: OneLine = Field(min_length=1, max_length=500, description="what is being procured")
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
    schema_reference: SchemaReference | None = Field(
        default=None, alias="$schema", exclude=True, description=_SCHEMA_FIELD_DESCRIPTION
    )
    supplier_id: Identifier = Field(description="the id of the supplier this proposal is from")
    name: OneLine = Field(min_length=1, max_length=200, description="the supplier's name")
    price_usd: int = Field(
        gt=0, le=MAX_AMOUNT_USD, description="the total price, in whole US dollars"
    )
    delivery_days: int = Field(
        gt=0, le=MAX_DAYS_OR_MONTHS, description="days from the order to delivery"
    )
    warranty_months: int = Field(ge=0, le=MAX_DAYS_OR_MONTHS, description="the warranty, in months")
    summary: FreeText = Field(
        max_length=4000, description="the proposal in the supplier's words; line breaks allowed"
    )


def _described(error: ValidationError, source: str) -> list[CaseError]:
    """Every field pydantic refused, each as its own error naming the file and the field."""
    return [
        CaseError(f"{source}: {field_path(each['loc'])}: {each['msg']}") for each in error.errors()
    ]


def _case_problems(data: bytes, source: str) -> tuple[Case | None, list[CaseError]]:
    check_strict_json(data, source)
    try:
        return Case.model_validate_json(data), []
    except ValidationError as error:
        return None, _described(error, source)


def parse_case(data: bytes, source: str) -> Case:
    """Validates a case document's bytes (from a folder or from the store)."""
    case, problems = _case_problems(data, source)
    if case is None:
        raise problems[0]
    return case


def _digest_problem(
    data: bytes, entry: SupplierEntry, source: str, folder: Path | None
) -> CaseError | None:
    digest = hashlib.sha256(data).hexdigest()
    if digest == entry.sha256:
        return None
    remedy = (
        f"if the change is yours, record it: python -m app.controller case check {folder} "
        "--write-digests"
        if folder
        else ""
    )
    return CaseError(
        f"{source}: sha256 {digest} does not match the case entry for {entry.id} "
        f"({entry.sha256}); the proposal changed after the case was written",
        remedy,
    )


def _proposal_problems(
    data: bytes, entry: SupplierEntry | str, source: str, folder: Path | None = None
) -> list[CaseError]:
    """Everything wrong with a proposal's bytes against its case entry (or, for an entry that
    is itself invalid, its supplier id alone): the digest first, then its JSON, its fields and
    its supplier id."""
    digest = None
    if isinstance(entry, SupplierEntry):
        digest = _digest_problem(data, entry, source, folder)
    expected = entry.id if isinstance(entry, SupplierEntry) else entry
    problems = [digest] if digest else []
    try:
        check_strict_json(data, source)
        proposal = Proposal.model_validate_json(data)
    except CaseError as error:
        return [*problems, error]
    except ValidationError as error:
        return [*problems, *_described(error, source)]
    if proposal.supplier_id != expected:
        problems.append(
            CaseError(f"{source}: supplier_id {proposal.supplier_id!r}, expected {expected!r}")
        )
    return problems


def parse_proposal(data: bytes, entry: SupplierEntry, source: str) -> Proposal:
    """Validates a proposal's bytes against its case entry: digest first, then shape and id."""
    problems = _proposal_problems(data, entry, source)
    if problems:
        raise problems[0]
    return Proposal.model_validate_json(data)


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
            proposal_path(sid): data for sid, data in self.proposal_bytes.items()
        }


@dataclass(frozen=True)
class CaseFolderCheck:
    """A case folder checked whole: the valid folder, or every problem found, in the order a
    run meets them (a run stops at the first)."""

    folder: CaseFolder | None
    problems: tuple[CaseError, ...]


def _entries_alone(data: bytes) -> list[SupplierEntry | str]:
    """The suppliers of a case document that fails as a whole, so that their proposals can be
    checked all the same: each entry valid on its own, or else its id when that is valid (its
    proposal is then checked without a digest); the first of any id."""
    document = json.loads(data)
    raw = document.get("suppliers") if isinstance(document, dict) else None
    entries: dict[str, SupplierEntry | str] = {}
    for item in raw if isinstance(raw, list) else []:
        try:
            entry = SupplierEntry.model_validate(item)
        except ValidationError:
            supplier_id = item.get("id") if isinstance(item, dict) else None
            if isinstance(supplier_id, str) and is_valid_id(supplier_id):
                entries.setdefault(supplier_id, supplier_id)
            continue
        entries.setdefault(entry.id, entry)
    return list(entries.values())


def check_case_folder(folder: Path) -> CaseFolderCheck:
    """Reads and validates a case folder: the case, each proposal against its digest, and the
    optional availability file the synthetic supplier serves. Every file is read once, through
    the folder's own descriptor, so what is validated is exactly what the run uses; every file
    is checked, whatever was wrong with the one before."""
    folder = folder.resolve()
    problems: list[CaseError] = []
    try:
        with open_case_folder(folder) as files:
            case_bytes = files.read("case.json")
            case, problems = _case_problems(case_bytes, str(folder / "case.json"))
            entries: list[SupplierEntry | str] = (
                list(case.suppliers) if case else _entries_alone(case_bytes)
            )
            proposals: dict[str, bytes] = {}
            for entry in entries:
                supplier_id = entry.id if isinstance(entry, SupplierEntry) else entry
                relative = proposal_path(supplier_id)
                try:
                    data = files.read(relative)
                except CaseError as error:
                    problems.append(error)
                    continue
                problems += _proposal_problems(data, entry, str(folder / relative), folder)
                proposals[supplier_id] = data
            availability = None
            if case is not None and files.exists(AVAILABILITY_FILE):
                availability = files.read(AVAILABILITY_FILE)
                check_availability(availability, str(folder / AVAILABILITY_FILE), case)
    except CaseError as error:
        # A folder that cannot be opened, a case.json that cannot be read or is not JSON, or
        # an availability file that is wrong: nothing after it can be checked.
        return CaseFolderCheck(None, (*problems, error))
    if problems or case is None:
        return CaseFolderCheck(None, tuple(problems))
    return CaseFolderCheck(CaseFolder(folder, case, case_bytes, proposals, availability), ())


def load_case_folder(folder: Path) -> CaseFolder:
    """The valid case folder, or the first problem a check of it finds, raised."""
    checked = check_case_folder(folder)
    if checked.folder is None:
        raise checked.problems[0]
    return checked.folder


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
