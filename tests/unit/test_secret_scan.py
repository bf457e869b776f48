"""The key scans refuse a leak: a document holding a secret is not written, and the directory
scan names every file it read and every secret it found."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.controller.secret_scan import KeyLeak, ScanIncomplete, scan_directory, write_scanned

KEY = b"s3cr3t-supplier-key"
PLACEHOLDER = b"nono-placeholder-0001"
SECRETS = {"the supplier key": KEY, "the reader's placeholder": PLACEHOLDER}


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


def test_an_entry_the_scan_cannot_read_fails_it_by_name(tmp_path: Path) -> None:
    """Anything but a regular file read whole is named, never followed (more in
    test_tree_scan.py)."""
    (tmp_path / "dangling").symlink_to(tmp_path / "missing")
    with pytest.raises(ScanIncomplete, match="dangling: a symbolic link"):
        scan_directory(tmp_path, SECRETS)
