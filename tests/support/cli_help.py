"""Every command line of the project, its `--help` as a user sees it, and where the docs describe
it: each subcommand and option with its description, as rows of the docs' tables.

    python -m tests.support.cli_help    # the rows each docs section must hold
"""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from app.core.repo import REPO_ROOT
from tests.support.docs import DOCS_DIR, section

# argparse wraps to the terminal's width; this wide, each description is one line.
_WIDE = "1000"


@dataclass(frozen=True)
class Command:
    """One command line: the module and subcommands to run, and its section in the docs."""

    argv: tuple[str, ...]
    page: str
    heading: str

    @property
    def name(self) -> str:
        return " ".join(self.argv)


def _controller(*sub: str, heading: str = "") -> Command:
    return Command(("app.controller", *sub), "command-line.md", heading or f"`{' '.join(sub)}`")


def _module(*argv: str, page: str) -> Command:
    return Command(argv, page, f"`python -m {' '.join(argv)}`")


COMMANDS = (
    _controller(heading="Command line and exit codes"),
    _controller("run"),
    _controller("demo"),
    _controller("case"),
    _controller("case", "new"),
    _controller("case", "check"),
    _controller("doctor"),
    _controller("nitro-evidence"),
    _controller("guest-readings"),
    _controller("verify"),
    Command(
        ("app.supplier_api",), "command-line.md", "The supplier API: `python -m app.supplier_api`"
    ),
    _module("app.supplier_api", "serve", page="command-line.md"),
    _module("rehearsal", page="rehearsal.md"),
    _module("rehearsal", "run", page="rehearsal.md"),
    _module("rehearsal", "all", page="rehearsal.md"),
    _module("bench", page="performance.md"),
    _module("infra.render_manifests", page="deploying.md"),
    _module("app.tools.bubblewrap.render", page="development.md"),
    _module("app.tools.nono.render", page="development.md"),
    _module("app.core.case_schema", page="development.md"),
)


@dataclass(frozen=True)
class Help:
    """What `--help` lists: the description, the subcommands and the options (positional ones
    included), each with its description; -h itself left out."""

    description: str
    subcommands: list[tuple[str, str]] = field(default_factory=list)
    options: list[tuple[str, str]] = field(default_factory=list)


def parse_help(text: str) -> Help:
    lines = text.splitlines()
    sections = [index for index, line in enumerate(lines) if re.fullmatch(r"\S.*:", line)]
    first = sections[0] if sections else len(lines)
    description = " ".join(line for line in lines[1:first] if line and not line.startswith(" "))
    found = Help(description)
    for index, line in enumerate(lines):
        entry = re.fullmatch(r"( {2}| {4})(\S.*?)(?: {2,}(\S.*))?", line)
        if not entry or index < first:
            continue
        indent, invocation, words = entry.groups()
        if words is None and index + 1 < len(lines) and lines[index + 1].startswith(" " * 6):
            words = lines[index + 1].strip()
        if invocation.startswith("{") or invocation == "-h, --help":
            continue
        target = found.subcommands if len(indent) == 4 else found.options
        target.append((invocation, (words or "").replace(f"{REPO_ROOT}/", "")))
    return found


def help_of(command: Command) -> Help:
    done = subprocess.run(
        [sys.executable, "-m", *command.argv, "--help"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env=dict(os.environ, COLUMNS=_WIDE),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"{command.name} --help: {done.stderr}"
    return parse_help(done.stdout)


def every_help() -> dict[Command, Help]:
    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(zip(COMMANDS, pool.map(help_of, COMMANDS), strict=True))


def _cells(line: str) -> tuple[str, str]:
    """A table row's first two cells as text: the first one's code span (a link around it
    dropped), the second with Markdown's entities read back (the docs write <id> as &lt;id&gt;,
    which Markdown would otherwise take for a tag)."""
    first, second = (cell.strip() for cell in line.strip().strip("|").split("|")[:2])
    code = re.fullmatch(r"\[?`([^`]+)`\]?(?:\(#[\w-]+\))?", first)
    assert code, f"the first cell of {line!r} is not one code span"
    assert "<" not in second, f"{line!r}: a raw < in a cell is read as a tag"
    return html.unescape(code.group(1)), html.unescape(second)


def documented(command: Command) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The rows of the section's "subcommand" and "option" tables, each as (name, words)."""
    text = section(DOCS_DIR / command.page, command.heading)
    subcommands: list[tuple[str, str]] = []
    options: list[tuple[str, str]] = []
    current: list[tuple[str, str]] | None = None
    for line in text.splitlines():
        if line.startswith("| subcommand |"):
            current = subcommands
        elif line.startswith("| option |"):
            current = options
        elif not line.startswith("|"):
            current = None
        elif current is not None and not re.fullmatch(r"\|[\s|:-]+\|", line):
            current.append(_cells(line))
    return subcommands, options


def rows(found: Help) -> list[str]:
    """The rows a section's tables must hold, as Markdown, for whoever updates the docs."""
    return [
        f"| `{name}` | {html.escape(words, quote=False)} |"
        for name, words in [*found.subcommands, *found.options]
    ]


if __name__ == "__main__":
    for each, found in every_help().items():
        print(f"== {each.name} ({each.page}: {each.heading})")
        print("\n".join(rows(found)))
