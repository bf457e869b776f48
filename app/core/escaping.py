"""Text from outside the controller, as a person may be shown it: every character that would act
rather than show, written as a visible escape.

A tool's output, a file name it chose, a case, a supplier's reply: any of them may hold
newlines (a forged line after the real one), ANSI or OSC sequences (colour, a cleared screen, a
clipboard write, a window title), bidirectional controls that reorder what a line says, or
invisible characters. ``escaped`` shows each as Python's repr would (``\\n``, ``\\x1b``,
``\\u202e``), keeps every printable character as it is, and so keeps what it is given on one
line that says only what it holds. A backslash stays as it is: the escapes keep a line honest,
they are not meant to be decoded again.

The controller applies it where text enters a person's view: every check line and checks.json
record (app/core/checklog.py), every error line, note and closing line (app/controller/cli.py,
run.py), every value of the report pages, before Jinja2's HTML escaping (app/report/page.py), and
each character of the Markdown report (markdown.py). Text the controller wrote itself passes
through unchanged.
"""

from __future__ import annotations

from typing import Final

_NAMED: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def escaped_char(char: str) -> str:
    """One character as it shows: itself if it prints, else its escape."""
    if char.isprintable():
        return char
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def escaped(text: str) -> str:
    """``text`` with every character that is not printable (controls, escape sequences' ESC
    and CSI, line and paragraph separators, format and bidirectional characters, unassigned
    ones, spaces other than U+0020) shown as its escape."""
    if text.isprintable():
        return text
    return "".join(escaped_char(char) for char in text)


def escaped_lines(text: str) -> str:
    """``text`` escaped line by line, its newlines kept: for a block a page shows as lines (a
    model's analysis in a <pre>), where a newline starts a line of the block and no more;
    never for a terminal, where a newline could start a line that poses as the controller's."""
    return "\n".join(escaped(line) for line in text.split("\n"))
