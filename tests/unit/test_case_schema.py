"""The committed JSON Schemas are the case models' own, every shipped case names and meets them,
and they refuse what the models refuse where a schema can say it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from app.core.case_schema import CASE_SCHEMA_FILE, PROPOSAL_SCHEMA_FILE, main, rendered
from app.core.repo import CASES_DIR

SHIPPED_CASES = sorted(path for path in CASES_DIR.iterdir() if path.is_dir())


def _validator(name: str) -> Draft202012Validator:
    schema = json.loads((CASES_DIR / name).read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def test_the_committed_schemas_are_generated_from_the_models() -> None:
    for name, text in rendered().items():
        assert (CASES_DIR / name).read_text(encoding="utf-8") == text, (
            f"cases/{name} differs from the case models: run python -m app.core.case_schema"
        )
    assert main(["--check"]) == 0


def test_the_drift_check_names_a_file_that_differs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("app.core.case_schema.CASES_DIR", tmp_path)
    assert main([]) == 0
    (tmp_path / CASE_SCHEMA_FILE).write_text("{}\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["--check"]) == 1
    assert f"{tmp_path / CASE_SCHEMA_FILE}: differs from the case models" in capsys.readouterr().out


@pytest.mark.parametrize("case", SHIPPED_CASES, ids=[path.name for path in SHIPPED_CASES])
def test_each_shipped_case_names_its_schema_and_meets_it(case: Path) -> None:
    document = json.loads((case / "case.json").read_text(encoding="utf-8"))
    assert (case / document["$schema"]).resolve() == CASES_DIR / CASE_SCHEMA_FILE
    assert not list(_validator(CASE_SCHEMA_FILE).iter_errors(document))
    for proposal in sorted((case / "proposals").glob("*.json")):
        text = json.loads(proposal.read_text(encoding="utf-8"))
        assert (proposal.parent / text["$schema"]).resolve() == CASES_DIR / PROPOSAL_SCHEMA_FILE
        assert not list(_validator(PROPOSAL_SCHEMA_FILE).iter_errors(text))


@pytest.mark.parametrize(
    ("edit", "where"),
    [
        (lambda d: d.update(case_id="RFP 1"), "case_id"),
        (lambda d: d.update(colour="blue"), ""),
        (lambda d: d["requirements"].update(max_price_usd=0), "requirements.max_price_usd"),
        (lambda d: d["requirements"].update(max_price_usd=1.5), "requirements.max_price_usd"),
        (lambda d: d["suppliers"][0].pop("sha256"), "suppliers.0"),
        (lambda d: d["suppliers"][0].update(sha256="ABC"), "suppliers.0.sha256"),
        (lambda d: d.update(suppliers=[]), "suppliers"),
    ],
)
def test_the_case_schema_refuses_what_the_model_refuses(edit, where: str) -> None:
    document = json.loads((SHIPPED_CASES[0] / "case.json").read_text(encoding="utf-8"))
    edit(document)
    errors = list(_validator(CASE_SCHEMA_FILE).iter_errors(document))
    assert [".".join(str(step) for step in error.absolute_path) for error in errors] == [where]
