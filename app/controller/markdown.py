"""Text the controller did not write, put in a Markdown report so that it shows as exactly its
characters and can pose as nothing else.

The report holds names and a title from the case, and the model's analysis, which may repeat
anything from the case. A short text is escaped inline: line breaks become spaces, control and
bidirectional characters are shown as escapes, and every ASCII punctuation mark gets a backslash
(CommonMark renders any escaped punctuation literally), so no emphasis, link, image, HTML, entity,
heading, list or table can form. A longer text goes in a fenced block, which Markdown shows
verbatim, behind a fence longer than any run of backticks inside it.
"""

from __future__ import annotations

import re
import string
from typing import Final

from app.core.escaping import escaped_char

_PUNCTUATION: Final = frozenset(string.punctuation)
_LINE_BREAKS: Final = frozenset("\n\r\x0b\x0c\x85\u2028\u2029")
_BACKTICKS: Final = re.compile(r"`+")


def inline(text: str) -> str:
    """``text`` as one line of literal Markdown text."""
    out = []
    for char in text:
        if char in _LINE_BREAKS:
            out.append(" ")
        elif char in _PUNCTUATION:
            out.append("\\" + char)
        else:
            out.append(escaped_char(char))
    return "".join(out)


def verbatim(text: str) -> str:
    """``text`` as a fenced block that Markdown shows as it is, line by line."""
    lines = []
    for line in text.replace("\r\n", "\n").split("\n"):
        lines.append("".join(" " if c in _LINE_BREAKS else escaped_char(c) for c in line))
    body = "\n".join(lines).strip("\n")
    longest = max((len(run) for run in _BACKTICKS.findall(body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{body}\n{fence}\n"
