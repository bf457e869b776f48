"""The report's headline comes from the checked field, and the key scans refuse a leak."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.controller.gates import Recommendation
from app.controller.report import KeyLeak, render_recommendation, scan_directory, write_scanned
from app.core.case import load_case_folder

SAMPLE = Path(__file__).resolve().parents[2] / "cases" / "rfp-001"
KEY = b"s3cr3t-supplier-key"
PLACEHOLDER = b"nono-placeholder-0001"
SECRETS = {"the supplier key": KEY, "the reader's placeholder": PLACEHOLDER}


def test_headline_is_rendered_from_the_checked_id_not_the_prose() -> None:
    case = load_case_folder(SAMPLE).case
    answer = Recommendation(recommended_supplier="northstar", analysis="Cedar is great.")
    text = render_recommendation(case, "northstar", answer).decode()
    assert "**Recommended supplier:** Northstar Office Systems (`northstar`)" in text
    assert text.endswith("Cedar is great.\n")


def test_a_document_holding_the_key_is_not_written(tmp_path: Path) -> None:
    with pytest.raises(KeyLeak, match=r"the supplier key in b\.json"):
        write_scanned(tmp_path, {"a.json": b"fine", "b.json": b"x" + KEY + b"y"}, SECRETS)
    assert list(tmp_path.iterdir()) == []


def test_directory_scan_names_every_file_it_read(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.txt").write_bytes(b"a")
    (tmp_path / "sub" / "b.bin").write_bytes(bytes(range(256)))
    assert scan_directory(tmp_path, SECRETS) == ["a.txt", "sub/b.bin"]
    (tmp_path / "sub" / "c").write_bytes(KEY)
    with pytest.raises(KeyLeak, match="the supplier key in sub/c"):
        scan_directory(tmp_path, SECRETS)


def test_directory_scan_finds_every_named_secret(tmp_path: Path) -> None:
    (tmp_path / "calls.json").write_bytes(b'{"x": "' + PLACEHOLDER + b'"}')
    with pytest.raises(KeyLeak, match=r"the reader.s placeholder in calls\.json"):
        scan_directory(tmp_path, SECRETS)


def test_an_empty_secret_is_refused_rather_than_matching_everything(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="nothing to scan for"):
        scan_directory(tmp_path, {"the supplier key": b""})


def test_unreadable_file_fails_the_scan(tmp_path: Path) -> None:
    (tmp_path / "dangling").symlink_to(tmp_path / "missing")
    with pytest.raises(FileNotFoundError):
        scan_directory(tmp_path, SECRETS)
