"""`case new` and `case check`: a case folder of one's own, written from an example and checked
exactly as a run checks it (app/core/case.py), every file and field at once.

Both act on the user's own folder, so nothing below it is followed: files are created and
replaced relative to the folder's descriptor, never through a symbolic link. Both are atomic:
`case new` fills a hidden folder beside the new one and renames it into place, and
`--write-digests` writes a hidden file beside case.json and renames it over; a write that
fails (a full disk) removes what it made and is exit 2 naming the file and the cause.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TextIO

from app.controller.comparison import NoEligibleSupplier, compare
from app.core.case import (
    CaseFolder,
    Proposal,
    check_availability,
    check_case_folder,
    proposal_path,
)
from app.core.case_files import CaseError, check_strict_json, open_case_folder
from app.core.case_schema import CASE_SCHEMA_FILE, PROPOSAL_SCHEMA_FILE
from app.core.errors import BadInput
from app.core.ids import ID_REGEX, is_valid_id
from app.core.repo import CASES_DIR

_SHA256_HEX_LENGTH: Final = 64

# The example `case new` writes: one supplier wins, one delivers too late, one gives too short a
# warranty, so that each rule shows in comparison.json before anything is edited.
EXAMPLE_TITLE: Final = "replacing the laptops of a 40-person team"
EXAMPLE_REQUIREMENTS: Final = {
    "max_price_usd": 60000,
    "max_delivery_days": 21,
    "min_warranty_months": 24,
}
EXAMPLE_PROPOSALS: Final = (
    ("aster", "Aster Computing", 54000, 14, 36, "40 laptops from stock, next-day on-site repair."),
    ("birch", "Birch Technology", 49500, 30, 24, "40 laptops built to order, shipped in a month."),
    ("cobalt", "Cobalt Devices", 52000, 10, 12, "40 laptops within ten days, one-year warranty."),
)


def _dumps(document: dict[str, Any]) -> bytes:
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _schema_reference(document_dir: Path, schema_file: str) -> str:
    """The committed schema's path as seen from the document's folder, for an editor to follow."""
    return os.path.relpath(CASES_DIR / schema_file, document_dir)


@contextmanager
def _folder_fd(path: Path) -> Iterator[int]:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        yield fd
    finally:
        os.close(fd)


def _create(dir_fd: int, name: str, data: bytes) -> None:
    """A new file holding ``data``, whole; on any failure, no file at all."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(name, flags, 0o644, dir_fd=dir_fd)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.close(fd)
    except BaseException:
        with suppress(OSError):
            os.close(fd)
        with suppress(OSError):
            os.unlink(name, dir_fd=dir_fd)
        raise


class CaseNotWritten(BadInput):
    """A case file or folder could not be written; nothing of it was left behind."""


def _claim_new_folder(folder: Path) -> bool:
    """Creates the case folder (True), or takes an existing empty one; refuses anything else."""
    if not folder.parent.is_dir():
        raise BadInput(f"{folder}: its parent {folder.parent} is not an existing folder")
    try:
        os.mkdir(folder, 0o755)
        return True
    except FileExistsError:
        pass
    except OSError as error:  # /proc, a read-only mount, a folder closed to this user
        raise BadInput(
            f"{folder}: cannot be created ({error.strerror})",
            "pass a folder on a writable filesystem",
        ) from None
    if folder.is_symlink() or not folder.is_dir():
        raise BadInput(f"{folder}: exists and is not a folder; case new writes a new folder")
    if any(folder.iterdir()):
        raise BadInput(
            f"{folder}: is not empty; case new writes only into a new or empty folder",
            "choose a new folder, or run case check on this one",
        )
    return False


