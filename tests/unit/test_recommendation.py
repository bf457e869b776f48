"""The report's headline comes from the checked field, never from the prose, and no case or
model text renders as Markdown."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.controller.gates import Recommendation
from app.controller.recommendation import render_recommendation
from app.core.case import load_case_folder

SAMPLE = Path(__file__).resolve().parents[2] / "cases" / "rfp-001"


def test_headline_is_rendered_from_the_checked_id_not_the_prose() -> None:
    case = load_case_folder(SAMPLE).case
    answer = Recommendation(recommended_supplier="northstar", analysis="Cedar is great.")
    text = render_recommendation(case, "northstar", answer).decode()
    assert "**Recommended supplier:** Northstar Office Systems (`northstar`)" in text
    assert text.endswith("```text\nCedar is great.\n```\n")


FORGED = "\n\n**Recommended supplier:** Harbor Freight (`harbor`)\n\n"
HOSTILE_TEXT = [
    FORGED,
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "[click](javascript:alert(1))",
    "![x](javascript:alert(1))",
    "<javascript:alert(1)>",
    "&lt;b&gt; &#x3C;",
    "\x1b[2J\x1b[31mred",
    "\u202eevil\u202c",
    "# heading",
    "| a | b |",
    "\u2028**Recommended supplier:** Harbor",
]


def _rendered_lines(markdown: str) -> list[str]:
    return markdown.splitlines()


@pytest.mark.parametrize("hostile", HOSTILE_TEXT)
def test_case_text_cannot_forge_anything_in_the_headline(hostile: str) -> None:
    """A name and a title that try to forge a headline or carry HTML, links or terminal
    escapes come out as literal text: no Markdown, HTML or control character of theirs."""
    case = load_case_folder(SAMPLE).case
    forged_name = case.suppliers[0].model_copy(update={"name": f"Northstar{hostile}"})
    forged = case.model_copy(
        update={"title": f"Office{hostile}", "suppliers": (forged_name, *case.suppliers[1:])}
    )
    answer = Recommendation(recommended_supplier="northstar", analysis="fine")
    text = render_recommendation(forged, "northstar", answer).decode()
    lines = _rendered_lines(text)
    headlines = [line for line in lines if line.startswith("**Recommended supplier:**")]
    assert len(headlines) == 1, text
    (case_line,) = [line for line in lines if line.startswith("**Case:**")]
    for line in (headlines[0], case_line):
        body = line.split(":**", 1)[1]
        # Every Markdown-active character of the case text is escaped, none left bare.
        assert not re.search(r"(?<!\\)[<>\[\]()*_`&#|!]", body.replace("(`northstar`)", ""))
        assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in line)
        assert "\u202e" not in line and "\u2028" not in line
    assert text.count("**Recommended supplier:**") == 1


@pytest.mark.parametrize("hostile", HOSTILE_TEXT)
def test_the_models_prose_is_shown_verbatim_never_as_markdown(hostile: str) -> None:
    """The analysis (which may repeat any case text) is a fenced block: whatever it holds, a
    forged closing fence included, nothing in it renders as a headline, HTML or a link."""
    case = load_case_folder(SAMPLE).case
    analysis = f"Intro\n```\n{hostile}\n````\nend"
    answer = Recommendation(recommended_supplier="northstar", analysis=analysis)
    text = render_recommendation(case, "northstar", answer).decode()
    head, _, block = text.partition("## The model's analysis\n")
    assert head.count("**Recommended supplier:**") == 1
    fence = re.search(r"^(`{3,})text$", block, re.MULTILINE)
    assert fence is not None
    opening = fence.group(1)
    inside = block[fence.end() :].split("\n" + opening + "\n")[0]
    # The block closes only where the renderer put its own fence: no line inside can close it.
    assert not any(line.startswith(opening) for line in inside.splitlines())
    assert block.rstrip("\n").endswith(opening)
    assert not any(ord(c) < 0x20 and c != "\n" for c in text)
    assert "\u202e" not in text
