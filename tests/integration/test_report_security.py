"""The page a security reviewer opens first, in headless Chromium: the security verdict leads,
with counts that agree with checks.json and the run's own count; the nono picture shows each
proxy, every write grant and the controller's control calls marked as controls; the picture
keeps its size in a 900 px window; and a run stopped by a FAIL writes a page that leads with the
failed check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.controller.cli import main
from app.core.roles import ROLES, Layer
from app.report.boundary_views import control_pairs
from tests.support import browser
from tests.support.dom import find, inside, parse
from tests.support.report_runs import Runs

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def chromium() -> str:
    found = browser.available()
    if found is None:
        pytest.fail("chromium is not installed: `make test` installs it (scripts/browser.sh)")
    return found


@pytest.mark.parametrize("layer", list(Layer))
def test_the_security_verdict_leads_with_counts_that_agree(
    page_runs: Runs, layer: Layer, chromium: str
) -> None:
    dom = parse(browser.dump_dom(page_runs.out(layer) / "report.html"))
    (security,) = find(dom, "section", id="security-verdict")
    (answer,) = find(dom, "section", id="verdict")
    assert security.index < answer.index, "the procurement answer comes before the verdict"
    checks = page_runs.document(layer, "checks.json")["checks"]
    passed = sum(1 for c in checks if c["outcome"] == "PASS")
    skipped = [c["id"] for c in checks if c["outcome"] == "SKIP"]
    text = " ".join(e.text for e in inside(dom, security))
    assert f"Every boundary held: {passed} passed, {len(skipped)} skipped, 0 failed" in text
    # The run's own count (its output, its statement) holds the check made after the page.
    assert f"count {page_runs.outcomes[layer].checks_passed} passed" in text
    assert page_runs.outcomes[layer].checks_passed == passed + 1
    rows = find(inside(dom, security), "tr", data_section="")
    by_section: dict[str, list[int]] = {}
    for check in checks:
        counts = by_section.setdefault(check["section"], [0, 0, 0])
        counts[["PASS", "SKIP", "FAIL"].index(check["outcome"])] += 1
    assert {
        row.attrs["data-section"]: [int(c.text) for c in find(inside(dom, row), "td")[1:]]
        for row in rows
    } == by_section
    listed = [e.text for e in find(inside(dom, security), "code")]
    assert all(check_id in listed for check_id in skipped)


def test_the_nono_picture_shows_proxies_write_grants_and_controls(
    page_runs: Runs, chromium: str
) -> None:
    dom = parse(browser.dump_dom(page_runs.out(Layer.NONO) / "report.html"))
    evidence = page_runs.document(Layer.NONO, "evidence.json")
    boxes = {g.attrs["data-box"]: g for g in find(dom, "g", data_box="")}
    proxied = sorted(evidence["policy"]["proxies"])
    assert sorted(name[len("proxy-") :] for name in boxes if name.startswith("proxy-")) == proxied
    top = evidence["endpoints"]["run_tree"]
    for role in ROLES:
        text = " ".join(e.text for e in inside(dom, boxes[role]))
        for granted in evidence["policy"]["profiles"][role]["filesystem"]["allow_file"]:
            shown = "<run tree>" + granted[len(top) :]
            assert f"\u21c4 rw {shown} (read-write)" in text, (role, shown)
    controller = inside(dom, boxes["controller"])
    marked = " ".join(e.text for e in find(controller, "text", **{"class": "control"}))
    ordinary = [e.text for e in find(controller, "text") if e.attrs.get("class") != "control"]
    pairs = control_pairs(evidence["correlation"]["calls"])
    controls = [
        c
        for c in evidence["correlation"]["calls"]
        if c["by"] == "controller" and c["reaches_upstream"] and (c["method"], c["path"]) in pairs
    ]
    assert controls, "the run made no control call: nothing to mark"
    for call in controls:
        assert f"control: {call['method']} {call['path']}" in marked, call
        assert not any(f"{call['method']} {call['path']} \u2192" in t for t in ordinary), call


def test_the_picture_keeps_its_size_in_a_900_px_window(page_runs: Runs, chromium: str) -> None:
    page = page_runs.out(Layer.NONO) / "report.html"
    dom = parse(browser.dump_dom(page))
    (svg,) = find(dom, "svg")
    width = svg.attrs["viewbox"].split()[2]
    assert svg.attrs["width"] == width, "the picture is scaled to the window"
    shot = browser.screenshot(page, 900, max_height=4000)
    assert shot.scroll_width <= 900, "the page is wider than a 900 px window"


def test_a_failed_run_writes_a_page_that_leads_with_the_failed_check(
    work_base: Path, chromium: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = work_base / "out"
    argv = ["run", "--layer", "bubblewrap", "--quiet", "--break", "reader:--unshare-net"]
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--workdir", str(work_base / "work"), "--out", str(out)])
    assert exited.value.code == 1
    assert (
        f"the failed run's page, check list and signed statement: {out}" in capsys.readouterr().out
    )
    dom = parse(browser.dump_dom(out / "report.html"))
    (heading,) = find(dom, "h1")
    assert heading.text.startswith("FAILED: case rfp-001 under bubblewrap")
    (verdict,) = find(dom, "section", id="verdict")
    (failed,) = find(inside(dom, verdict), "code", id="failed-check")
    assert failed.text == "bubblewrap.namespaces.net"
    checks = json.loads((out / "checks.json").read_text())["checks"]
    assert checks[-1]["id"] == "bubblewrap.namespaces.net" and checks[-1]["outcome"] == "FAIL"
    assert checks[-1]["detail"] in " ".join(e.text for e in inside(dom, verdict))
    (steps,) = find(dom, "ol", id="next-steps")
    assert verdict.index < steps.index
    assert len(find(inside(dom, steps), "li")) == 4
