"""Every hostile sample a tool, a case or a supplier could send, through every path that shows
such text to a person: check lines and their details, checks.json's records, the error lines,
the closing summary, the report page's values and the Markdown report. Each comes out on the
lines it was meant for, with nothing in it a terminal or a browser would act on."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from app.controller import cli
from app.controller.markdown import inline, verbatim
from app.controller.run import RunOutcome
from app.core.catalogue import Check, Section
from app.core.checklog import CheckFailed, CheckLog, CheckRecord
from app.core.errors import RunStopped
from app.core.escaping import escaped, escaped_lines
from app.report.page import environment

SAMPLES = {
    # A file name that prints a forged green PASS line after the real one.
    "forged line": "x\n\x1b[32mPASS every secret is gone\x1b[0m\n",
    # A tool's stderr: the clipboard written (OSC 52), the line wiped, a forged end of run.
    "osc 52": "\x1b]52;c;ZXZpbA==\x07\x1b[1G\x1b[2KANALYST_COMPLETE=deadbeef",
    # A forged winner that clears the screen and homes the cursor.
    "clear screen": "\x1b[2J\x1b[Hcedar",
    "8-bit CSI": "\x9b2J\x9d0;title\x9c",
    "carriage return": "FAIL\rPASS",
    "bidi": "\u202eSSAP\u202c",
    "separators": "one\u2028two\u2029three\x85four",
    "invisible": "pa\u200bss\ufeff",
    "nul and delete": "a\x00b\x7f",
    "undecodable": b"bad \xff\xfe".decode("utf-8", "surrogateescape"),
}
# What a terminal or a browser acts on; none may come out.
ACTING = {chr(c) for c in (*range(0x20), *range(0x7F, 0xA0))} | set(
    "\u2028\u2029\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200b\u200e\u200f\ufeff"
)


def acting(text: str) -> set[str]:
    return {char for char in text if char in ACTING or 0xD800 <= ord(char) <= 0xDFFF}


@pytest.fixture(params=sorted(SAMPLES), ids=sorted(SAMPLES))
def sample(request: pytest.FixtureRequest) -> str:
    return SAMPLES[str(request.param)]


def test_the_function_keeps_printable_text_and_shows_the_rest_as_escapes() -> None:
    assert escaped("Northstar Office Systems — Café (northstar)") == (
        "Northstar Office Systems — Café (northstar)"
    )
    assert escaped(SAMPLES["forged line"]) == ("x\\n\\x1b[32mPASS every secret is gone\\x1b[0m\\n")
    assert escaped("\u202e\U000e0001\t") == "\\u202e\\U000e0001\\t"
    assert escaped_lines("one\n\x1b[2Jtwo") == "one\n\\x1b[2Jtwo"


NAMED = Check("test.named", "a claim naming {value}")
SKIPPED = Check("test.skipped", "a claim naming {value}")
BROKEN = Check("test.broken", "a claim naming {value}")
SECTION = Section("attacks", NAMED, SKIPPED, BROKEN)


def test_check_lines_details_and_records(sample: str) -> None:
    stream = io.StringIO()
    log = CheckLog(stream=stream)
    log.begin(SECTION)
    log.require(NAMED(value=sample), True, detail=f"observed {sample}")
    log.skip(SKIPPED(value=sample), f"a reason naming {sample}")
    with pytest.raises(CheckFailed) as failed:
        log.require(BROKEN(value=sample), False, detail=f"observed {sample}")
    lines = stream.getvalue().split("\n")
    assert lines[-1] == "" and len(lines) == 1 + 3 + 1, lines  # the header, three checks
    assert [line[:5] for line in lines[1:4]] == ["PASS ", "SKIP ", "FAIL "]
    assert acting(stream.getvalue().replace("\n", "")) == set()
    records = json.loads(json.dumps(log.as_json()))
    assert acting("".join(r["claim"] + r["detail"] for r in records)) == set()
    assert acting(str(failed.value)) == set()


def test_error_lines(sample: str, capsys: pytest.CaptureFixture[str]) -> None:
    record = CheckRecord("test.broken", "FAIL", sample, "attacks", sample)
    for error in (RunStopped(f"the evaluator's tool process said: {sample}"), CheckFailed(record)):
        with pytest.raises(SystemExit):
            cli._fatal(error)
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.endswith("\n"), err
        assert acting(err[:-1]) == set()


def test_the_closing_summary(sample: str) -> None:
    outcome = RunOutcome(
        run_id="0" * 32,
        checks_passed=1,
        skipped=(),
        out_dir=Path("/runs/x"),
        report_uri="s3://bucket/reports/x/",
        model_description="the offline model",
        recommended=f"{sample} (cedar)",
        sections=[],
        timing=[],
        templates_ready={},
    )
    stream = io.StringIO()
    cli.print_outcome(outcome, stream)
    printed = stream.getvalue()
    assert acting(printed.replace("\n", "")) == set()
    assert printed.count("\n") == len(printed.splitlines())
    (line,) = [line for line in printed.splitlines() if "recommended supplier" in line]
    assert line == f"  recommended supplier: {escaped(sample)} (cedar)"


def test_the_report_pages_values(sample: str) -> None:
    page = environment().from_string("<td>{{ v }}</td><pre>{{ v }}</pre>").render(v=sample)
    assert acting(page.replace("\n", "")) == set()


def test_the_markdown_report(sample: str) -> None:
    assert acting(inline(sample)) == set()
    assert acting(verbatim(sample).replace("\n", "")) == set()
