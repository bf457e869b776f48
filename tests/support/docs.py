"""The README and the pages under docs/, read as the tests that hold them to the code need them:
each page's text, its headings as GitHub anchors them, one heading's own section, its links."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from app.core.repo import REPO_ROOT

README = REPO_ROOT / "README.md"
DOCS_DIR = REPO_ROOT / "docs"
_FENCE = re.compile(r"^```.*?^```[ \t]*$", flags=re.MULTILINE | re.DOTALL)
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$", flags=re.MULTILINE)
_LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_HTML_SOURCE = re.compile(r"<(?:img|a)\b[^>]*?\b(?:src|href)=\"([^\"]+)\"", flags=re.IGNORECASE)
_INLINE_CODE = re.compile(r"`[^`\n]*`")


def pages() -> list[Path]:
    """The README first, then every page under docs/, in name order."""
    return [README, *sorted(DOCS_DIR.rglob("*.md"))]


def text(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def all_text() -> str:
    return "\n".join(text(page) for page in pages())


def prose(page_text: str) -> str:
    """The page without its fenced code blocks, where a heading or a link is only text."""
    return _FENCE.sub("", page_text)


def code_blocks(page_text: str) -> list[tuple[str, list[str]]]:
    """Every fenced block of a page in order: its language (may be empty) and its lines."""
    blocks: list[tuple[str, list[str]]] = []
    language: str | None = None
    for line in page_text.splitlines():
        if line.startswith("```"):
            if language is None:
                language = line[3:].strip()
                blocks.append((language, []))
            else:
                language = None
        elif language is not None:
            blocks[-1][1].append(line)
    return blocks


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    plain = re.sub(r"[^\w\- ]", "", heading.replace("`", "").lower())
    return plain.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading's anchor on a page; a repeated heading gets -1, -2, … as on GitHub."""
    seen: Counter[str] = Counter()
    found = set()
    for match in _HEADING.finditer(prose(text(page))):
        base = slug(match.group(2))
        found.add(base if not seen[base] else f"{base}-{seen[base]}")
        seen[base] += 1
    return found


def links(page: Path) -> list[str]:
    """Every link and image target on a page, outside code."""
    body = _INLINE_CODE.sub("", prose(text(page)))
    return _LINK.findall(body) + _HTML_SOURCE.findall(body)


@dataclass(frozen=True)
class Heading:
    level: int
    title: str
    start: int  # where the heading's line ends
    end: int  # where the next heading of any level begins


def headings(page_text: str) -> list[Heading]:
    # Fenced blocks are blanked to the same length, so that a `#` line in one is no heading
    # and the offsets stay the page's own.
    blanked = _FENCE.sub(lambda block: re.sub(r"[^\n]", " ", block.group(0)), page_text)
    found = list(_HEADING.finditer(blanked))
    return [
        Heading(
            len(match.group(1)),
            match.group(2),
            match.end(),
            found[index + 1].start() if index + 1 < len(found) else len(page_text),
        )
        for index, match in enumerate(found)
    ]


def section(page: Path, title: str) -> str:
    """The text under one heading, up to the next heading of any level."""
    page_text = text(page)
    matching = [heading for heading in headings(page_text) if heading.title == title]
    assert len(matching) == 1, f"{page.name}: {len(matching)} headings {title!r}"
    return page_text[matching[0].start : matching[0].end]


def table_rows(section_text: str) -> list[list[str]]:
    """The body rows of every Markdown table in a section, each as its stripped cells."""
    rows = []
    for line in section_text.splitlines():
        if not line.startswith("|") or re.fullmatch(r"\|[\s|:-]+\|", line):
            continue
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows
