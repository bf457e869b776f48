"""report.html and the layers' comparison page, from real runs of a case whose winning supplier
has a hostile name, opened in headless Chromium: what a reviewer's browser shows.

Both runs' evidence.json and checks.json are validated against their schemas; the pages are
read from the DOM Chromium builds (--dump-dom) and photographed at 1280 px wide. The runs come
from tests/support/report_runs.py: the nono run's claims are all reworded, so every page is
found and paired by check id alone.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from app.controller.evidence_document import CHECKS_SCHEMA_VERSION, EVIDENCE_SCHEMA_VERSION
from app.core.repo import POLICIES_DIR
from app.core.roles import ROLES, Layer
from app.report.boundary_views import role_views
from app.report.layer_comparison import write_layer_comparison
from app.report.page import ReportInputs, render_report, within_run_tree
from app.tools.attacks import ATTACKS, PROBES
from tests.support import browser
from tests.support.dom import Element, find, inside, parse
from tests.support.report_runs import HOSTILE_NAME, Runs
from tests.support.schemas import problems, validate_tree

pytestmark = pytest.mark.integration

HOSTILE_TOOL_TEXT = "</text><script>document.title='owned'</script><b>bold</b>"
WIDTH = 1280


@pytest.fixture(scope="module")
def chromium() -> str:
    found = browser.available()
    if found is None:
        pytest.fail("chromium is not installed: `make test` installs it (scripts/browser.sh)")
    return found


def test_each_runs_files_match_their_schemas(page_runs: Runs) -> None:
    assert validate_tree(page_runs.base) == 4
    for layer in Layer:
        evidence = page_runs.document(layer, "evidence.json")
        checks = page_runs.document(layer, "checks.json")
        assert evidence["schema_version"] == EVIDENCE_SCHEMA_VERSION
        assert checks["schema_version"] == CHECKS_SCHEMA_VERSION == 3
        ids = [record["id"] for record in checks["checks"]]
        assert len(ids) == len(set(ids)), "an id names one check of a run"


def test_a_document_that_breaks_its_schema_is_named(page_runs: Runs) -> None:
    evidence = page_runs.document(Layer.NONO, "evidence.json")
    broken = copy.deepcopy(evidence)
    del broken["schema_version"]
    broken["attack_answers"]["roles"]["reader"]["tcp4"] = "<b>refused</b>"
    found = problems("evidence.json", broken)
    assert any("'schema_version' is a required property" in p for p in found), found
    assert any(p.startswith("attack_answers/roles/reader/tcp4:") for p in found), found
    checks = page_runs.document(Layer.BUBBLEWRAP, "checks.json")
    checks["checks"][0]["outcome"] = "PASSED"
    del checks["checks"][1]["id"]
    skipped = next(i for i, r in enumerate(checks["checks"]) if r["outcome"] == "SKIP")
    checks["checks"][skipped]["detail"] = ""
    assert sorted(p.split(":")[0] for p in problems("checks.json", checks)) == [
        "checks/0/outcome",
        "checks/1",
        f"checks/{skipped}/detail",
    ]
    checks = page_runs.document(Layer.BUBBLEWRAP, "checks.json")
    checks["schema_version"] = 1
    assert [p.split(":")[0] for p in problems("checks.json", checks)] == ["schema_version"]


def test_the_page_loads_nothing(page_runs: Runs) -> None:
    for layer in Layer:
        page = (page_runs.out(layer) / "report.html").read_text(encoding="utf-8")
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


def _run_tree(evidence: dict[str, Any]) -> str:
    return str(evidence["endpoints"]["run_tree"])


def _assert_every_check_by_id(dom: list[Element], checks: dict[str, Any], top: str) -> None:
    """Every record of checks.json, found by its id alone, with its status and what it
    observed (or why it was skipped); nothing else is shown as a check of the run."""
    shown = find(dom, "div", data_check_id="")
    assert [e.attrs["data-check-id"] for e in shown] == [r["id"] for r in checks["checks"]]
    for element, record in zip(shown, checks["checks"], strict=True):
        assert element.attrs["data-status"] == record["outcome"], record["id"]
        assert element.attrs["id"] == f"check-{record['id']}"
        assert record["outcome"] in element.text and record["id"] in element.text
        assert within_run_tree(record["detail"], top) in element.text, record["id"]
    assert top not in _text_of(shown), "the run tree is named once, not in every detail"


@pytest.mark.parametrize("layer", list(Layer))
def test_the_browser_shows_every_check_the_matrix_and_the_boundary(
    page_runs: Runs, layer: Layer, chromium: str
) -> None:
    page = page_runs.out(layer) / "report.html"
    dom = parse(browser.dump_dom(page))
    evidence = page_runs.document(layer, "evidence.json")
    checks = page_runs.document(layer, "checks.json")
    _assert_every_check_by_id(dom, checks, _run_tree(evidence))
    statuses = {record["id"]: record["outcome"] for record in checks["checks"]}
    # A cell for every attack's probe and every column, with the answer the run recorded.
    answers = evidence["attack_answers"]
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
    _assert_kinds_read_apart(cells)
    # Each attack links the check that proves it and its control's, by id.
    (matrix,) = find(dom, "table", id="attack-matrix")
    links = {e.attrs["href"] for e in find(inside(dom, matrix), "a")}
    for attack in ATTACKS:
        for check_id in (f"attacks.{attack.key}", f"attacks.{attack.key}.control"):
            assert check_id in statuses, check_id
            assert f"#check-{check_id}" in links, check_id
    # Each policy element beside the id of the check that watches it, with that check's status.
    accounting = _accounting(layer)
    elements = find(dom, "tr", data_element="")
    assert [e.attrs["data-element"] for e in elements] == [el for el, _ in accounting]
    for row, (element, watched_by) in zip(elements, accounting, strict=True):
        assert row.attrs.get("data-watched-by", "") == watched_by, element
        if watched_by in statuses:
            assert statuses[watched_by] in row.text, element
        elif watched_by:
            assert "not made in this run" in row.text, element
    # The picture names every role and each mount it got.
    svg_text = _text_of(find(dom, "text"))
    for view in role_views(evidence):
        assert f"{view.role} (" in svg_text
        # Its uid as the run read it, or which role's the run read instead.
        assert view.uid in svg_text, view.role
        status = evidence["readings"].get(f"{view.role}_status_on_host")
        if layer is Layer.BUBBLEWRAP or status:
            assert view.uid.startswith("uid 1000"), view.uid
        else:
            assert view.uid == "uid: not read (the host's /proc was read for the reader alone)"
        assert view.mounts
        for mount in view.mounts:
            assert f"{mount.target} ({mount.mode})" in svg_text, mount
    # The controller's box: the calls it made itself, and a count of those the roles' proxies
    # refused it, which the call table lists one by one.
    own = [c for c in evidence["correlation"]["calls"] if c["by"] == "controller"]
    for call in own:
        if call["reaches_upstream"]:
            assert f"{call['method']} {call['path']} \u2192 {call['status']}" in svg_text
    refused = [c for c in own if not c["reaches_upstream"]]
    assert (f"and {len(refused)} through the roles' proxies" in svg_text) == bool(refused)
    assert bool(refused) == (layer is Layer.NONO)
    # Each supplier with comparison.json's own words for why it won or lost; the winner's also
    # in the verdict.
    comparison = page_runs.document(layer, "comparison.json")
    suppliers = find(dom, "tr", data_supplier="")
    assert [row.attrs["data-supplier"] for row in suppliers] == [
        entry["id"] for entry in comparison["suppliers"]
    ]
    for row, entry in zip(suppliers, comparison["suppliers"], strict=True):
        assert entry["why"] and entry["why"] in row.text, entry["id"]
        assert ("wins" in row.text) == (entry["id"] == comparison["winner"])
    (winner,) = [e for e in comparison["suppliers"] if e["id"] == comparison["winner"]]
    (verdict,) = find(dom, "section", id="verdict")
    assert winner["why"] in _text_of(inside(dom, verdict))
    # The hostile supplier name, from the case, is text.
    _assert_hostile_text_is_text(dom, HOSTILE_NAME)
    assert HOSTILE_NAME in verdict.text


def _assert_kinds_read_apart(cells: list[Element]) -> None:
    """Each answer's kind has a glyph of its own, its first character: a success and a refusal
    read apart without colour."""
    glyphs: dict[str, set[str]] = {}
    for cell in cells:
        glyphs.setdefault(cell.attrs["data-kind"], set()).add(cell.text.lstrip()[0])
    assert glyphs["succeeds"] == {"\u2713"} and glyphs["refused"] == {"\u2717"}, glyphs
    assert all(len(shown) == 1 for shown in glyphs.values()), glyphs
    assert len({next(iter(shown)) for shown in glyphs.values()}) == len(glyphs), glyphs


def _accounting(layer: Layer) -> list[tuple[str, str]]:
    """Each role's elements in the committed accounting, with the id that watches each."""
    document = json.loads((POLICIES_DIR / layer.value / "elements.json").read_text())
    return [
        (str(entry["element"]), str(entry.get("fails_without_it", "")))
        for entries in document["roles"].values()
        for entry in entries
    ]


