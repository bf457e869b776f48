"""The page of a run stopped at a failed check: it leads with that check, its control and what
to do next, from checks.json alone, with every value escaped."""

from __future__ import annotations

from typing import Any

from app.report.failed_page import failed_view, render_failed

HOSTILE = "<script>document.title='owned'</script>"


def _checks() -> dict[str, Any]:
    def record(id_: str, outcome: str, section: str, detail: str = "") -> dict[str, str]:
        return {
            "id": id_,
            "outcome": outcome,
            "claim": f"claim of {id_}",
            "section": section,
            "detail": detail,
        }

    return {
        "schema_version": 3,
        "run_id": "0" * 32,
        "layer": "nono",
        "case_id": "rfp-001",
        "checks": [
            record("process.reader.uid", "PASS", "process"),
            record("attacks.files.control", "PASS", "attacks", "ok"),
            record("attacks.tcp.control", "PASS", "attacks", "ok"),
            record("attacks.files", "FAIL", "attacks", f"reader: ok {HOSTILE}"),
        ],
        "after_written": [],
    }


def test_the_page_leads_with_the_failed_check_its_controls_and_next_steps() -> None:
    view = failed_view(_checks(), "attacks.files")
    assert view.failed.id == "attacks.files"
    assert [c.id for c in view.controls] == ["attacks.files.control", "attacks.tcp.control"]
    page = render_failed(_checks(), "attacks.files").decode()
    verdict = page.index('id="verdict"')
    assert page.index('<code id="failed-check">attacks.files</code>') > verdict
    assert (
        page.index('id="failed-check"') < page.index('id="next-steps"') < page.index('id="checks"')
    )
    assert "python -m app.controller verify" in page
    assert HOSTILE not in page
    assert "&lt;script&gt;" in page
    assert "<script" not in page
