"""The JSON Schemas of a case folder's documents, generated from the case contract's models and
committed beside the sample cases (cases/case.schema.json, cases/proposal.schema.json), so an
editor checks a case as it is typed. Each document names its schema in `$schema`.

The models hold rules a schema cannot state (one line of text, no control character, the
proposal path fixed by the id, unique supplier ids, each digest); the run checks those too.

    python -m app.core.case_schema [--check]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Final

from pydantic import BaseModel

from app.core.case import Case, Proposal
from app.core.repo import CASES_DIR

META_SCHEMA: Final = "https://json-schema.org/draft/2020-12/schema"
CASE_SCHEMA_FILE: Final = "case.schema.json"
PROPOSAL_SCHEMA_FILE: Final = "proposal.schema.json"
_DOCUMENTS: Final[dict[str, tuple[type[BaseModel], str]]] = {
    CASE_SCHEMA_FILE: (Case, "case.json: a procurement case and the suppliers it compares"),
    PROPOSAL_SCHEMA_FILE: (Proposal, "proposals/<supplier id>.json: one supplier's proposal"),
}


def rendered() -> dict[str, str]:
    """Each schema file's text, by file name."""
    files = {}
    for name, (model, title) in _DOCUMENTS.items():
        schema = {"$schema": META_SCHEMA, "title": title} | {
            key: value for key, value in model.model_json_schema().items() if key != "title"
        }
        files[name] = json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m app.core.case_schema",
        description="Writes the case folder's JSON Schemas under cases/, or with --check "
        "reports drift.",
    )
    parser.add_argument(
        "--check", action="store_true", help="exit 1, naming each file that differs"
    )
    options = parser.parse_args(argv)
    drifted = []
    for name, text in rendered().items():
        path = Path(CASES_DIR / name)
        if options.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                drifted.append(path)
                print(f"{path}: differs from the case models; run python -m app.core.case_schema")
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    return 1 if drifted else 0


if __name__ == "__main__":
    sys.exit(main())
