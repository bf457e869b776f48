"""evidence.json and checks.json against their committed JSON Schemas (app/controller/schemas/)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema

from app.core.repo import REPO_ROOT

SCHEMAS = REPO_ROOT / "app" / "controller" / "schemas"
VALIDATED = ("evidence.json", "checks.json")


def validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((SCHEMAS / f"{name.removesuffix('.json')}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def problems(name: str, document: Any) -> list[str]:
    """Each place the document breaks its schema, as ``where: what``."""
    return [
        f"{'/'.join(str(p) for p in error.absolute_path) or '(top)'}: {error.message[:300]}"
        for error in validator(name).iter_errors(document)
    ]


def validate_tree(base: Path) -> int:
    """Validates every evidence.json and checks.json under base; returns how many it read.
    Raises AssertionError naming the file and the place that breaks its schema."""
    seen = 0
    for name in VALIDATED:
        for path in sorted(base.rglob(name)):
            if not path.is_file() or path.is_symlink():
                continue
            found = problems(name, json.loads(path.read_text(encoding="utf-8")))
            assert not found, f"{path} breaks {name}'s schema: {found[:5]}"
            seen += 1
    return seen
