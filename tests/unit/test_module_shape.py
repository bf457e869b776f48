"""The shape of the code a reader opens: no module of the product over 400 lines, and no two
modules anywhere whose names differ by one letter (``control.py`` beside ``controls.py``),
which a reader takes for one another.

The line limit holds the product's code (app/, infra/, bench/, rehearsal/, policies/,
scripts/); the tests' own modules are held only to the naming rule. The boundary a reviewer
reads (docs/development.md) is counted as the document states it.
"""

from __future__ import annotations

import itertools
import re
import subprocess
from pathlib import Path
from typing import Final

from app.core.repo import REPO_ROOT

MAX_LINES: Final = 400
PRODUCT: Final = ("app/", "infra/", "bench/", "rehearsal/", "policies/", "scripts/")


def _python_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [REPO_ROOT / name for name in listed if (REPO_ROOT / name).is_file()]


def one_letter_apart(first: str, second: str) -> bool:
    """Whether one name becomes the other by changing, adding or removing one letter."""
    if first == second or abs(len(first) - len(second)) > 1:
        return False
    if len(first) == len(second):
        return sum(a != b for a, b in zip(first, second, strict=True)) == 1
    shorter, longer = sorted((first, second), key=len)
    return any(longer[:i] + longer[i + 1 :] == shorter for i in range(len(longer)))


def test_one_letter_apart() -> None:
    assert one_letter_apart("control", "controls")
    assert one_letter_apart("launcher", "launchers")
    assert one_letter_apart("guest", "quest")
    assert not one_letter_apart("policy", "policy")
    assert not one_letter_apart("run", "run_plan")
    assert not one_letter_apart("draft", "drafts_")  # two letters


def test_no_product_module_is_over_the_line_limit() -> None:
    too_long = {
        str(path.relative_to(REPO_ROOT)): count
        for path in _python_files()
        if str(path.relative_to(REPO_ROOT)).startswith(PRODUCT)
        and (count := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not too_long, f"split these along a seam of their own (over {MAX_LINES} lines)"


def test_no_two_module_names_differ_by_one_letter() -> None:
    stems: dict[str, list[str]] = {}
    for path in _python_files():
        stems.setdefault(path.stem, []).append(str(path.relative_to(REPO_ROOT)))
    pairs = [
        (stems[first], stems[second])
        for first, second in itertools.combinations(sorted(stems), 2)
        if one_letter_apart(first, second)
    ]
    assert not pairs


def test_the_boundary_is_the_size_the_docs_say() -> None:
    text = (REPO_ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    section = text.split("## The boundary a reviewer reads", 1)[1].split("\n## ", 1)[0]
    modules = re.findall(r"`((?:app)/[\w/]+\.py)`", section)
    assert len(modules) == len(set(modules)) > 20
    counted = sum(
        len((REPO_ROOT / module).read_text(encoding="utf-8").splitlines()) for module in modules
    )
    stated = re.search(r"^([\d,]+) lines of Python in all", section, re.MULTILINE)
    assert stated, "the section states its total"
    assert int(stated.group(1).replace(",", "")) == counted
