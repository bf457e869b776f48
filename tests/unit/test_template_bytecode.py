"""The report page's compiled templates: used only while their template is unchanged, written
only when allowed, and a folder that cannot be written costs a compile, never the page."""

from __future__ import annotations

import stat
from pathlib import Path

import jinja2

from app.report.template_bytecode import TemplateBytecode


def _page(templates: Path, cache: TemplateBytecode) -> str:
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(templates), bytecode_cache=cache
    )
    return environment.get_template("page.j2").render(who="reader")


def test_a_changed_template_is_compiled_again_never_taken_from_its_old_bytecode(
    tmp_path: Path,
) -> None:
    templates, kept = tmp_path / "templates", tmp_path / "templates" / "__pycache__"
    templates.mkdir()
    (templates / "page.j2").write_text("first {{ who }}", encoding="utf-8")
    assert _page(templates, TemplateBytecode(kept, write=True)) == "first reader"
    (written,) = kept.iterdir()
    # Readable by every uid, as the templates are: the image is built as root.
    assert stat.S_IMODE(written.stat().st_mode) == 0o644
    before = written.read_bytes()
    (templates / "page.j2").write_text("second {{ who }}", encoding="utf-8")
    assert _page(templates, TemplateBytecode(kept, write=True)) == "second reader"
    assert written.read_bytes() != before


def test_nothing_is_written_when_writing_is_off(tmp_path: Path) -> None:
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "page.j2").write_text("{{ who }}", encoding="utf-8")
    assert _page(templates, TemplateBytecode(templates / "__pycache__", write=False)) == "reader"
    assert not (templates / "__pycache__").exists()


def test_a_folder_that_cannot_be_made_leaves_the_page_compiled_as_before(tmp_path: Path) -> None:
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "page.j2").write_text("{{ who }}", encoding="utf-8")
    # A file where the folder would be: it cannot be made, by root either.
    (templates / "__pycache__").write_bytes(b"")
    assert _page(templates, TemplateBytecode(templates / "__pycache__", write=True)) == "reader"
    assert (templates / "__pycache__").read_bytes() == b""