def test_hostile_tool_text_shows_as_text(page_runs: Runs, tmp_path: Path, chromium: str) -> None:
    """Text that came from tool processes (readings, check details) reaches the page escaped,
    in the SVG as in the tables."""
    out = page_runs.out(Layer.BUBBLEWRAP)
    evidence = page_runs.document(Layer.BUBBLEWRAP, "evidence.json")
    checks = page_runs.document(Layer.BUBBLEWRAP, "checks.json")
    evidence["policy"]["grants"]["reader"].append(
        {"target": HOSTILE_TOOL_TEXT, "mode": "read-only", "source": "/x"}
    )
    evidence["guest"]["kernel"] = HOSTILE_TOOL_TEXT
    checks["checks"][0]["detail"] = HOSTILE_TOOL_TEXT
    comparison = page_runs.document(Layer.BUBBLEWRAP, "comparison.json")
    page = tmp_path / "report.html"
    page.write_bytes(render_report(ReportInputs(evidence, checks, comparison)))
    assert (out / "report.html").read_bytes() != page.read_bytes()
    dom = parse(browser.dump_dom(page))
    _assert_hostile_text_is_text(dom, HOSTILE_TOOL_TEXT)
    assert HOSTILE_TOOL_TEXT in _text_of(find(dom, "text"))


