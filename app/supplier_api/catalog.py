"""The cases the server is seeded with, and the availability it serves for each."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from app.core.ids import AVAILABILITY_FILE, ID_PATTERN, is_valid_id

# The controller refuses a case document over 256 KiB; the server's own bound is the same.
MAX_FILE_BYTES = 256 * 1024


class CatalogError(ValueError):
    """A seeded case folder cannot be served; the message names the folder and the fix."""


@dataclass(frozen=True)
class SeededCase:
    case_id: str
    supplier_ids: tuple[str, ...]
    availability: dict[str, bool]


def _read_json(path: Path) -> object:
    hint = "pass a case folder as --case-dir"
    try:
        with path.open("rb") as file:
            # The size is decided before a byte is read: a huge file is refused, not loaded.
            size = os.fstat(file.fileno()).st_size
            data = file.read(MAX_FILE_BYTES + 1) if size <= MAX_FILE_BYTES else b""
    except OSError as exc:
        raise CatalogError(f"cannot read {path}: {exc}; {hint}") from exc
    if size > MAX_FILE_BYTES or len(data) > MAX_FILE_BYTES:
        raise CatalogError(f"{path} is over {MAX_FILE_BYTES} bytes; {hint}")
    try:
        return json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise CatalogError(f"cannot read {path}: {exc}; {hint}") from exc


def load_case(case_dir: Path, served_as: str | None = None) -> SeededCase:
    """Reads one case folder, served under its own case_id or ``served_as``; availability
    defaults to every supplier of the case."""
    doc = _read_json(case_dir / "case.json")
    if not isinstance(doc, dict):
        raise CatalogError(f"{case_dir}/case.json must hold a JSON object")
    case_id = doc.get("case_id")
    if not is_valid_id(case_id):
        raise CatalogError(f"{case_dir}/case.json: case_id must match {ID_PATTERN.pattern}")
    if served_as is not None:
        if not is_valid_id(served_as):
            raise CatalogError(f"--case-dir-as {served_as}: an id must match {ID_PATTERN.pattern}")
        case_id = served_as
    suppliers = doc.get("suppliers")
    if not isinstance(suppliers, list) or not suppliers:
        raise CatalogError(f"{case_dir}/case.json: suppliers must be a non-empty list")
    ids = tuple(s.get("id") if isinstance(s, dict) else None for s in suppliers)
    if not all(is_valid_id(i) for i in ids) or len(set(ids)) != len(ids):
        raise CatalogError(
            f"{case_dir}/case.json: every supplier id must be unique and match {ID_PATTERN.pattern}"
        )
    availability = {i: True for i in ids}
    override = case_dir / AVAILABILITY_FILE
    if override.exists():
        served = _read_json(override)
        if not isinstance(served, dict) or not all(
            is_valid_id(k) and isinstance(v, bool) for k, v in served.items()
        ):
            raise CatalogError(
                f'{override} must map supplier ids to true or false, e.g. {{"{ids[0]}": true}}'
            )
        availability = dict(served)
    return SeededCase(case_id, ids, availability)  # type: ignore[arg-type]


def load_catalog(case_dirs: list[tuple[Path, str | None]]) -> dict[str, SeededCase]:
    """All seeded cases by id, each folder with the id it is served under (None: its own);
    the same id seeded twice is refused rather than shadowed."""
    catalog: dict[str, SeededCase] = {}
    for case_dir, served_as in case_dirs:
        case = load_case(case_dir, served_as)
        if case.case_id in catalog:
            raise CatalogError(f"case {case.case_id} is seeded twice; pass each --case-dir once")
        catalog[case.case_id] = case
    return catalog