def _fill_new_case(partial: Path, folder: Path) -> None:
    """Writes the example case into ``partial``, which becomes ``folder``."""
    entries = []
    with _folder_fd(partial) as top:
        os.mkdir("proposals", 0o755, dir_fd=top)
        with _folder_fd(partial / "proposals") as proposals:
            for supplier_id, name, price, days, months, summary in EXAMPLE_PROPOSALS:
                proposal = {
                    "$schema": _schema_reference(folder / "proposals", PROPOSAL_SCHEMA_FILE),
                    "supplier_id": supplier_id,
                    "name": name,
                    "price_usd": price,
                    "delivery_days": days,
                    "warranty_months": months,
                    "summary": summary,
                }
                data = _dumps(proposal)
                _create(proposals, f"{supplier_id}.json", data)
                digest = hashlib.sha256(data).hexdigest()
                entries.append({"id": supplier_id, "name": name, "sha256": digest})
        case = {
            "$schema": _schema_reference(folder, CASE_SCHEMA_FILE),
            "case_id": folder.name,
            "title": EXAMPLE_TITLE,
            "requirements": EXAMPLE_REQUIREMENTS,
            "suppliers": entries,
        }
        _create(top, "case.json", _dumps(case))


def new_case(folder: Path, stream: TextIO) -> None:
    """Writes a valid case folder named after its case id, with three example suppliers."""
    folder = Path(os.path.abspath(folder))
    if not is_valid_id(folder.name):
        raise BadInput(
            f"{folder}: the folder's name is the case id, and {json.dumps(folder.name)} does not "
            f"match {ID_REGEX}",
            "name it with lower-case letters, digits and hyphens, for example my-case",
        )
    created = _claim_new_folder(folder)
    # Filled beside the folder, then renamed into place (over the empty folder, if one was
    # there): the folder is whole or absent, never half-written.
    partial = folder.with_name(f".{folder.name}.partial-{secrets.token_hex(8)}")
    try:
        os.mkdir(partial, 0o755)
    except OSError as error:
        if created:
            with suppress(OSError):
                folder.rmdir()
        raise BadInput(
            f"{folder}: cannot be created ({error.strerror})",
            "pass a folder on a writable filesystem",
        ) from None
    try:
        _fill_new_case(partial, folder)
        os.rename(partial, folder)
    except OSError as error:
        shutil.rmtree(partial, ignore_errors=True)
        if created:
            with suppress(OSError):
                folder.rmdir()
        raise CaseNotWritten(
            f"{folder}: the case could not be written ({error.strerror or error}); nothing of "
            "it was left",
            "free space on that filesystem, or pass a folder on another",
        ) from None
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        if created:
            with suppress(OSError):
                folder.rmdir()
        raise
    ids = ", ".join(supplier_id for supplier_id, *_ in EXAMPLE_PROPOSALS)
    print(f"wrote {folder}/case.json: case {folder.name}, suppliers {ids}", file=stream)
    for supplier_id, *_ in EXAMPLE_PROPOSALS:
        print(f"wrote {folder}/{proposal_path(supplier_id)}", file=stream)
    print(
        "next: edit the requirements and the proposals (a new supplier is an entry in case.json "
        "and a file proposals/<id>.json), then record the digests and check the case:\n"
        f"  python -m app.controller case check {folder} --write-digests",
        file=stream,
    )


# --- case check --write-digests ------------------------------------------------------------


@dataclass(frozen=True)
class DigestChange:
    index: int
    supplier_id: str
    before: object  # whatever case.json held: a digest, nothing, or something else
    after: str

    def line(self, case_file: Path) -> str:
        field = f"{case_file}: suppliers.{self.index}.sha256"
        source = proposal_path(self.supplier_id)
        if self.before is None:
            return f"{field}: set to the digest of {source}, {self.after}"
        if isinstance(self.before, str) and len(self.before) == _SHA256_HEX_LENGTH:
            return f"{field}: changed from {self.before} to the digest of {source}, {self.after}"
        return f"{field}: was not a digest; now the digest of {source}, {self.after}"


