"""The case contract: the sample case loads, and each kind of bad case is refused by name."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from app.core import case_files
from app.core.case import CaseError, load_case_folder

SAMPLE = Path(__file__).resolve().parents[2] / "cases" / "rfp-001"


@pytest.fixture
def case_copy(tmp_path: Path) -> Path:
    target = tmp_path / "case"
    shutil.copytree(SAMPLE, target)
    return target


def _edit_case(folder: Path, edit) -> None:
    doc = json.loads((folder / "case.json").read_text())
    edit(doc)
    (folder / "case.json").write_text(json.dumps(doc))


def test_sample_case_loads_with_three_suppliers() -> None:
    folder = load_case_folder(SAMPLE)
    case, proposals = folder.case, folder.proposal_bytes
    assert case.case_id == "rfp-001"
    assert [s.id for s in case.suppliers] == ["northstar", "harbor", "cedar"]
    assert set(proposals) == {"northstar", "harbor", "cedar"}


def test_digest_mismatch_is_refused_naming_the_file(case_copy: Path) -> None:
    path = case_copy / "proposals" / "harbor.json"
    doc = json.loads(path.read_text())
    doc["price_usd"] = 1
    path.write_text(json.dumps(doc))
    with pytest.raises(
        CaseError, match=r"harbor\.json: sha256 .* does not match the case entry for harbor"
    ):
        load_case_folder(case_copy)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.update(case_id="../etc"), r"case_id: String should match pattern"),
        (lambda d: d.update(case_id="RFP-001"), r"case_id: String should match pattern"),
        (lambda d: d["suppliers"][0].update(id="north star"), r"suppliers\.0\.id"),
        (lambda d: d["suppliers"][0].update(proposal="../../x.json"), r"proposal must be"),
        (lambda d: d["requirements"].update(max_price_usd="lots"), r"max_price_usd"),
        (lambda d: d.update(extra=1), r"extra: Extra inputs are not permitted"),
        (lambda d: d.update(suppliers=[]), r"suppliers"),
    ],
)
def test_malformed_case_is_refused(case_copy: Path, edit, message: str) -> None:
    _edit_case(case_copy, edit)
    with pytest.raises(CaseError, match=message):
        load_case_folder(case_copy)


def test_invalid_json_names_the_file(case_copy: Path) -> None:
    (case_copy / "case.json").write_text("{not json")
    with pytest.raises(CaseError, match=r"case\.json: invalid JSON"):
        load_case_folder(case_copy)


def test_missing_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CaseError, match="no such directory"):
        load_case_folder(tmp_path / "nope")


def test_proposal_with_another_suppliers_id_is_refused(case_copy: Path) -> None:
    path = case_copy / "proposals" / "cedar.json"
    doc = json.loads(path.read_text())
    doc["supplier_id"] = "harbor"
    data = json.dumps(doc).encode()
    path.write_bytes(data)
    _edit_case(
        case_copy, lambda d: d["suppliers"][2].update(sha256=hashlib.sha256(data).hexdigest())
    )
    with pytest.raises(CaseError, match="supplier_id 'harbor', expected 'cedar'"):
        load_case_folder(case_copy)


def test_availability_file_must_cover_exactly_the_suppliers(case_copy: Path) -> None:
    (case_copy / "supplier-availability.json").write_text(json.dumps({"northstar": True}))
    with pytest.raises(CaseError, match="harbor: missing; every supplier of the case needs one"):
        load_case_folder(case_copy)
    (case_copy / "supplier-availability.json").write_text(
        json.dumps({"northstar": "yes", "harbor": True, "cedar": True})
    )
    with pytest.raises(CaseError, match="northstar: must be true or false"):
        load_case_folder(case_copy)


def test_an_oversized_file_is_refused_without_a_byte_read(
    case_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The size comes from the open file's metadata: a 50 GiB proposal costs no read at all."""
    with (case_copy / "proposals" / "harbor.json").open("wb") as file:
        file.truncate(50 * 1024**3)
    reads: list[int] = []
    real_read = case_files.os.read

    def counted(fd: int, size: int) -> bytes:
        data = real_read(fd, size)
        reads.append(len(data))
        return data

    monkeypatch.setattr(case_files.os, "read", counted)
    with pytest.raises(CaseError, match=r"harbor\.json: 53687091200 bytes, more than the 262144"):
        load_case_folder(case_copy)
    # case.json and the other proposals were read (every file is checked); harbor.json not at all.
    others = ("case.json", "proposals/northstar.json", "proposals/cedar.json")
    sizes = [len((case_copy / name).read_bytes()) for name in others]
    assert sum(reads) == sum(sizes)
