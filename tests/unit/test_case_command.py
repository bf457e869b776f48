"""`case new` and `case check`: a new case is valid, a check finds every problem file by file
and field by field and refuses exactly what a run refuses, and --write-digests records each
proposal's digest without following a link."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.controller import cli
from app.core import cluster_env
from app.core.case_schema import CASE_SCHEMA_FILE, PROPOSAL_SCHEMA_FILE
from app.core.repo import CASES_DIR, SAMPLE_CASE
from tests.support.docs import DOCS_DIR, code_blocks
from tests.support.input_folder import ESC, Folder, Row, row_folder, set_tripwires
from tests.support.input_rows_case import CASE_ROWS
from tests.support.own_case import CASE_NAME, DELTA, edit_as_the_readme_says


def _main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as ended:
        raise SystemExit(cli.main(list(argv)))
    captured = capsys.readouterr()
    code = ended.value.code
    assert isinstance(code, int)
    return code, captured.out, captured.err


def _json(path: Path) -> dict:
    loaded: dict = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def test_case_new_writes_a_valid_case_with_three_suppliers_to_edit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "my-case"
    code, out, _ = _main(capsys, "case", "new", str(folder))
    assert code == 0
    assert f"case check {folder} --write-digests" in out
    case = _json(folder / "case.json")
    assert case["case_id"] == "my-case"
    assert [entry["id"] for entry in case["suppliers"]] == ["aster", "birch", "cobalt"]
    assert all("proposal" not in entry for entry in case["suppliers"]), "the path is derived"
    for entry in case["suppliers"]:
        data = (folder / "proposals" / f"{entry['id']}.json").read_bytes()
        assert entry["sha256"] == hashlib.sha256(data).hexdigest()
    assert (folder / case["$schema"]).resolve() == CASES_DIR / CASE_SCHEMA_FILE
    proposal = _json(folder / "proposals" / "aster.json")
    assert (
        folder / "proposals" / proposal["$schema"]
    ).resolve() == CASES_DIR / PROPOSAL_SCHEMA_FILE
    code, out, _ = _main(capsys, "case", "check", str(folder))
    assert code == 0, out
    assert "its comparison picks aster" in out
    assert "birch: loses: its delivery in 30 days is later than the 21 allowed" in out
    assert "cobalt: loses: its warranty of 12 months is shorter than the 24 required" in out


@pytest.mark.parametrize(
    ("name", "prepare", "fragment"),
    [
        ("My Case", lambda p: None, "the folder's name is the case id"),
        ("full", lambda p: (p.mkdir(), (p / "x").write_text("")), "is not empty"),
        ("a-file", lambda p: p.write_text(""), "exists and is not a folder"),
        ("linked", lambda p: p.symlink_to(p.parent), "exists and is not a folder"),
    ],
)
def test_case_new_refuses_a_bad_name_or_a_used_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, prepare, fragment: str
) -> None:
    target = tmp_path / name
    prepare(target)
    before = sorted(tmp_path.rglob("*"))
    code, out, err = _main(capsys, "case", "new", str(target))
    assert code == 2
    assert fragment in err and err.startswith("error (bad input): ")
    assert sorted(tmp_path.rglob("*")) == before
    assert not out


def test_case_new_takes_an_existing_empty_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "empty").mkdir()
    assert _main(capsys, "case", "new", str(tmp_path / "empty"))[0] == 0
    assert (tmp_path / "empty" / "case.json").is_file()


@pytest.fixture
def own_case(tmp_path: Path) -> Path:
    folder = tmp_path / "case"
    shutil.copytree(SAMPLE_CASE, folder)
    return folder


def _edit(path: Path, **changes: object) -> None:
    document = _json(path)
    document.update(changes)
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")


def test_case_check_prints_every_problem_file_by_file_and_field_by_field(
    own_case: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    case = _json(own_case / "case.json")
    case["title"] = ""
    case["suppliers"][1]["sha256"] = "0" * 64
    case["suppliers"].append({"id": "delta", "name": "Delta"})
    (own_case / "case.json").write_text(json.dumps(case), encoding="utf-8")
    _edit(own_case / "proposals" / "cedar.json", price_usd=-1, colour="blue")
    code, out, err = _main(capsys, "case", "check", str(own_case))
    assert code == 2
    lines = out.splitlines()
    at = str(own_case)
    assert lines[0] == f"{at}/case.json: title: String should have at least 1 character"
    assert lines[1] == f"{at}/case.json: suppliers.3.sha256: Field required"
    assert lines[2].startswith(f"{at}/proposals/harbor.json: sha256 ")
    assert "does not match the case entry for harbor" in lines[2]
    assert lines[3].startswith(f"{at}/proposals/cedar.json: sha256 ")
    assert lines[4] == f"{at}/proposals/cedar.json: price_usd: Input should be greater than 0"
    assert lines[5] == f"{at}/proposals/cedar.json: colour: Extra inputs are not permitted"
    assert lines[6] == f"{at}/proposals/delta.json: missing"
    assert len(lines) == 7
    assert (
        err == f"error (bad input): {at}: 7 problems; a run would stop at the first, before "
        "anything is created\n"
    )


def test_write_digests_sets_a_missing_one_and_changes_an_outdated_one(
    own_case: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    case_file = own_case / "case.json"
    case = _json(case_file)
    old = case["suppliers"][2]["sha256"]
    del case["suppliers"][0]["sha256"]
    case_file.write_text(json.dumps(case, indent=2), encoding="utf-8")
    _edit(own_case / "proposals" / "cedar.json", price_usd=99000)
    cedar = hashlib.sha256((own_case / "proposals" / "cedar.json").read_bytes()).hexdigest()
    northstar = hashlib.sha256((own_case / "proposals" / "northstar.json").read_bytes()).hexdigest()
    code, out, err = _main(capsys, "case", "check", str(own_case), "--write-digests")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == (
        f"{case_file}: suppliers.0.sha256: set to the digest of proposals/northstar.json, "
        f"{northstar}"
    )
    assert lines[1] == (
        f"{case_file}: suppliers.2.sha256: changed from {old} to the digest of "
        f"proposals/cedar.json, {cedar}"
    )
    assert lines[2] == f"{own_case}: a valid case: rfp-001, suppliers northstar, harbor, cedar"
    assert "its comparison picks cedar" in out, "cedar now costs least of the eligible"
    written = _json(case_file)
    assert [entry["sha256"] for entry in written["suppliers"]][::2] == [northstar, cedar]
    assert written["$schema"] == case["$schema"], "the rest of case.json is kept"
    assert not list(own_case.glob(".case.json.*")), "no temporary file is left"
    before = case_file.read_bytes()
    code, out, _ = _main(capsys, "case", "check", str(own_case), "--write-digests")
    assert code == 0
    assert (
        out.splitlines()[0] == f"{case_file}: every sha256 already matches its proposal; unchanged"
    )
    assert case_file.read_bytes() == before


def test_write_digests_changes_nothing_in_a_case_json_that_is_not_json(
    own_case: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (own_case / "case.json").write_text('{"case_id": ', encoding="utf-8")
    code, out, err = _main(capsys, "case", "check", str(own_case), "--write-digests")
    assert code == 2
    assert "case.json: invalid JSON" in err
    assert (own_case / "case.json").read_text(encoding="utf-8") == '{"case_id": '
    assert not out


def test_write_digests_never_digests_a_linked_proposal_or_writes_through_a_linked_case(
    own_case: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = tmp_path / "secret"
    secret.write_text("not for the case\n", encoding="utf-8")
    proposal = own_case / "proposals" / "cedar.json"
    proposal.unlink()
    proposal.symlink_to(secret)
    code, out, _ = _main(capsys, "case", "check", str(own_case), "--write-digests")
    assert code == 2
    assert (
        hashlib.sha256(secret.read_bytes()).hexdigest() not in (own_case / "case.json").read_text()
    )
    assert "cedar.json: is a symbolic link" in out
    elsewhere = tmp_path / "elsewhere.json"
    shutil.copy(own_case / "case.json", elsewhere)
    (own_case / "case.json").unlink()
    (own_case / "case.json").symlink_to(elsewhere)
    before = elsewhere.read_bytes()
    code, _, err = _main(capsys, "case", "check", str(own_case), "--write-digests")
    assert code == 2 and "case.json: is a symbolic link" in err
    assert elsewhere.read_bytes() == before


@pytest.mark.parametrize(
    ("proposal", "valid"),
    [("proposals/harbor.json", True), ("proposals/cedar.json", False), (None, True)],
)
def test_a_case_may_still_name_the_proposal_path_but_only_the_derived_one(
    own_case: Path, capsys: pytest.CaptureFixture[str], proposal: str | None, valid: bool
) -> None:
    case = _json(own_case / "case.json")
    case["suppliers"][1]["proposal"] = proposal
    (own_case / "case.json").write_text(json.dumps(case), encoding="utf-8")
    code, out, _ = _main(capsys, "case", "check", str(own_case))
    assert code == (0 if valid else 2), out
    if not valid:
        assert "suppliers.1: Value error, proposal must be 'proposals/harbor.json'" in out


# --- the same refusals as a run's ----------------------------------------------------------


@pytest.fixture
def folder() -> Iterator[Folder]:
    with row_folder("analyst-case-check-") as made:
        yield made


@pytest.fixture
def tripwires(monkeypatch: pytest.MonkeyPatch) -> None:
    set_tripwires(monkeypatch)
    for name in [*cluster_env.__dict__.values()]:
        if isinstance(name, str) and name.startswith("ANALYST_"):
            monkeypatch.delenv(name, raising=False)


@pytest.mark.usefixtures("tripwires")
@pytest.mark.parametrize("row", CASE_ROWS, ids=[row.name for row in CASE_ROWS])
def test_case_check_refuses_each_hostile_case_with_the_runs_own_first_error(
    row: Row, folder: Folder, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = row.build(folder)
    code, _, run_error = _main(capsys, *argv)
    assert code == 2
    code, out, err = _main(capsys, "case", "check", str(folder.case))
    assert code == 2
    refused = run_error.removeprefix("error (bad input): ").rstrip("\n")
    problems = out.splitlines() or [err.removeprefix("error (bad input): ").rstrip("\n")]
    assert problems[0] == refused
    assert ESC not in out + err and "\u202e" not in out + err


def test_case_check_accepts_what_a_run_accepts(capsys: pytest.CaptureFixture[str]) -> None:
    for case in sorted(CASES_DIR.iterdir()):
        if case.is_dir():
            code, out, _ = _main(capsys, "case", "check", str(case))
            assert code == 0, out


# --- what docs/cases.md shows ---------------------------------------------------------------


def _samples() -> list[list[str]]:
    """The output samples of docs/cases.md, each a list of lines where … stands for anything."""
    blocks = code_blocks((DOCS_DIR / "cases.md").read_text(encoding="utf-8"))
    return [lines for language, lines in blocks if not language and lines[0].startswith("…/")]


def _matches(sample: list[str], printed: list[str]) -> bool:
    patterns = [re.escape(line).replace("…", ".*") for line in sample]
    return len(patterns) == len(printed) and all(
        re.fullmatch(pattern, line) for pattern, line in zip(patterns, printed, strict=True)
    )


def test_the_docs_show_what_case_check_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    valid, invalid = _samples()
    folder = tmp_path / CASE_NAME
    assert _main(capsys, "case", "new", str(folder))[0] == 0
    edit_as_the_readme_says(folder)
    code, out, _ = _main(capsys, "case", "check", str(folder), "--write-digests")
    assert code == 0
    assert _matches(valid, out.splitlines()), out
    fresh = tmp_path / "fresh" / CASE_NAME
    fresh.parent.mkdir()
    assert _main(capsys, "case", "new", str(fresh))[0] == 0
    _edit(fresh / "case.json", title="")
    case = _json(fresh / "case.json")
    case["suppliers"].append(dict(DELTA))
    (fresh / "case.json").write_text(json.dumps(case), encoding="utf-8")
    _edit(fresh / "proposals" / "aster.json", price_usd=0)
    code, out, err = _main(capsys, "case", "check", str(fresh), "--write-digests")
    assert code == 2
    assert _matches(invalid, [*out.splitlines(), err.rstrip("\n")]), out + err
