"""report.html and the layers' comparison page, from real runs of a case whose winning supplier
has a hostile name, opened in headless Chromium: what a reviewer's browser shows.

Both runs' evidence.json and checks.json are validated against their schemas; the pages are
read from the DOM Chromium builds (--dump-dom) and photographed at 1280 px wide.
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from app.controller.boundary_picture import role_views
from app.controller.layer_comparison import write_layer_comparison
from app.controller.report_page import ReportInputs, render_report
from app.controller.run import RunOptions, RunOutcome, run_case
from app.core.repo import SAMPLE_CASE
from app.core.roles import ROLES, Layer
from app.tools.attacks import PROBES
from tests.support import browser
from tests.support.dom import Element, find, parse
from tests.support.schemas import problems, validate_tree

pytestmark = pytest.mark.integration

HOSTILE_NAME = (
    "<script>document.title='owned'</script><img src=x onerror=\"document.title='owned'\">"
    'Northstar & "Sons" </td></table>'
)
HOSTILE_TOOL_TEXT = "</text><script>document.title='owned'</script><b>bold</b>"
WIDTH = 1280


@dataclass(frozen=True)
class Runs:
    base: Path
    outcomes: dict[Layer, RunOutcome]

    def out(self, layer: Layer) -> Path:
        return self.outcomes[layer].out_dir

    def document(self, layer: Layer, name: str) -> Any:
        return json.loads((self.out(layer) / name).read_text(encoding="utf-8"))


def _hostile_case(base: Path) -> Path:
    case = base / "case"
    shutil.copytree(SAMPLE_CASE, case)
    proposal = case / "proposals" / "northstar.json"
    doc = json.loads(proposal.read_text())
    doc["name"] = HOSTILE_NAME
    data = json.dumps(doc).encode()
    proposal.write_bytes(data)
    case_doc = json.loads((case / "case.json").read_text())
    for entry in case_doc["suppliers"]:
        if entry["id"] == "northstar":
            entry["name"] = HOSTILE_NAME
            entry["sha256"] = hashlib.sha256(data).hexdigest()
    (case / "case.json").write_text(json.dumps(case_doc))
    return case


@pytest.fixture(scope="module")
def runs() -> Iterator[Runs]:
    base = Path(tempfile.mkdtemp(prefix="analyst-report-", dir="/var/tmp"))
    base.chmod(0o755)
    try:
        case = _hostile_case(base)
        outcomes = {}
        for layer in Layer:
            options = RunOptions(
                layer=layer,
                case_dir=case,
                out_dir=base / "runs" / layer.value / "out",
                work_base=base / "work",
                workdir_layers=tuple(Layer),
            )
            (base / "runs" / layer.value).mkdir(parents=True)
            outcomes[layer] = run_case(options, stream=io.StringIO())
        yield Runs(base, outcomes)
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def chromium() -> str:
    found = browser.available()
    if found is None:
        pytest.fail("chromium is not installed: `make test` installs it (scripts/browser.sh)")
    return found


def test_each_runs_files_match_their_schemas(runs: Runs) -> None:
    assert validate_tree(runs.base) == 4
    for layer in Layer:
        assert runs.document(layer, "evidence.json")["schema_version"] == 1
        assert runs.document(layer, "checks.json")["schema_version"] == 1


def test_a_document_that_breaks_its_schema_is_named(runs: Runs) -> None:
    evidence = runs.document(Layer.NONO, "evidence.json")
    broken = copy.deepcopy(evidence)
    del broken["schema_version"]
    broken["attack_answers"]["roles"]["reader"]["tcp4"] = "<b>refused</b>"
    found = problems("evidence.json", broken)
    assert any("'schema_version' is a required property" in p for p in found), found
    assert any(p.startswith("attack_answers/roles/reader/tcp4:") for p in found), found
    checks = runs.document(Layer.BUBBLEWRAP, "checks.json")
    checks["checks"][0]["outcome"] = "PASSED"
    assert [p.split(":")[0] for p in problems("checks.json", checks)] == ["checks/0/outcome"]


def test_the_page_loads_nothing(runs: Runs) -> None:
    for layer in Layer:
        page = (runs.out(layer) / "report.html").read_text(encoding="utf-8")
        elements = parse(page)
        assert not [e for e in elements if e.tag in ("script", "img", "link", "iframe")]
        assert not [e for e in elements if "src" in e.attrs]
        assert not [e for e in elements if not e.attrs.get("href", "#").startswith("#")]
        (policy,) = find(elements, "meta", http_equiv="Content-Security-Policy")
        assert policy.attrs["content"].startswith("default-src 'none';")
        assert "&lt;script&gt;document.title=" in page


def _text_of(elements: list[Element]) -> str:
    return " ".join(e.text for e in elements)


def _assert_hostile_text_is_text(dom: list[Element], hostile: str) -> None:
    assert not find(dom, "script") and not find(dom, "img")
    assert not [e for e in dom if e.tag == "b" and e.text == "bold"]
    title = find(dom, "title")
    assert title and "owned" not in title[0].text
    assert hostile in _text_of(dom)


@pytest.mark.parametrize("layer", list(Layer))
def test_the_browser_shows_every_check_the_matrix_and_the_boundary(
    runs: Runs, layer: Layer, chromium: str
) -> None:
    page = runs.out(layer) / "report.html"
    dom = parse(browser.dump_dom(page))
    # Every check of checks.json, by its id, with its status.
    for index, record in enumerate(runs.document(layer, "checks.json")["checks"], start=1):
        check_id = record.get("id") or f"#{index}"
        shown = find(dom, "div", data_check_id=check_id)
        assert len(shown) == 1, check_id
        assert shown[0].attrs["data-status"] == record["outcome"]
        assert record["outcome"] in shown[0].text and check_id in shown[0].text
    # A cell for every attack's probe and every column, with the answer the run recorded.
    answers = runs.document(layer, "evidence.json")["attack_answers"]
    rows = find(dom, "tr", data_probe="")
    assert [row.attrs["data-probe"] for row in rows] == list(PROBES)
    cells = find(dom, "td", data_column="")
    for probe in PROBES:
        expected = {"control": answers["control"][probe]} | {
            role: answers["roles"][role][probe] for role in ROLES
        }
        index = list(PROBES).index(probe)
        row_cells = cells[index * 4 : index * 4 + 4]
        assert {c.attrs["data-column"]: c.text[1:] for c in row_cells} == expected, probe
    # The picture names every role and each mount it got.
    svg_text = _text_of(find(dom, "text"))
    for view in role_views(runs.document(layer, "evidence.json")):
        assert f"{view.role} (" in svg_text
        assert view.mounts
        for mount in view.mounts:
            assert f"{mount.target} ({mount.mode})" in svg_text, mount
    # The hostile supplier name, from the case, is text.
    _assert_hostile_text_is_text(dom, HOSTILE_NAME)
    assert find(dom, "section", id="verdict") and HOSTILE_NAME in _text_of(
        find(dom, "section", id="verdict")
    )


def test_hostile_tool_text_shows_as_text(runs: Runs, tmp_path: Path, chromium: str) -> None:
    """Text that came from tool processes (readings, check details) reaches the page escaped,
    in the SVG as in the tables."""
    out = runs.out(Layer.BUBBLEWRAP)
    evidence = runs.document(Layer.BUBBLEWRAP, "evidence.json")
    checks = runs.document(Layer.BUBBLEWRAP, "checks.json")
    evidence["policy"]["bwrap_argument_lists"]["reader"] += ["--ro-bind", "/x", HOSTILE_TOOL_TEXT]
    evidence["guest"]["kernel"] = HOSTILE_TOOL_TEXT
    checks["checks"][0]["detail"] = HOSTILE_TOOL_TEXT
    comparison = runs.document(Layer.BUBBLEWRAP, "comparison.json")
    page = tmp_path / "report.html"
    page.write_bytes(render_report(ReportInputs(evidence, checks, comparison)))
    assert (out / "report.html").read_bytes() != page.read_bytes()
    dom = parse(browser.dump_dom(page))
    _assert_hostile_text_is_text(dom, HOSTILE_TOOL_TEXT)
    assert HOSTILE_TOOL_TEXT in _text_of(find(dom, "text"))


@pytest.mark.parametrize("layer", list(Layer))
def test_the_page_is_neither_blank_nor_cut_off_at_1280_px(
    runs: Runs, layer: Layer, chromium: str
) -> None:
    shot = browser.screenshot(runs.out(layer) / "report.html", WIDTH, scale=0.25)
    assert shot.scroll_width <= WIDTH, f"the page is {shot.scroll_width} px wide"
    pixels = browser.read_png(shot.png)
    assert pixels.width == WIDTH // 4
    assert abs(pixels.height - shot.scroll_height / 4) <= 1
    inked = browser.inked_fraction(pixels)
    assert 0.05 < inked < 0.9, inked


def test_the_comparison_page_sets_each_check_and_attack_side_by_side(
    runs: Runs, chromium: str
) -> None:
    page = write_layer_comparison([runs.out(layer) for layer in Layer])
    assert page.parent == runs.base / "runs"
    dom = parse(browser.dump_dom(page))
    assert [row.attrs["data-probe"] for row in find(dom, "tr", data_probe="")] == list(PROBES)
    shown = {row.attrs["data-check"] for row in find(dom, "tr", data_check="")}
    for layer in Layer:
        for index, record in enumerate(runs.document(layer, "checks.json")["checks"], start=1):
            claim = record["claim"]
            if record["outcome"] == "SKIP":
                claim = claim.rpartition(" \u2014 ")[0]
            assert (record.get("id") or claim) in shown, index
    bubblewrap, nono = (runs.document(layer, "evidence.json") for layer in Layer)
    (host_file,) = find(dom, "tr", data_probe="host-file")
    assert bubblewrap["attack_answers"]["roles"]["reader"]["host-file"] in host_file.text
    assert nono["attack_answers"]["roles"]["reader"]["host-file"] in host_file.text
    _assert_hostile_text_is_text(dom, HOSTILE_NAME)