@pytest.mark.parametrize("layer", list(Layer))
def test_the_page_is_neither_blank_nor_cut_off_at_1280_px(
    page_runs: Runs, layer: Layer, chromium: str
) -> None:
    shot = browser.screenshot(page_runs.out(layer) / "report.html", WIDTH, scale=0.25)
    assert shot.scroll_width <= WIDTH, f"the page is {shot.scroll_width} px wide"
    pixels = browser.read_png(shot.png)
    assert pixels.width == WIDTH // 4
    assert abs(pixels.height - shot.scroll_height / 4) <= 1
    inked = browser.inked_fraction(pixels)
    assert 0.05 < inked < 0.9, inked


def test_the_comparison_page_sets_each_check_and_attack_side_by_side(
    page_runs: Runs, chromium: str
) -> None:
    """The runs are worded differently (tests/support/report_runs.py): the page pairs each
    check id both layers made, shows each layer's own status and observed values, and lists
    every other id under the one layer that made it."""
    page = write_layer_comparison([page_runs.out(layer) for layer in Layer])
    assert page.parent == page_runs.base / "runs"
    dom = parse(browser.dump_dom(page))
    assert [row.attrs["data-probe"] for row in find(dom, "tr", data_probe="")] == list(PROBES)
    records = {
        layer: {r["id"]: r for r in page_runs.document(layer, "checks.json")["checks"]}
        for layer in Layer
    }
    trees = {layer: _run_tree(page_runs.document(layer, "evidence.json")) for layer in Layer}
    both = [i for i in records[Layer.BUBBLEWRAP] if i in records[Layer.NONO]]
    rows = find(dom, "tr", data_check="")
    shared = [row for row in rows if "data-only" not in row.attrs]
    assert [row.attrs["data-check"] for row in shared] == both
    differ = 0
    for row in shared:
        check_id = row.attrs["data-check"]
        cells = find(inside(dom, row), "td", data_layer="")
        assert [c.attrs["data-layer"] for c in cells] == [layer.value for layer in Layer]
        for cell, layer in zip(cells, Layer, strict=True):
            record = records[layer][check_id]
            assert cell.attrs["data-status"] == record["outcome"], (check_id, layer)
            assert within_run_tree(record["detail"], trees[layer]) in cell.text, (check_id, layer)
        details = {within_run_tree(records[la][check_id]["detail"], trees[la]) for la in Layer}
        differ += len(details) > 1
    # The same check reached by different means: the layers observed different values.
    assert differ > 0
    for layer in Layer:
        other = next(o for o in Layer if o is not layer)
        alone = [i for i in records[layer] if i not in records[other]]
        assert alone, f"{layer} proves something the other layer does not"
        listed = [r.attrs["data-check"] for r in rows if r.attrs.get("data-only") == layer.value]
        assert listed == alone
    bubblewrap, nono = (page_runs.document(layer, "evidence.json") for layer in Layer)
    (host_file,) = find(dom, "tr", data_probe="host-file")
    assert bubblewrap["attack_answers"]["roles"]["reader"]["host-file"] in host_file.text
    assert nono["attack_answers"]["roles"]["reader"]["host-file"] in host_file.text
    (attacks,) = find(dom, "table", id="attack-comparison")
    _assert_kinds_read_apart(find(inside(dom, attacks), None, data_kind=""))
    # Each attack is named once, on its first probe's row; its other probes' rows leave it out.
    named = [
        cell.text.strip()
        for cell in find(inside(dom, attacks), "td")
        if cell.attrs.get("class") == "probe"
    ]
    groups = [attack["key"] for attack in bubblewrap["attacks"]]
    assert [name for name in named if name] == groups
    assert len(named) == sum(len(attack["probes"]) for attack in bubblewrap["attacks"])
    _assert_hostile_text_is_text(dom, HOSTILE_NAME)