def _replace(dir_fd: int, name: str, data: bytes) -> None:
    """Replaces a file in the folder at once: a reader sees the old bytes or the new, whole."""
    temporary = f".{name}.{secrets.token_hex(8)}"
    _create(dir_fd, temporary, data)  # removes the file itself if it cannot be written whole
    try:
        os.replace(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with suppress(OSError):
            os.unlink(temporary, dir_fd=dir_fd)
        raise


def write_digests(folder: Path) -> list[DigestChange]:
    """Sets each supplier's sha256 in case.json to the digest of its proposal file, as it is
    now; changes nothing when case.json is not a JSON object with a list of suppliers, and
    leaves an entry alone whose id is invalid or whose proposal cannot be read (the check that
    follows names them)."""
    folder = folder.resolve()
    source = folder / "case.json"
    with open_case_folder(folder) as files:
        document = check_strict_json(files.read("case.json"), str(source))
        suppliers = document.get("suppliers") if isinstance(document, dict) else None
        if not isinstance(suppliers, list):
            raise CaseError(f"{source}: suppliers: must be a list of the case's suppliers")
        changes = []
        for index, entry in enumerate(suppliers):
            if not isinstance(entry, dict) or not is_valid_id(entry.get("id")):
                continue
            try:
                data = files.read(proposal_path(entry["id"]))
            except CaseError:
                continue
            digest = hashlib.sha256(data).hexdigest()
            if entry.get("sha256") != digest:
                changes.append(DigestChange(index, entry["id"], entry.get("sha256"), digest))
                entry["sha256"] = digest
        if changes:
            try:
                _replace(files.fd, "case.json", _dumps(document))
            except OSError as error:
                if error.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
                    raise BadInput(f"{source}: cannot be written ({error.strerror})") from None
                raise CaseNotWritten(
                    f"{source}: cannot be written ({error.strerror or error}); it is unchanged "
                    "and nothing was left beside it",
                    "free space on that filesystem",
                ) from None
    return changes


# --- case check ----------------------------------------------------------------------------


class CaseProblems(BadInput):
    """The folder is not a valid case: every problem was printed; a run stops at the first."""


def _outcome_lines(folder: CaseFolder) -> list[str]:
    """What a run of this case would decide, from the case's own numbers and availability."""
    case = folder.case
    proposals = {sid: Proposal.model_validate_json(b) for sid, b in folder.proposal_bytes.items()}
    availability = dict.fromkeys(proposals, True)
    if folder.availability_bytes is not None:
        availability = check_availability(folder.availability_bytes, "", case)
    try:
        comparison = compare(case, proposals, availability)
    except NoEligibleSupplier as none:
        return [f"a run would stop before any recommendation: {none}"]
    lines = [f"its comparison picks {comparison.winner}, the supplier a run must recommend:"]
    lines += [f"  {verdict.id}: {verdict.why}" for verdict in comparison.verdicts]
    return lines


def check_case(folder: Path, *, write: bool, stream: TextIO) -> None:
    """Prints what is wrong with the folder, file by file and field by field, and raises
    CaseProblems (exit 2); or says the case is valid and what a run of it would decide."""
    if write:
        case_file = folder.resolve() / "case.json"
        changes = write_digests(folder)
        for change in changes:
            print(change.line(case_file), file=stream)
        if not changes:
            print(f"{case_file}: every sha256 already matches its proposal; unchanged", file=stream)
    checked = check_case_folder(folder)
    if checked.folder is None:
        for problem in checked.problems:
            print(problem, file=stream)
        count = len(checked.problems)
        raise CaseProblems(
            f"{folder.resolve()}: {count} problem{'s' if count != 1 else ''}; a run would stop at "
            "the first, before anything is created"
        )
    valid = checked.folder
    ids = ", ".join(entry.id for entry in valid.case.suppliers)
    print(f"{valid.path}: a valid case: {valid.case.case_id}, suppliers {ids}", file=stream)
    for line in _outcome_lines(valid):
        print(line, file=stream)
