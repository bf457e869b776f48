"""The README and docs/ tell the truth about what exists: every link resolves, every `make`
target is documented once and no other is named, the configuration table holds exactly the
declared keys, every path and module they name exists, and the README stays short."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from app.controller.doctor import layer_prerequisites, run_settings
from app.core.repo import REPO_ROOT
from app.core.roles import Layer
from app.core.run_tree import ToolIdentity
from tests.support.docs import (
    DOCS_DIR,
    README,
    all_text,
    anchors,
    links,
    pages,
    prose,
    section,
    table_rows,
    text,
)
from tests.support.engine_config import project_document

MAKEFILE = REPO_ROOT / "Makefile"
README_MAX_LINES = 250
# What one screen of a terminal shows of the README before any scrolling.
FIRST_SCREEN_LINES = 24
# The work directory the doctor sample shows: a user's own default.
SAMPLE_BASE = Path("/var/tmp/analyst-1000")


def _broken_links(page: Path) -> list[str]:
    broken = []
    for target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: — outside this repository
            continue
        path_part, _, anchor = target.partition("#")
        linked = (page.parent / path_part).resolve() if path_part else page
        if not linked.exists():
            broken.append(f"{target} (no file {linked})")
        elif anchor and (linked.suffix != ".md" or anchor not in anchors(linked)):
            broken.append(f"{target} (no heading #{anchor} in {linked.name})")
    return broken


def test_every_link_in_the_readme_and_docs_resolves() -> None:
    broken = {page.name: _broken_links(page) for page in pages()}
    assert not {name: found for name, found in broken.items() if found}


def test_the_link_check_sees_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Other\n\n## A `code` heading: yes\n", encoding="utf-8")
    page.write_text(
        "[fine](other.md#a-code-heading-yes) [gone](missing.md) [no heading](other.md#nope)\n"
        "[self](#title) ![picture](missing.svg) `[in code](nowhere.md)`\n\n# Title\n",
        encoding="utf-8",
    )
    assert _broken_links(page) == [
        f"missing.md (no file {tmp_path / 'missing.md'})",
        "other.md#nope (no heading #nope in other.md)",
        f"missing.svg (no file {tmp_path / 'missing.svg'})",
    ]


def test_the_readme_is_short_and_opens_with_the_two_commands() -> None:
    lines = text(README).splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"
    first_screen = "\n".join(lines[:FIRST_SCREEN_LINES])
    assert "make demo" in first_screen and "make test" in first_screen


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {(README.parent / target.partition("#")[0]).resolve() for target in links(README)}
    unlinked = [page.name for page in sorted(DOCS_DIR.glob("*.md")) if page not in linked]
    assert not unlinked


def _make_targets() -> dict[str, str]:
    """Each target the Makefile declares phony, with the text of its `## target:` comment."""
    makefile = MAKEFILE.read_text(encoding="utf-8")
    phony = re.search(r"^\.PHONY:(.*)$", makefile, flags=re.MULTILINE)
    assert phony
    described = dict(re.findall(r"^## ([a-z][a-z-]*): (.+)$", makefile, flags=re.MULTILINE))
    return {target: described.get(target, "") for target in phony.group(1).split()}


def test_every_make_target_is_documented_once_with_the_makefiles_words() -> None:
    targets = _make_targets()
    assert all(targets.values()), "a target without its ## comment in the Makefile"
    rows = table_rows(section(DOCS_DIR / "development.md", "Make targets"))
    documented = [(row[0], row[1]) for row in rows if row[0].startswith("`make ")]
    assert documented == [(f"`make {target}`", words) for target, words in targets.items()]


def test_every_make_command_the_docs_name_exists() -> None:
    documents = all_text()
    named = set(re.findall(r"`make ([a-z][a-z-]*)", documents))
    for block in re.findall(r"^```sh\n(.*?)^```", documents, flags=re.MULTILINE | re.DOTALL):
        named |= set(re.findall(r"^make ([a-z][a-z-]*)", block, flags=re.MULTILINE))
    assert named, "the docs name no make target at all"
    assert named <= set(_make_targets())


def test_the_configuration_table_lists_exactly_the_declared_keys() -> None:
    declared = {key for key in project_document()["config"] if ":" not in key}
    rows = table_rows(section(DOCS_DIR / "deploying.md", "Configuration"))
    documented = [key for row in rows[1:] for key in re.findall(r"`([A-Za-z]+)`", row[0])]
    assert len(documented) == len(set(documented)), "a key documented twice"
    assert set(documented) == declared


# A path of this repository, as the docs name one in backticks: no placeholder in it.
_REPO_PATH = re.compile(
    r"`((?:app|infra|tests|policies|rehearsal|bench|scripts|cases|docs|\.github|\.ci)"
    r"/[\w./-]*)`"
)


def test_every_repository_path_the_docs_name_exists() -> None:
    missing = sorted(
        {
            f"{page.name}: {path}"
            for page in pages()
            for path in _REPO_PATH.findall(prose(text(page)))
            if not (REPO_ROOT / path).exists()
        }
    )
    assert not missing


def test_every_module_the_docs_run_exists() -> None:
    modules = set(re.findall(r"python -m ([a-z_][\w.]*)", all_text()))
    assert "app.controller" in modules
    unknown = sorted(
        module
        for module in modules
        if module not in {"pytest", "venv", "pip"} and importlib.util.find_spec(module) is None
    )
    assert not unknown


def test_the_doctor_sample_shows_the_prerequisites_doctor_checks() -> None:
    """The sample's PASS lines are the bubblewrap list in its order, option count included."""
    sample = section(DOCS_DIR / "command-line.md", "`doctor`")
    shown = re.findall(r"^PASS (.+?): ", sample, flags=re.MULTILINE)
    tool = ToolIdentity(1000, 1000)
    listed = [
        *run_settings(Layer.BUBBLEWRAP, SAMPLE_BASE),
        *layer_prerequisites(Layer.BUBBLEWRAP, tool, SAMPLE_BASE),
    ]
    titles = [item.claim for item in listed]
    assert shown == titles
    assert f"all {len(titles)} prerequisites hold" in sample