def test_the_hardware_frame_is_drawn_only_when_the_guest_names_an_enclave(
    page_runs: Runs, tmp_path: Path, chromium: str
) -> None:
    """A local run's guest names no enclave: no frame, and the page says why. The same run's
    documents with a Nitro guest's product name draw the frame around the pod."""
    own = parse(browser.dump_dom(page_runs.out(Layer.BUBBLEWRAP) / "report.html"))
    assert not find(own, "g", data_box="hardware")
    assert "No hardware-isolation frame is drawn" in _text_of(find(own, "p"))
    evidence = page_runs.document(Layer.BUBBLEWRAP, "evidence.json")
    evidence["guest"]["product_name"] = "c7i.enclave"
    checks = page_runs.document(Layer.BUBBLEWRAP, "checks.json")
    comparison = page_runs.document(Layer.BUBBLEWRAP, "comparison.json")
    page = tmp_path / "report.html"
    page.write_bytes(render_report(ReportInputs(evidence, checks, comparison)))
    dom = parse(browser.dump_dom(page))
    (frame,) = find(dom, "g", data_box="hardware")
    (rect,) = find(inside(dom, frame), "rect")
    (pod_group,) = find(dom, "g", data_box="pod")
    (pod,) = find(inside(dom, pod_group), "rect")
    # The frame encloses the pod.
    x, y, w, h = (float(rect.attrs[k]) for k in ("x", "y", "width", "height"))
    px, py, pw, ph = (float(pod.attrs[k]) for k in ("x", "y", "width", "height"))
    assert x < px and y < py and x + w > px + pw and y + h > py + ph
    assert "the guest names c7i.enclave" in frame.text
    assert "No hardware-isolation frame is drawn" not in _text_of(find(dom, "p"))
