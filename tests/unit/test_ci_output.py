"""JUnit XML and the JSON summary: one testcase per check id, skips as skipped with their reason,
failures with their claim and what was observed, hostile details escaped; and --version."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from xml.etree import ElementTree

import pytest

from app.controller import cli
from app.controller.ci_output import RunSummary, junit_xml, summary_json
from app.core.repo import REPO_ROOT
from app.core.version import VERSION

HOSTILE = "</failure><script>x</script>\x1b[31m\x00"
CHECKS = [
    {
        "id": "files.reader.no-new-file",
        "outcome": "PASS",
        "claim": "c1",
        "section": "files",
        "detail": "EROFS",
    },
    {
        "id": "model.bedrock-usage",
        "outcome": "SKIP",
        "claim": "c2",
        "section": "model",
        "detail": "offline",
    },
    {
        "id": "attacks.files",
        "outcome": "FAIL",
        "claim": "no role can read",
        "section": "attacks",
        "detail": HOSTILE,
    },
]


def test_junit_has_one_testcase_per_check_with_skips_and_failures() -> None:
    summary = RunSummary("nono", "0" * 32, CHECKS, "attacks.files", Path("/runs/x"))
    root = ElementTree.fromstring(junit_xml([summary]))
    (suite,) = root.findall("testsuite")
    assert (suite.get("name"), suite.get("tests"), suite.get("failures"), suite.get("skipped")) == (
        "nono",
        "3",
        "1",
        "1",
    )
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == [c["id"] for c in CHECKS]
    (skipped,) = cases[1].findall("skipped")
    assert skipped.get("message") == "offline"
    (failure,) = cases[2].findall("failure")
    assert failure.get("message") == "no role can read"
    assert failure.text is not None and failure.text.startswith(
        "claim: no role can read\nobserved: "
    )
    assert "<script>" in failure.text  # as text, escaped in the document
    assert "\x00" not in failure.text and "\x1b" not in failure.text
    assert not cases[0].findall("failure") and not cases[0].findall("skipped")


def test_the_json_summary_counts_as_the_checks_say() -> None:
    runs = [
        RunSummary("bubblewrap", "1" * 32, CHECKS[:2], None, Path("/runs/b"), "abc"),
        RunSummary("nono", "2" * 32, CHECKS, "attacks.files", None),
    ]
    document = json.loads(summary_json(runs))
    first, second = document["runs"]
    assert (first["outcome"], first["passed"], first["skipped"], first["failed"]) == (
        "PASS",
        1,
        ["model.bedrock-usage"],
        [],
    )
    assert first["attestation"] == "/runs/b/attestation.intoto.jsonl"
    assert (second["outcome"], second["stopped_at"], second["failed"]) == (
        "FAIL",
        "attacks.files",
        ["attacks.files"],
    )


def test_version_names_the_release_and_the_code(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["--version"])
    assert exited.value.code == 0
    line = capsys.readouterr().out.strip()
    assert re.fullmatch(rf"procurement-analyst {re.escape(VERSION)} \((git|unknown) \S+\)", line), (
        line
    )
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["version"] == VERSION
