"""The hostile-input table's rows work on a folder of their own (tests/unit/test_input_table.py):
a copy of the sample case, a work directory and a report path, and the edits rows make to them."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from app.controller.cleanup_process import CleanupProcess
from app.controller.environment import ClusterMode, LocalMode
from app.core.repo import SAMPLE_CASE

GIB = 1024**3
ESC = "\x1b"


@dataclass
class Folder:
    """One row's own folder: a copy of the sample case, a work directory and a report path."""

    base: Path
    case: Path
    work: Path
    out: Path
    layer: str = "bubblewrap"
    env: dict[str, str] = field(default_factory=dict)
    # Paths outside ``base`` a row names; none of them may exist after the row.
    outside: list[Path] = field(default_factory=list)

    def argv(
        self,
        *extra: str,
        command: str = "run",
        workdir: Path | str | None = None,
        out: Path | str | None = None,
        layer: str | None = None,
    ) -> list[str]:
        base = [command, "--case", str(self.case), "--workdir", str(workdir or self.work)]
        if command == "run":
            base += ["--layer", layer or self.layer, "--out", str(out or self.out)]
        return [*base, *extra]

    def case_doc(self) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads((self.case / "case.json").read_text())
        return doc

    def write_case(self, doc: Any) -> None:
        (self.case / "case.json").write_text(json.dumps(doc))

    def edit_case(self, edit: Callable[[dict[str, Any]], None]) -> None:
        doc = self.case_doc()
        edit(doc)
        self.write_case(doc)

    def write_proposal(self, supplier_id: str, data: bytes) -> None:
        """Replaces a proposal and records its new digest, so the digest check passes."""
        (self.case / "proposals" / f"{supplier_id}.json").write_bytes(data)
        digest = hashlib.sha256(data).hexdigest()
        self.edit_case(lambda d: supplier_entry(d, supplier_id).update(sha256=digest))

    def edit_proposal(self, supplier_id: str, edit: Callable[[dict[str, Any]], None]) -> None:
        path = self.case / "proposals" / f"{supplier_id}.json"
        doc = json.loads(path.read_text())
        edit(doc)
        self.write_proposal(supplier_id, json.dumps(doc).encode())

    def write_availability(self, data: bytes | str) -> None:
        path = self.case / "supplier-availability.json"
        path.write_bytes(data if isinstance(data, bytes) else data.encode())


def supplier_entry(doc: dict[str, Any], supplier_id: str) -> dict[str, Any]:
    entry: dict[str, Any] = next(s for s in doc["suppliers"] if s["id"] == supplier_id)
    return entry


def sparse_file(path: Path, size: int) -> None:
    with path.open("wb") as file:
        file.truncate(size)


@dataclass(frozen=True)
class Row:
    name: str
    build: Callable[[Folder], list[str]]
    fragment: str
    code: int = 2


def case_row(name: str, edit: Callable[[Folder], object], fragment: str) -> Row:
    """A row whose only change is to the case folder."""

    def build(f: Folder) -> list[str]:
        edit(f)
        return f.argv()

    return Row(name, build, fragment)


def symlink(link: Path, target: Path | str) -> None:
    link.unlink(missing_ok=True)
    link.symlink_to(target)


def replace_with_dir(path: Path) -> None:
    path.unlink()
    path.mkdir()


def replace_with_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def nested_json(depth: int) -> str:
    return "[" * depth + "]" * depth


def long_int(digits: int) -> str:
    return "9" * digits


def case_text(f: Folder, raw: str) -> None:
    (f.case / "case.json").write_text(raw)


def sample_case_text(f: Folder, old: str, new: str) -> None:
    text = (f.case / "case.json").read_text()
    assert old in text
    (f.case / "case.json").write_text(text.replace(old, new, 1))


def proposal_text(f: Folder, supplier_id: str, old: str, new: str) -> None:
    path = f.case / "proposals" / f"{supplier_id}.json"
    text = path.read_text()
    assert old in text
    f.write_proposal(supplier_id, text.replace(old, new, 1).encode())


def claimed_by_a_live_run(f: Folder) -> list[str]:
    """Another run holds --out: its staging folder beside it is locked by a live process."""
    f.out.parent.mkdir(parents=True, exist_ok=True)
    staging = f.out.parent / f".{f.out.name}.partial-{'a' * 32}"
    staging.mkdir()
    fd = os.open(staging, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    HELD_FDS.append(fd)
    return f.argv()


HELD_FDS: list[int] = []


def outside_path(f: Folder, path: Path) -> Path:
    f.outside.append(path)
    return path


@contextmanager
def row_folder(prefix: str) -> Iterator[Folder]:
    """A row's own folder under /var/tmp, with a copy of the sample case; removed after the
    row with everything it named outside it, and any descriptor it left held closed."""
    base = Path(tempfile.mkdtemp(prefix=prefix, dir="/var/tmp"))
    case = base / "case"
    shutil.copytree(SAMPLE_CASE, case)
    made = Folder(base=base, case=case, work=base / "work", out=base / "out")
    try:
        yield made
    finally:
        while HELD_FDS:
            os.close(HELD_FDS.pop())
        for path in made.outside:
            if path.is_symlink() or path.is_file():
                path.unlink()
            elif path.exists():
                shutil.rmtree(path)
        shutil.rmtree(base, ignore_errors=True)


def set_tripwires(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing may start: no service, local or cluster, and no clean-up process."""

    def started(*args: object, **kwargs: object) -> None:
        raise AssertionError("a row got as far as starting something")

    monkeypatch.setattr(LocalMode, "start", started)
    monkeypatch.setattr(ClusterMode, "start", started)
    monkeypatch.setattr(CleanupProcess, "__enter__", started)
